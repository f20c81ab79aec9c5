"""Named diff baselines: one side of a diff kept as a small JSON file, so CI compares a new capture
against it without keeping the trace.

A baseline holds, for each capture of the side (several captures keep run-to-run variation in the
interval), its summary (per iteration window: width, ledger buckets, cold flag; device model, iteration
source, profiler settings, capture problems: kineto_sql.diff.verdict.SideSummary) and the reading.diff_side rows (per step: window quantities, buckets, time per op and kernel by call path), which
the op and kernel rows of the diff are made of. No event of the trace is kept. The file is
`<dir>/<NAME>.json`, `dir` being `.kineto-sql/baselines` under the working directory unless given.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from kineto_sql.errors import KinetoSqlError

DEFAULT_DIR = Path(".kineto-sql") / "baselines"
FORMAT = 2  # 2: one entry per capture (format 1, one capture, still loads)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_COLUMNS = ("step", "kind", "key", "path", "count", "dur")


def baseline_path(name: str, directory: Path | None = None) -> Path:
    if not _NAME.fullmatch(name):
        raise KinetoSqlError(f"baseline name {name!r} is not usable: use letters, digits, '_', '-' and '.', "
                             "starting with a letter, digit or '_' (at most 100 characters).")
    return Path(directory or DEFAULT_DIR) / f"{name}.json"


def save(side, name: str, directory: Path | None = None) -> Path:
    """Writes `side` (a trace_diff.Side with its summary, or a list of them: the side's captures) as baseline
    `name`, one entry per capture; returns the file."""
    captures = list(side) if isinstance(side, (list, tuple)) else [side]
    for capture in captures:
        if capture.summary is None:
            raise KinetoSqlError(f"{capture.path} has no window summary to keep as a baseline.")
    path = baseline_path(name, directory)
    body = {
        "kineto_sql_baseline": FORMAT,
        "name": name,
        "captures": [{
            "trace": str(c.path),
            "summary": c.summary.to_json(),
            "rows": {"columns": list(_COLUMNS),
                     "data": [[_plain(v) for v in r] for r in c.rows[list(_COLUMNS)].itertuples(index=False)]},
        } for c in captures],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(body, separators=(",", ":")) + "\n")
        tmp.replace(path)
    except OSError as e:
        raise KinetoSqlError(f"baseline {name!r} could not be written to {path}: {e.strerror or e}.") from None
    return path


def load(name: str, directory: Path | None = None) -> list:
    """The trace_diff.Side of each capture stored as baseline `name` (a format-1 file holds one)."""
    path = baseline_path(name, directory)
    if not path.is_file():
        raise KinetoSqlError(f"no baseline {name!r} at {path}: record one with "
                             f"`kineto-sql diff TRACE --baseline {name} --update-baseline`.")
    try:
        body = json.loads(path.read_text())
        version = body.get("kineto_sql_baseline")
        if version == 1:
            entries = [{"trace": body.get("trace", "?"), "summary": body["summary"], "rows": body["rows"]}]
        elif version == FORMAT:
            entries = body["captures"]
            if not isinstance(entries, list) or not entries:
                raise ValueError("no capture")
        else:
            raise ValueError(f"format {version!r}, expected {FORMAT}")
        return [_capture(name, entry) for entry in entries]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise KinetoSqlError(f"baseline {path} is not a kineto-sql baseline ({e}); record it again with "
                             "--update-baseline.") from None


def _capture(name: str, entry: dict):
    from kineto_sql.diff.traces import Side
    from kineto_sql.diff.verdict import SideSummary

    summary = SideSummary.from_json(entry["summary"])
    rows = pd.DataFrame(entry["rows"]["data"], columns=entry["rows"]["columns"])
    if tuple(rows.columns) != _COLUMNS:
        raise ValueError("unexpected row columns")
    rows["step"] = rows["step"].astype("Int64")
    return Side(f"baseline {name} ({entry.get('trace', '?')})", rows, summary)


def _plain(value):
    """JSON-able scalars: pandas NA -> null, numpy numbers -> int / float."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value
