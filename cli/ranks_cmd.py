"""`kineto-sql ranks DIR`: the HTA analyses on every rank, as distributions."""
from __future__ import annotations

import sys
from pathlib import Path

import click
import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.output import emit_frame, emit_json, format_option, frame_records, friendly_errors
from kineto_sql.cli.progress import stage
from kineto_sql.fanout import RankFailure, all_failed, fan_out
from kineto_sql.inputs import rank_dir_entries


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty())


@click.command("ranks")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@format_option
@click.option("--jobs", "-j", type=click.IntRange(1), default=1, show_default=True,
              help="Ranks loaded at once, each in its own process (memory: at most N engines resident).")
@click.option("--hta-compat", is_flag=True, help="HTA 0.5.0's definitions (last step dropped, stream != -1, its name rules).")
@click.option("--threshold-pct", type=float, default=10.0, show_default=True,
              help="Name a straggler only when it costs the others this % of the median step or more.")
@engine_options
@friendly_errors
def command(directory: Path, fmt: str, jobs: int, hta_compat: bool, threshold_pct: float,
            engine_kind: str, tp_shell: str | None):
    """Every rank of a job in DIRECTORY: HTA's analyses per rank, their spread, and the straggler if any.

    Prints one table per analysis (temporal breakdown, comm-comp overlap, idle time by cause, kernel
    types, launch statistics, steps) with a row per rank, then the distribution of the quantities that
    matter across ranks (median, spread, robust z-score of the worst rank) and a five-sentence verdict
    naming the straggler, or saying plainly that there is none.

    \b
    Examples:
      kineto-sql ranks ./tb_logs/
      kineto-sql ranks ./tb_logs/ --jobs 4 --format json
      kineto-sql ranks ./tb_logs/ --hta-compat
    """
    from kineto_sql import ranks

    choice = engine_choice(engine_kind, tp_shell)
    files, refused = rank_dir_entries(directory, ranks.rank_files(directory))
    with _progress() as progress:
        task = progress.add_task(f"loading {len(files)} ranks", total=len(files))

        def done(_result):
            progress.advance(task)
            stage(f"ranks: {int(progress.tasks[0].completed)} of {len(files)} loaded")

        results, failures = fan_out(ranks.run_rank, [(str(p), r, hta_compat, choice) for p, r in files], jobs, done)
    failures = sorted(failures + [RankFailure(p, s) for p, s in refused])
    if not results:
        raise all_failed(failures)
    report = ranks.build_report(results, threshold_pct)
    verdict = report.verdict
    if fmt == "json":
        emit_json({
            "ranks": [r.rank for r in report.results],
            "hta_compat": hta_compat,
            "tables": {k: frame_records(v) for k, v in report.tables.items()},
            "summary": frame_records(report.summary),
            "distribution": frame_records(report.distribution),
            "straggler": verdict.straggler,
            "straggler_quantity": verdict.quantity.column if verdict.quantity and verdict.straggler is not None else None,
            "narration": verdict.narration,
            "failed_ranks": [{"path": f.path, "error": f.reason} for f in failures],
        })
        _fail_on(failures)
        return
    if fmt == "csv":
        long = _long_frame(report)
        click.echo(long.to_csv(index=False), nl=False)
        _fail_on(failures)
        return
    for key, _qid, title in ranks.ANALYSES:
        emit_frame(_rounded(report.tables[key]), fmt, title=title)
    emit_frame(_rounded(report.summary), fmt, title="Per-rank quantities compared (us)")
    emit_frame(_rounded(report.distribution), fmt, title="Distribution across ranks")
    click.echo("")
    click.echo(verdict.narration)
    _fail_on(failures)


def _fail_on(failures) -> None:
    """The good ranks are printed; each bad one is named on stderr and the command exits 1."""
    for failure in failures:
        click.echo(f"error: rank file not loaded: {failure.sentence()}", err=True)
    if failures:
        sys.exit(1)


def _rounded(df: pd.DataFrame) -> pd.DataFrame:
    return df.round(2) if not df.empty else df


def _long_frame(report) -> pd.DataFrame:
    """csv: one row per (analysis, rank, metric, value), then the distribution and the verdict."""
    rows = []
    for key, table in list(report.tables.items()) + [("summary", report.summary)]:
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
