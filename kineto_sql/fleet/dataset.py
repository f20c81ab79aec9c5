"""A fleet run as a Parquet dataset: one folder per table, one file per rank.

    DIR/<table>/rank=<N>.parquet     e.g. DIR/hta_steps/rank=7.parquet, DIR/ledger/rank=7.parquet
    DIR/failures.parquet             the rank files the last run could not read, with their error

Every row carries rank, trace_path, content_hash (sha256 of the file as stored) and kineto_sql_version, so
a table read alone (DuckDB: `SELECT * FROM 'DIR/ledger/*.parquet'`) or joined with another run's says
where it came from. A rank's `load` file is written last (after its other tables, each by rename), so a
rank with a load row is complete: resume skips a path whose content hash, version and parts are already
there, and rereads a file that changed (its old files are replaced).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from kineto_sql import __version__

LOAD = "load"
FAILURES = "failures.parquet"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def is_dataset(directory) -> bool:
    return (Path(directory) / LOAD).is_dir()


def label(rank: int | None, path: str) -> str:
    if rank is not None:
        return f"rank={int(rank)}"
    return "file=" + _UNSAFE.sub("_", Path(str(path)).name)


def _write(table, target: Path) -> None:
    import pyarrow.parquet as pq

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    except OSError as exc:  # a full disk: the rank's earlier files stay whole, its `load` row is never written
        tmp.unlink(missing_ok=True)
        from kineto_sql.outputs import write_error

        raise write_error(target, exc) from None


def write_rank(directory, output) -> None:
    """One rank's tables; `load` last, so that a rank is in the dataset only once all of it is."""
    name = label(output.rank, output.path) + ".parquet"
    root = Path(directory)
    for table_name, table in output.tables.items():
        if table_name != LOAD:
            _write(table, root / table_name / name)
    _write(output.tables[LOAD], root / LOAD / name)


def remove_rank(directory, file_label: str) -> None:
    """Every table file of one rank (a rank whose trace changed is rewritten from scratch)."""
    root = Path(directory)
    for sub in root.iterdir() if root.is_dir() else ():
        target = sub / f"{file_label}.parquet"
        if sub.is_dir() and target.exists():
            target.unlink()


def done(directory) -> dict[str, dict]:
    """What the dataset holds, by trace path: content_hash, label, parts, version."""
    import pyarrow.parquet as pq

    out = {}
    for file in sorted((Path(directory) / LOAD).glob("*.parquet")):
        rows = pq.read_table(file, columns=["trace_path", "content_hash", "kineto_sql_version", "parts"]).to_pylist()
        for row in rows:
            out[row["trace_path"]] = {"content_hash": row["content_hash"], "label": file.stem,
                                      "version": row["kineto_sql_version"], "parts": set(row["parts"].split(","))}
    return out


def resumable(entry: dict | None, parts) -> str | None:
    """The content hash a task may skip on: the dataset has this path, from this version, with these parts."""
    if not entry or entry["version"] != __version__ or not set(parts) <= entry["parts"]:
        return None
    return entry["content_hash"]


def write_failures(directory, failures) -> None:
    import pyarrow as pa

    target = Path(directory) / FAILURES
    if not failures:
        target.unlink(missing_ok=True)
        return
    _write(pa.table({"trace_path": [f.path for f in failures], "error": [f.sentence() for f in failures],
                     "kineto_sql_version": [__version__] * len(failures)}), target)


def read_failures(directory) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    target = Path(directory) / FAILURES
    if not target.exists():
        return []
    return [(r["trace_path"], r["error"]) for r in pq.read_table(target).to_pylist()]


def table_files(directory) -> dict[str, list[str]]:
    """Parquet files per table name."""
    root = Path(directory)
    return {sub.name: sorted(str(p) for p in sub.glob("*.parquet"))
            for sub in sorted(root.iterdir()) if sub.is_dir() and any(sub.glob("*.parquet"))}
