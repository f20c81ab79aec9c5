"""`kineto-sql fleet RANK_DIR_OR_DATASET`: every rank as a task (local processes or a dask cluster), the
tables as a Parquet dataset, the cross-rank reading in DuckDB SQL."""
from __future__ import annotations

from pathlib import Path

import click

from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.output import (finish, emit_frame, emit_result, format_option, frame_records, friendly_errors,
                                   rank_failures)
from kineto_sql.cli.progress import stage
from kineto_sql.errors import KinetoSqlError
from kineto_sql.fleet.task import PARTS, is_url

TOP = 5
# local pools are renewed every jobs x this many ranks (see LocalExecutor): a worker keeps ~15 MB of each
# closed engine, and a forked pool starts in well under a second
TASKS_PER_WORKER = 16


def executor_options(func):
    func = click.option("--address", default=None, metavar="tcp://HOST:PORT",
                        help="The dask scheduler (with --executor dask).")(func)
    func = click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                        help="local: --jobs worker processes here; dask: the workers of the cluster at --address "
                             "(each must see the rank files at the same path or URL).")(func)
    return func


def rank_progress():
    from kineto_sql.cli.ranks_cmd import _progress

    return _progress()


def _parts(text: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise click.BadParameter(f"choose from {', '.join(PARTS)} (comma-separated)", param_hint="--parts")
    if "hta" not in parts:
        raise click.BadParameter("the cross-rank reading needs the hta part", param_hint="--parts")
    return parts


@click.command("fleet")
@click.argument("target")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the per-rank tables here as Parquet (one file per table per rank); rerunning resumes: "
                   "ranks whose file is unchanged (content hash) are not read again.")
@jobs_option
@executor_options
@click.option("--parts", default=",".join(PARTS), show_default=True,
              help="What each rank task computes (hta is needed; diagnose is the most expensive).")
@click.option("--threshold-pct", type=float, default=10.0, show_default=True,
              help="Name a straggler only when it costs the others this % of the median step or more.")
@format_option("text", "markdown", "json")
@engine_options
@friendly_errors
def command(target: str, out: Path | None, jobs: int | None, executor: str, address: str | None, parts: str,
            threshold_pct: float, fmt: str, engine_kind: str, tp_shell: str | None):
    """The fleet report of a job: TARGET is a directory (or fsspec URL) of rank traces, or a dataset that an
    earlier `--out` wrote (then only its Parquet files are read, no trace).

    Per rank, one task loads the trace and returns small tables (HTA breakdowns, collective calls, the
    ledger, steps and findings; never the trace); the driver writes them to --out and reads them across
    ranks with the SQL of queries/fleet/ in DuckDB: each quantity's distribution (median, MAD, the worst
    rank and its robust z), the straggler named or not, and the collective calls' skew.

    \b
    Examples:
      kineto-sql fleet ./tb_logs/ --jobs 4 --out ./fleet/
      kineto-sql fleet ./fleet/                      # the report again, from Parquet only
      kineto-sql fleet s3://bucket/job/ --executor dask --address tcp://scheduler:8786 --out ./fleet/

    \b
    Which command for a job of several ranks:
      diagnose DIR     start here: the job's verdict, the ranks that matter, then each rank's findings
      ranks DIR        HTA's per-rank analyses side by side and the straggler, when you compare ranks
      collectives DIR  each collective call matched across ranks (bandwidth, skew), for a slow all_reduce
      fleet DIR        the same reading over hundreds of ranks or a cluster (dask), kept as Parquet
    """
    from kineto_sql.fleet import dataset
    from kineto_sql.fleet.executors import executor_for
    from kineto_sql.fleet.run import read_dataset, run_fleet

    chosen = _parts(parts)
    run = None
    if not is_url(target) and dataset.is_dataset(target):
        if out:
            raise KinetoSqlError(f"{target} is already a dataset; --out is for a directory of rank traces")
        report = read_dataset(target, threshold_pct)
    else:
        if not is_url(target) and not Path(target).is_dir():
            raise KinetoSqlError(f"{target}: no such directory; pass a directory of rank traces, a URL, or a dataset")
        runner = executor_for(executor, jobs_or_default(jobs), address, TASKS_PER_WORKER)
        with rank_progress() as progress:
            task = progress.add_task("ranks", total=None)

            def done(finished, total, failed):
                progress.update(task, completed=finished, total=total,
                                description=f"ranks ({failed} failed)" if failed else "ranks")
                stage(f"fleet: {finished} of {total} ranks done" + (f", {failed} failed" if failed else ""))

            run = run_fleet(target, chosen, runner, out, engine_choice(engine_kind, tp_shell), on_done=done,
                            threshold_pct=threshold_pct)
        report = run.report
    code, reason = 0, None
    if report.failures:
        code, reason = 1, (f"{rank_failures(s for _, s in report.failures)} ({len(report.failures)} of "
                           f"{len(report.ranks) + len(report.failures)} rank files; the report covers the others)")
    if fmt == "json":
        emit_result(_json(report, run, out), code, reason)
    else:
        _text(report, run, out, fmt)
    finish(code, reason)


def _json(report, run, out) -> dict:
    v = report.verdict
    return {
        "source": report.source, "dataset": str(out) if out else None, "ranks": report.ranks,
        "read": run.read if run else 0, "resumed": report.skipped,
        "summary": frame_records(report.summary), "distribution": frame_records(report.distribution),
        "straggler": v.straggler, "straggler_quantity": v.quantity.column if v.quantity and v.straggler is not None
        else None, "narration": v.narration,
        "clock": frame_records(report.clock), "straggler_cause": v.cause,
        "collective_skew": frame_records(report.collective_skew) if report.collective_skew is not None else None,
        "rank_lateness": frame_records(report.rank_lateness) if report.rank_lateness is not None else None,
        "failed_ranks": [{"path": p, "error": e} for p, e in report.failures],
    }


def _text(report, run, out, fmt: str = "text") -> None:
    n = len(report.ranks)
    how = f"{run.read} read, {report.skipped} unchanged since the last run" if run else "from the dataset"
    click.echo(f"fleet: {n} ranks ({how}){f'; dataset {out}' if out else ''}")
    dist = report.distribution.drop(columns=["direction", "ord"]).round(2)
    emit_frame(dist, fmt, title="Distribution across ranks (us)")
    worst = list(dict.fromkeys(int(r) for r in report.distribution["worst_rank"]))
    rows = report.summary if n <= 16 else report.summary[report.summary["rank"].isin(worst)]
    title = "Per-rank quantities (us)" if n <= 16 else f"The worst ranks' quantities (us; {n} ranks in fleet_rank_summary)"
    emit_frame(rows.round(2), fmt, title=title)
    if report.collective_skew is not None:
        clock = report.clock if n <= 16 else report.clock[report.clock["rank"].isin(worst)]
        emit_frame(clock.round(2), fmt, title="Clock offset of each rank against the lowest (us, from collective ends)")
    click.echo("")
    click.echo(report.verdict.narration)
    if report.collective_skew is not None and not report.collective_skew.empty:
        skew = report.collective_skew.sort_values("start_skew_us", ascending=False).head(TOP)
        emit_frame(skew.round(1), fmt, title=f"Collective calls with the largest start skew "
                                                f"(top {len(skew)} of {len(report.collective_skew)})")
        late = report.rank_lateness.sort_values(["wait_caused_us", "rank"], ascending=[False, True]).head(TOP)
        emit_frame(late.round(1), fmt, title="Ranks the others waited for at collectives")

