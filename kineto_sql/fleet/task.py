"""The per-rank task: a trace path (or fsspec URL) in, small Arrow tables out. Never the trace itself.

A task is pure: it reads one file, loads it into its own engine, runs the queries its `parts` ask for and
returns a RankOutput whose tables carry the rank, the trace path, the file's content hash and the
kineto-sql version on every row, so that a table from one rank, or a Parquet file of a dataset, says where
it came from. A task given the content hash a dataset already holds for its path stops after hashing and
returns `skipped` (resume without reloading).

Parts (what a caller pays for):
- `hta`: HTA's per-rank analyses (kineto_sql.fleet.tables.ANALYSES): hta_temporal, hta_overlap, hta_idle,
  hta_kernel_types, hta_launches, hta_steps, and hta_balance (reading.rank_balance: own work vs collective
  wait from the step ledger), and op_shapes (reading.op_shapes: the ops by input shapes per step, which tell
  a slow machine from more work), and balance_steps (reading.rank_balance_steps: own work per steady step, which
  rank is slowest step by step); the straggler reading needs these.
- `collectives`: reading.collective_calls, one row per call with its start on the job's clock (start_ns).
- `diagnose`: the full diagnosis (kept as an object for `diagnose RANK_DIR`), as tables: ledger
  (reading.step_ledger), steps (reading.step_table), findings (one row per finding), verdict.
The `load` table (one row: what the loader did, timings, parts done) is always there.
- `graph` (in memory only, never a table: `diagnose RANK_DIR`, `ranks --critical-path`): the rank's dependency
  graph, collective calls and ledger bucket pieces (kineto_sql.whatif.ranks.RankGraph), read on this load
  (after `diagnose`, the graph its predictions read), for the job's critical path across ranks.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import orjson

from kineto_sql import __version__

PARTS = ("hta", "collectives", "diagnose")
DEFAULT_PARTS = PARTS
GRAPH = "graph"
META = ("rank", "trace_path", "content_hash", "kineto_sql_version")
CHUNK = 1 << 20
# Columns the cross-rank SQL reads: a query that does not apply to a rank (no GPU: no temporal breakdown)
# returns no columns at all, and its table still needs them (empty) for the union across ranks.
COLUMNS = {
    "hta_temporal": ("idle_us", "compute_us", "non_compute_us", "span_us"),
    "hta_overlap": ("comm_us", "compute_us", "overlap_us", "overlap_pct"),
    "hta_steps": ("step", "start_us", "dur_us"),
    "hta_balance": ("windows", "step_us", "own_work_us", "comm_wait_us", "wait_to_work"),
    "op_shapes": ("name", "input_dims", "calls", "steps", "calls_per_step"),
    "balance_steps": ("step", "step_us", "own_work_us", "comm_wait_us"),
    "collectives": ("step", "pg", "collective", "seq", "ts", "dur", "start_ns", "in_bytes", "out_bytes", "group_size",
                    "in_split", "link_gbps"),
}


@dataclass
class RankOutput:
    """What one task brings back: small tables (pyarrow.Table by name), never the trace."""

    path: str
    content_hash: str
    rank: int | None = None
    tables: dict = field(default_factory=dict)
    diagnosis: object | None = None  # a TraceDiagnosis, when asked for (diagnose RANK_DIR renders it)
    skipped: bool = False
    graph: object | None = None  # the `graph` part: a kineto_sql.whatif.ranks.RankGraph, or None


def is_url(source: str) -> bool:
    return "://" in str(source)


def content_hash(source: str) -> str:
    """sha256 of the file's stored bytes, read in 1 MiB chunks (memory stays flat whatever the size)."""
    digest = hashlib.sha256()
    with _open(source) as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _open(source: str):
    if is_url(source):
        import fsspec

        return fsspec.open(source, "rb").open()
    return open(source, "rb")


def _local_copy(source: str, directory: str) -> tuple[str, str]:
    """An fsspec URL copied to a local file (the loader reads files), hashed on the way."""
    local = os.path.join(directory, PurePosixPath(source.split("://", 1)[1]).name or "trace.json")
    digest = hashlib.sha256()
    with _open(source) as src, open(local, "wb") as dst:
        for chunk in iter(lambda: src.read(CHUNK), b""):
            digest.update(chunk)
            dst.write(chunk)
    return local, digest.hexdigest()


