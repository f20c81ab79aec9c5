"""The ingest report: every change the loader made to the input before the engine saw it, and why."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fix:
    """One kind of change, how many events it touched, and a few examples a person can look up."""

    kind: str
    count: int
    why: str
    examples: tuple[str, ...] = ()


@dataclass
class IngestReport:
    source: str
    input_bytes: int
    events_by_phase: dict[str, int] = field(default_factory=dict)
    fixes: list[Fix] = field(default_factory=list)
    # ns added back to every timestamp to recover the file's own clock (0 when not rebased).
    ts_offset_ns: int = 0
    rewritten: bool = False

    @property
    def expected_slices(self) -> int:
        """Every X and every i/I event of the input must become exactly one slice."""
        return sum(self.events_by_phase.get(ph, 0) for ph in ("X", "i", "I"))

    @property
    def expected_flow_events(self) -> int:
        return sum(self.events_by_phase.get(ph, 0) for ph in ("s", "t", "f"))

    def add(self, kind: str, count: int, why: str, examples=()) -> None:
        if count:
            self.fixes.append(Fix(kind, count, why, tuple(str(e) for e in list(examples)[:5])))

    def fix_count(self, kind: str) -> int:
        return sum(f.count for f in self.fixes if f.kind == kind)
