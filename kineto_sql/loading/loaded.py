"""What a load produced, as one typed object: the file, the loader's report, the trace's top-level
metadata and the rank. `open_trace` attaches it to the processor (`tp.loaded`) once."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kineto_sql.loading.report import IngestReport


@dataclass(frozen=True)
class LoadedTrace:
    path: Path
    report: IngestReport
    metadata: dict
    rank: int | None