def rank_task(source: str, rank_from_name: int | None = None, parts=DEFAULT_PARTS, engine=None,
              done_hash: str | None = None, keep_diagnosis: bool = False,
              fallback_rank: int | None = None, hta_compat: bool = False) -> RankOutput:
    """One rank file in, its tables out. Runs in a worker process (local pool or a dask worker).
    `hta_compat`: the hta part with HTA 0.5.0's definitions (`kineto-sql ranks --hta-compat`)."""
    from kineto_sql.errors import TraceInputError

    source = str(source)
    unknown = [p for p in parts if p not in PARTS + (GRAPH,)]
    if unknown:
        raise ValueError(f"unknown task parts {unknown}; choose from {', '.join(PARTS)}")
    scratch = tempfile.mkdtemp(prefix="kineto-sql-rank-") if is_url(source) else None
    try:
        if scratch:
            try:
                local, digest = _local_copy(source, scratch)
            except FileNotFoundError:
                raise TraceInputError(f"{source}: no such file; check the URL") from None
            except OSError as exc:
                raise TraceInputError(f"{source}: cannot read it ({exc}); check the URL and credentials") from None
        else:
            local = source
            try:
                digest = content_hash(source)
            except OSError:
                digest = ""  # the loader says what is wrong with the path, in its own sentence
        if done_hash and digest == done_hash:
            return RankOutput(source, digest, skipped=True)
        return _analyse(source, local, digest, rank_from_name, tuple(parts), engine, keep_diagnosis,
                        fallback_rank, hta_compat)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _analyse(source, local, digest, rank_from_name, parts, engine, keep_diagnosis, fallback_rank,
             hta_compat) -> RankOutput:
    import pandas as pd

    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace

    started = time.perf_counter()
    with open_trace(local, engine or EngineChoice(), rank_from_name=rank_from_name) as tp:
        load_s = time.perf_counter() - started
        rank = tp.rank if tp.rank is not None else fallback_rank
        frames, not_applicable, diagnosis = _frames(tp, parts, source, hta_compat)
        graph = _graph(tp, rank) if GRAPH in parts else None
        query_s = time.perf_counter() - started - load_s
        report = tp.report
        frames["load"] = pd.DataFrame([{
            "rank_from_name": rank_from_name, "ts_offset_ns": int(report.ts_offset_ns or 0),
            "input_bytes": int(report.input_bytes), "events": int(sum(report.events_by_phase.values())),
            "expected_slices": int(report.expected_slices), "engine": tp.choice.kind,
            "fixes": orjson.dumps([f"{f.kind}: {f.count}" for f in report.fixes]).decode(),
            "loss": orjson.dumps(report.loss_sentences()).decode(),
            "not_applicable": orjson.dumps(not_applicable).decode(),
            "parts": ",".join(parts), "load_s": load_s, "query_s": query_s}])
    meta = {"rank": rank, "trace_path": source, "content_hash": digest, "kineto_sql_version": __version__}
    tables = {name: to_arrow(_with_columns(df, COLUMNS.get(name, ())), meta) for name, df in frames.items()}
    return RankOutput(source, digest, rank, tables, diagnosis if keep_diagnosis else None, graph=graph)


def _graph(tp, rank):
    """The rank's graph for the job's path, or None where the trace gives none (no iteration windows)."""
    from kineto_sql.errors import KinetoSqlError
    from kineto_sql.whatif.ranks import read_rank

    try:
        return read_rank(tp, rank, buckets=True)
    except KinetoSqlError:
        return None


