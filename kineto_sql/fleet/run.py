"""One fleet run: list the rank files, run a task per rank on an executor, keep (or write) the tables,
read them across ranks in DuckDB. `kineto-sql fleet`, `ranks`, `collectives` and `diagnose RANK_DIR` all
come through here; a rank's diagnosis is told what the cross-rank reading found (agree_with_ranks).

The driver holds only what tasks return (small tables, and with `keep_diagnosis` each rank's diagnosis
object); with `out`, each rank's tables go to Parquet as they arrive and the reading is over those files.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from kineto_sql.errors import KinetoSqlError, TraceInputError
from kineto_sql.fleet import dataset
from kineto_sql.fleet.analysis import (DEFAULT_THRESHOLD_PCT, FleetReport, analyse, connect_dataset, connect_tables,
                                      summary_dict)
from kineto_sql.fleet.collective_text import Thresholds
from kineto_sql.fleet.executors import LocalExecutor, RankFailure
from kineto_sql.fleet.task import DEFAULT_PARTS, GRAPH, is_url, rank_task
from kineto_sql.inputs import rank_dir_entries
from kineto_sql.loading.source import TRACE_SUFFIXES

Done = Callable[[int, int, int], None]  # (finished, total, failed)


@dataclass
class FleetRun:
    report: FleetReport
    diagnoses: list = field(default_factory=list)
    graphs: list = field(default_factory=list)  # the `graph` part's RankGraphs (kineto_sql.fleet.job_path)
    failures: list[RankFailure] = field(default_factory=list)
    read: int = 0
    skipped: int = 0


def same_file(source: str) -> str:
    """One key per rank file however its directory was given: a local path made absolute, a URL as is."""
    return str(source) if is_url(str(source)) else os.path.abspath(source)


def rank_sources(target, refused: list | None = None) -> list[tuple[str, int | None]]:
    """The rank files of a directory, or of an fsspec URL prefix (s3://bucket/job/), with the rank their
    name suggests (distributedInfo wins when the task loads the file). Entries of a directory that no load
    could read (kineto_sql.inputs) are left out and added to `refused` as (path, sentence)."""
    from kineto_sql.loading.source import _RANK_IN_NAME

    if is_url(str(target)):
        from kineto_sql.fleet.urls import list_url

        fs, names = list_url(str(target), TRACE_SUFFIXES)
        out = []
        for name in names:
            url = fs.unstrip_protocol(name)
            match = _RANK_IN_NAME.search(Path(name).name)
            out.append((url, int(match.group(1)) if match else None))
        return out
    from kineto_sql.loading.load import open_rank_dir

    kept, skipped = rank_dir_entries(target, open_rank_dir(target))
    if refused is not None:
        refused.extend(skipped)
    return [(str(p), r) for p, r in kept]


def run_fleet(target, parts=DEFAULT_PARTS, executor=None, out=None, engine=None, keep_diagnosis: bool = False,
              on_done: Done | None = None, threshold_pct: float = DEFAULT_THRESHOLD_PCT, hta_compat: bool = False,
              thresholds: Thresholds = Thresholds(), per_rank_tables: bool = False) -> FleetRun:
    """`hta_compat` (ranks --hta-compat) never resumes from a dataset: its tables differ from the default's.
    Entries of a directory no load could read are named among the failures."""
    refused: list[tuple[str, str]] = []
    sources = rank_sources(target, refused)
    if not sources and not refused:
        raise TraceInputError(f"{target} holds no trace files (*.json, *.json.gz)")
    parts = tuple(parts)
    # keyed by the file, not by how the directory was spelled (dir, ./dir/, /abs/dir): resume must match them
    previous = {same_file(p): e for p, e in dataset.done(out).items()} if out and dataset.is_dataset(out) else {}
    if out:
        listed = {same_file(s) for s, _ in sources}
        for path, entry in previous.items():
            if path not in listed:  # the dataset mirrors the directory: a rank file removed is removed here
                dataset.remove_rank(out, entry["label"])
    fresh = keep_diagnosis or hta_compat
    calls = [(src, rank_from_name, parts, engine,
              None if fresh else dataset.resumable(previous.get(same_file(src)), parts), keep_diagnosis, i, hta_compat)
             for i, (src, rank_from_name) in enumerate(sources)]
    run = FleetRun(report=None)  # type: ignore[arg-type]
    tables: dict[str, list] = defaultdict(list)
    seen: dict[int, str] = {}
    finished = 0
    for i, result in (executor or LocalExecutor()).run(rank_task, calls):
        finished += 1
        if isinstance(result, RankFailure):
            run.failures.append(result)
        elif result.skipped:
            run.skipped += 1
            seen_rank = previous[same_file(result.path)]["label"]
            _unique(seen, seen_rank, result.path)
        else:
            run.read += 1
            _unique(seen, f"rank={result.rank}" if result.rank is not None else result.path, result.path)
            if out:
                old = previous.get(same_file(result.path))
                if old:
                    dataset.remove_rank(out, old["label"])
                dataset.write_rank(out, result)
            else:
                for name, table in result.tables.items():
                    tables[name].append(table)
            if result.diagnosis is not None:
                run.diagnoses.append(result.diagnosis)
            if result.graph is not None:
                run.graphs.append(result.graph)
        if on_done:
            on_done(finished, len(calls), len(run.failures))
    run.failures.extend(RankFailure(path, sentence) for path, sentence in refused)
    run.failures.sort()
    if out:
        dataset.write_failures(out, run.failures)
    if not run.read and not run.skipped:
        raise all_failed(run.failures)
    con = connect_dataset(dataset.table_files(out)) if out else connect_tables(tables)
    run.report = analyse(con, threshold_pct, "hta" in parts, thresholds, per_rank_tables)
    run.report.failures = [(f.path, f.sentence()) for f in run.failures]
    run.report.skipped = run.skipped
    run.report.source = str(out or target)
    return run


def _unique(seen: dict, key, path: str) -> None:
    if key in seen and seen[key] != path:
        rank = str(key).removeprefix("rank=")
        raise KinetoSqlError(f"rank {rank} appears twice ({seen[key]} and {path}); one trace file per rank, please")
    seen[key] = path


def read_dataset(directory, threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> FleetReport:
    """The fleet report from a dataset alone: Parquet in, no trace loaded."""
    if not dataset.is_dataset(directory):
        raise KinetoSqlError(f"{directory} is not a fleet dataset (no load/ folder); write one with "
                             "kineto-sql fleet RANK_DIR --out DIR")
    report = analyse(connect_dataset(dataset.table_files(directory)), threshold_pct)
    report.failures = dataset.read_failures(directory)
    report.source = str(directory)
    return report


def all_failed(failures: list[RankFailure]) -> KinetoSqlError:
    first = failures[0].sentence()
    more = f" (and {len(failures) - 1} more rank file(s) failed)" if len(failures) > 1 else ""
    return KinetoSqlError(f"no rank could be loaded: {first}{more}")


def diagnose_directory(target: Path, engine=None, progress=None, jobs: int = 1, executor=None):
    """`diagnose RANK_DIR`: every rank as a fleet task (at most `jobs` local processes, or a cluster), one load
    per rank serving its diagnosis, the HTA tables and its collectives; then the cross-rank straggler reading,
    in DuckDB SQL over those tables (queries/fleet/), and each rank's diagnosis made to agree with it."""
    import time

    from kineto_sql.diagnose.model import Diagnosis

    started = time.perf_counter()
    traces, summary, failures, path = _diagnose_ranks(target, engine, progress, jobs, executor)
    traces.sort(key=lambda t: (t.rank is None, t.rank))
    return Diagnosis(str(target), tuple(traces), summary, time.perf_counter() - started,
                     failed_ranks=tuple(f.sentence() for f in failures), job_critical_path=tuple(path))


def _diagnose_ranks(target: Path, engine, progress, jobs: int, executor=None):
    from kineto_sql.fleet.job_path import job_critical_path

    say = progress or (lambda _: None)

    def done(finished, total, _failed):
        say(f"ranks: {finished} of {total} diagnosed")

    run = run_fleet(target, parts=("hta", "collectives", "diagnose", GRAPH), executor=executor or LocalExecutor(jobs),
                    engine=engine, keep_diagnosis=True, on_done=done)
    summary = summary_dict(run.report)
    path, traces = job_critical_path(run.graphs, run.report.clock, run.diagnoses)
    return [agree_with_ranks(t, summary) for t in traces], summary, run.failures, path


STRAGGLER = "catalog.straggler_rank"


def agree_with_ranks(trace, summary: dict | None):
    """One rank's straggler finding (it waits in collectives far longer than it works) cannot tell a slower
    peer from a slow transfer; the cross-rank reading compares the same quantities (kineto.lib.rank_balance)
    across ranks and can. In a rank directory the finding stays only where that reading names another rank
    the straggler (its evidence then says which); otherwise it is set aside with the reason, so the two
    readings never contradict each other."""
    from kineto_sql.diagnose.model import Skipped
    from kineto_sql.diagnose.run import _with_narration as with_narration

    if not summary:
        return trace
    named = summary.get("straggler")
    trace = _point_at_straggler(trace, named, summary)
    ours = [f for f in trace.findings if f.query_id == STRAGGLER]
    if not ours:
        return trace
    if named is not None and named != trace.rank:
        note = f"The cross-rank reading {_names(named, summary)}."
        findings = tuple(with_narration(replace(f, cross_rank_note=note)) if f.query_id == STRAGGLER
                         else f for f in trace.findings)
        return replace(trace, findings=findings)
    reason = (f"{STRAGGLER} fired on this rank, but the cross-rank reading over {summary.get('ranks')} ranks "
              + ("names this rank itself the straggler" if named is not None else "names no straggler")
              + ": its wait in collectives is the collectives' own time (see catalog.exposed_communication), "
              "not a slower peer.")
    return replace(trace, findings=tuple(f for f in trace.findings if f.query_id != STRAGGLER),
                   skipped=(*trace.skipped, Skipped(STRAGGLER, reason)))


EXPOSED = "catalog.exposed_communication"


def _point_at_straggler(trace, named, summary: dict):
    """On every rank but the straggler, the exposed-communication finding says whom part of that wait is for."""
    from kineto_sql.diagnose.run import _with_narration as with_narration

    if named is None or named == trace.rank or not any(f.query_id == EXPOSED for f in trace.findings):
        return trace
    whom = "each step's slowest rank" if summary.get("moving") else f"rank {named}"
    note = f"The cross-rank reading {_names(named, summary)}: part of this wait is for {whom}."
    return replace(trace, findings=tuple(with_narration(replace(f, cross_rank_note=note))
                                         if f.query_id == EXPOSED else f for f in trace.findings))


def _names(named: int, summary: dict) -> str:
    """What the cross-rank reading says, as the rest of a sentence: a fixed straggler, or data imbalance that
    moves between ranks (no rank slow every step; the named rank costs the others most)."""
    if summary.get("moving"):
        return (f"finds data imbalance that moves between ranks: the slowest rank changes from step to step and "
                f"costs the others {summary.get('excess_pct_of_step')}% of a step; rank {named} costs most")
    return (f"names rank {named} the straggler ({summary.get('quantity')}, "
            f"{summary.get('excess_pct_of_step')}% of a step)")
