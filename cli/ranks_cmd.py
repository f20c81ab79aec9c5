"""`kineto-sql ranks DIR`: the HTA analyses on every rank, as distributions."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import click
import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.output import (console, finish, emit_frame, emit_result, format_option, frame_records, friendly_errors,
                                   rank_failures)
from kineto_sql.cli.progress import stage


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty())


@click.command("ranks")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@format_option()
@jobs_option
@click.option("--hta-compat", is_flag=True, help="HTA 0.5.0's definitions (last step dropped, stream != -1, its name rules).")
@click.option("--threshold-pct", type=float, default=10.0, show_default=True,
              help="Name a straggler only when it costs the others this % of the median step or more.")
@click.option("--critical-path", "critical_path", is_flag=True,
              help="Also the job's critical path per steady step across ranks (each rank's dependency graph "
                   "joined at its collectives): which rank and ledger bucket hold the step. Read on the same "
                   "load of each rank, on the fleet's clock offsets.")
@engine_options
@friendly_errors
def command(directory: Path, fmt: str, jobs: int | None, hta_compat: bool, threshold_pct: float,
            critical_path: bool, engine_kind: str, tp_shell: str | None):
    """Every rank of a job in DIRECTORY: HTA's analyses per rank, their spread, and the straggler if any.

    Prints one table per analysis (temporal breakdown, comm-comp overlap, idle time by cause, kernel
    types, launch statistics, steps) with a row per rank, each rank's clock offset against the others
    (from the ends of matched collectives, with its band), then the distribution of the quantities that
    matter across ranks (median, spread, robust z-score of the worst rank) and a five-sentence verdict
    naming the straggler, or saying plainly that there is none. The reading is the fleet's (the same
    tables and SQL as `kineto-sql fleet`).

    \b
    Which command for a job of several ranks:
      diagnose DIR     start here: the job's verdict, the ranks that matter, then each rank's findings
      ranks DIR        HTA's per-rank analyses side by side and the straggler, when you compare ranks
      collectives DIR  each collective call matched across ranks (bandwidth, skew), for a slow all_reduce
      fleet DIR        the same reading over hundreds of ranks or a cluster (dask), kept as Parquet

    \b
    Examples:
      kineto-sql ranks ./tb_logs/
      kineto-sql ranks ./tb_logs/ --jobs 4 --format json
      kineto-sql ranks ./tb_logs/ --hta-compat
    """
    from kineto_sql.fleet.executors import LocalExecutor
    from kineto_sql.fleet.job_path import job_critical_path
    from kineto_sql.fleet.run import run_fleet
    from kineto_sql.fleet.tables import ANALYSES
    from kineto_sql.fleet.task import GRAPH

    with _progress() as progress:
        task = progress.add_task("loading ranks", total=None)

        def done(finished, total, _failed):
            progress.update(task, completed=finished, total=total)
            stage(f"ranks: {finished} of {total} loaded")

        parts = ("hta", "collectives") + ((GRAPH,) if critical_path else ())
        run = run_fleet(directory, parts, LocalExecutor(jobs_or_default(jobs)), engine=engine_choice(engine_kind, tp_shell),
                        on_done=done, threshold_pct=threshold_pct, hta_compat=hta_compat, per_rank_tables=True)
    report, failures = run.report, run.failures
    verdict = report.verdict
    path = job_critical_path(run.graphs, report.clock)[0] if critical_path else None
    code, reason = (1, rank_failures(f.sentence() for f in failures)) if failures else (0, None)
    if fmt == "json":
        emit_result({
            "ranks": report.ranks,
            "hta_compat": hta_compat,
            "tables": {k: frame_records(v) for k, v in report.tables.items()},
            "clock": frame_records(report.clock),
            "shapes": frame_records(report.shapes) if report.shapes is not None else None,
            "summary": frame_records(report.summary),
            "distribution": frame_records(report.distribution),
            "straggler": verdict.straggler,
            "straggler_quantity": verdict.quantity.column if verdict.quantity and verdict.straggler is not None else None,
            "straggler_cause": verdict.cause,
            "narration": verdict.narration,
            "failed_ranks": [{"path": f.path, "error": f.reason} for f in failures],
            **({"critical_path": path} if path is not None else {}),
        }, code, reason)
        return finish(code, reason)
    if fmt == "csv":
        long = _long_frame(report)
        click.echo(long.to_csv(index=False), nl=False)
        return finish(code, reason)
    width = console().width  # sentences wrap where tables do: a terminal's width, COLUMNS, or none in a pipe

    def say(text: str) -> None:
        click.echo(textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False))

    for key, _qid, title in ANALYSES:
        table = report.tables[key]
        if set(table.columns) <= {"rank"}:  # the analysis answered on no rank (a CPU-only job has no kernels)
            say(f"{title}: not applicable to these ranks (no rank gave it a value)")
            continue
        if key == "kernel_types":  # one column per kernel type, in us: named so that people read a duration
            table = table.rename(columns={c: f"{c}_us" for c in table.columns if c != "rank"})
        emit_frame(_rounded(table), fmt, title=title)
    emit_frame(_rounded(report.clock), fmt, title="Clock offset of each rank against the lowest (us, from collective ends)")
    emit_frame(_rounded(report.summary), fmt, title="Per-rank quantities compared (us)")
    emit_frame(_rounded(report.distribution.drop(columns=["meaning", "direction", "ord", "ranks"])), fmt,
               title="Distribution across ranks")
    if path is not None:
        emit_frame(pd.DataFrame(path, columns=["step", "rank", "bucket", "ms", "pct"]), fmt,
                   title="The job's critical path per steady step: rank and ledger bucket (% of the step)")
    click.echo("")
    say(verdict.narration)
    finish(code, reason)


def _rounded(df: pd.DataFrame) -> pd.DataFrame:
    return df.round(2) if not df.empty else df


def _long_frame(report) -> pd.DataFrame:
    """csv: one row per (analysis, rank, metric, value), then the distribution and the verdict."""
    rows = []
    for key, table in list(report.tables.items()) + [("clock", report.clock), ("summary", report.summary)]:
        for rec in table.to_dict(orient="records"):
            for metric, value in rec.items():
                if metric != "rank":
                    rows.append({"analysis": key, "rank": rec["rank"], "metric": metric, "value": value})
    for rec in report.distribution.to_dict(orient="records"):
        for metric, value in rec.items():
            if metric != "quantity":
                rows.append({"analysis": "distribution:" + rec["quantity"], "rank": None, "metric": metric,
                             "value": value})
    rows.append({"analysis": "verdict", "rank": report.verdict.straggler, "metric": "straggler",
                 "value": report.verdict.narration})
    frame = pd.DataFrame(rows)
    frame["rank"] = frame["rank"].astype("Int64")
    return frame