def _frames(tp, parts, source, hta_compat=False) -> tuple[dict[str, pd.DataFrame], dict[str, str], object | None]:
    from kineto_sql.fleet.tables import ANALYSES, analysis_params
    from kineto_sql.run.runner import run_query

    frames, not_applicable, diagnosis = {}, {}, None
    if "hta" in parts:
        for key, query_id, _title in ANALYSES:
            run = run_query(tp, query_id, analysis_params(key, hta_compat))
            frames[f"hta_{key}"] = run.df
            if run.not_applicable:
                not_applicable[query_id] = run.not_applicable
        run = run_query(tp, "reading.op_shapes")  # the work per step, to tell a slow machine from more work
        frames["op_shapes"] = run.df
        run = run_query(tp, "reading.rank_balance_steps")  # own work per step: which rank is slowest, step by step
        frames["balance_steps"] = run.df
    if "collectives" in parts:
        run = run_query(tp, "reading.collective_calls")
        df = run.df.copy()
        if run.not_applicable:
            not_applicable["reading.collective_calls"] = run.not_applicable
        if "ts" in df:
            df["start_ns"] = df["ts"].astype("int64") + int(tp.report.ts_offset_ns or 0)
        frames["collectives"] = df
    if "diagnose" in parts:
        from dataclasses import replace

        from kineto_sql.diagnose.run import STEP_LEDGER, STEP_TABLE, diagnose_trace

        runs: dict = {}
        diagnosis = diagnose_trace(tp, runs=runs)
        if str(tp.path) != source:
            diagnosis = replace(diagnosis, source=source)
        for name, query_id in (("ledger", STEP_LEDGER), ("steps", STEP_TABLE)):
            # the diagnosis ran both: their rows, not a second run (a failed one is run again to raise here)
            run = runs[query_id].value if query_id in runs and runs[query_id].error is None else run_query(tp, query_id)
            frames[name] = run.df
            if run.not_applicable:
                not_applicable[query_id] = run.not_applicable
        frames["findings"] = findings_frame(diagnosis)
        frames["verdict"] = verdict_frame(diagnosis)
    return frames, not_applicable, diagnosis


FINDING_COLUMNS = ("query_id", "id_version", "title", "severity", "scope", "count", "impact_ns", "impact_pct",
                   "estimate_ns", "steps", "evidence", "fix", "narration")


def findings_frame(diagnosis) -> pd.DataFrame:
    import pandas as pd

    rows = [{
        "query_id": f.query_id, "id_version": f.id_version, "title": f.title, "severity": f.severity,
        "scope": f.scope, "count": int(f.count), "impact_ns": int(f.impact_ns),
        "impact_pct": None if f.impact_pct is None else float(f.impact_pct),
        "estimate_ns": None if f.estimate_ns is None else int(f.estimate_ns),
        "steps": orjson.dumps(list(f.where.steps)).decode(), "evidence": orjson.dumps(list(f.evidence)).decode(),
        "fix": f.fix, "narration": f.narration} for f in diagnosis.findings]
    return pd.DataFrame(rows, columns=list(FINDING_COLUMNS))


def verdict_frame(diagnosis) -> pd.DataFrame:
    import pandas as pd

    v = diagnosis.verdict
    return pd.DataFrame([{
        "regime": v.regime, "regime_reason": v.regime_reason, "steps": v.steps,
        "median_step_ns": v.median_step_ns, "total_step_ns": v.total_step_ns,
        "gpu_occupancy_pct": v.gpu_occupancy_pct, "has_gpu": v.has_gpu, "window_source": v.window_source,
        "cold_windows": v.cold_windows, "cold_ns": v.cold_ns, "lane_ns": v.lane_ns,
        "compute_pct": v.compute_pct, "comm_pct": v.comm_pct, "idle_pct": v.idle_pct,
        "silent": orjson.dumps(list(diagnosis.silent)).decode(),
        "skipped": orjson.dumps([s.query_id for s in diagnosis.skipped]).decode()}])


def _with_columns(df: pd.DataFrame, columns) -> pd.DataFrame:
    import pandas as pd

    missing = [c for c in columns if c not in df.columns]
    if not missing:
        return df
    df = df.copy()
    for column in missing:
        df[column] = pd.Series([None] * len(df), dtype="float64")
    return df


def to_arrow(df: pd.DataFrame, meta: dict):
    """The frame with `row_index` (its order within the rank) and the META columns, as a pyarrow.Table.
    Object columns that mix types become text (Parquet wants one type per column)."""
    import pyarrow as pa

    df = df.reset_index(drop=True).copy()
    for column in df.columns:
        if df[column].dtype == object:
            kinds = {type(v) for v in df[column] if v is not None and not (isinstance(v, float) and v != v)}
            if len(kinds) > 1 or (kinds and not kinds <= {str, int, float, bool}):
                df[column] = df[column].map(lambda v: None if v is None else str(v))
    df.insert(0, "row_index", range(len(df)))
    table = pa.Table.from_pandas(df, preserve_index=False)
    n = len(df)
    schema = {"rank": pa.int64(), "trace_path": pa.string(), "content_hash": pa.string(),
              "kineto_sql_version": pa.string()}
    for i, name in enumerate(META):
        table = table.add_column(i, pa.field(name, schema[name]), pa.array([meta[name]] * n, schema[name]))
    return table
