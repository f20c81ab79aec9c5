"""`kineto-sql ranks DIR`: the HTA analyses on every rank, as distributions; `kineto-sql diff BEFORE AFTER`."""
from __future__ import annotations

import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
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


@click.command("diff")
@click.argument("before", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("after", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@format_option
@click.option("--device", type=click.Choice(["all", "cpu", "gpu"]), default="all", show_default=True,
              help="CPU ops / annotations, GPU kernels, or both.")
@click.option("--median-step", is_flag=True, help="Compare the median-width step of each trace (default: the mean "
              "per step over all steps).")
@click.option("--all-steps", is_flag=True, help="The mean per step over all steps (the default; kept for scripts).")
@click.option("--step", type=int, default=None, help="Compare ProfilerStep#N of each trace.")
@click.option("--threshold-pct", type=float, default=5.0, show_default=True,
              help="A row increased / decreased when its time per step moved by more than this %...")
@click.option("--min-us", type=float, default=10.0, show_default=True, help="...and by more than this many us.")
@click.option("--limit", type=int, default=20, show_default=True, help="Rows shown in the table (0: all).")
@click.option("--fail-on-regression", "fail_pct", type=float, default=None, metavar="PCT",
              help="Exit 1 when AFTER's median step is more than PCT % slower than BEFORE's (for CI).")
@click.option("--hta-compat", is_flag=True, help="HTA's compare_traces: by name, the first step (or --all-steps), "
              "status by count.")
@engine_options
@friendly_errors
def diff_command(before: Path, after: Path, fmt: str, device: str, median_step: bool, all_steps: bool,
                 step: int | None, threshold_pct: float, min_us: float, limit: int, fail_pct: float | None,
                 hta_compat: bool, engine_kind: str, tp_shell: str | None):
    """What changed from BEFORE to AFTER, and why one is faster: a headline, then rows by time moved.

    The headline: median step before -> after, GPU busy, kernel total, host busy, the GPU buckets (kernel
    classes, idle) that moved most, and whether the change is host-side or device-side. Rows: per op and
    kernel (keyed by call path, so a renamed kernel pairs with the one it replaced), per-step time
    before and after, status by time (increased / decreased beyond --threshold-pct and --min-us).
    By default every step counts (mean per step); --median-step or --step N picks one.
    Both traces load at once, each in its own process.

    \b
    Examples:
      kineto-sql diff baseline.json.gz candidate.json.gz
      kineto-sql diff a.json.gz b.json.gz --device gpu --median-step --format csv
      kineto-sql diff main.json.gz pr.json.gz --fail-on-regression 5
    """
    from kineto_sql import trace_diff

    choice = engine_choice(engine_kind, tp_shell)
    if hta_compat:
        return _hta_diff(before, after, fmt, device, all_steps, -1 if step is None else step, limit, choice)
    window = "step" if step is not None else "median" if median_step else "all"
    options = trace_diff.DiffOptions(window=window, step=step, threshold_pct=threshold_pct, min_us=min_us)
    with _progress() as progress:
        task = progress.add_task("loading 2 traces", total=2)
        with ProcessPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(trace_diff.side_file, str(p), choice) for p in (before, after)]
            sides = []
            for future in futures:
                sides.append(future.result())
                progress.advance(task)
    report = trace_diff.build_diff(sides[0], sides[1], options, None if device == "all" else device)
    regressed = fail_pct is not None and report.step_change_pct is not None and report.step_change_pct > fail_pct
    if fmt == "json":
        emit_json({"before": str(before), "after": str(after), "headline": report.headline,
                   "step_change_pct": report.step_change_pct, "before_steps": list(report.before.steps),
                   "after_steps": list(report.after.steps), "status_counts": report.status_counts,
                   "rows": frame_records(report.rows)})
    elif fmt == "csv":
        emit_frame(report.rows, fmt)
    else:
        click.echo(textwrap.fill(report.headline, width=80))
        click.echo("")
        shown = report.rows if limit <= 0 else report.rows.head(limit)
        click.echo(_diff_table(shown))
        click.echo(f"({len(shown)} of {len(report.rows)} rows, per step; "
                   + ", ".join(f"{v} {k}" for k, v in report.status_counts.items() if v) + ")")
    if regressed:
        click.echo(f"regression: the median step is {report.step_change_pct:.1f}% slower "
                   f"(over --fail-on-regression {fail_pct:g}%)", err=True)
        sys.exit(1)


def _diff_table(rows: pd.DataFrame) -> str:
    """Fixed columns that fit 80: status, device, before / after / moved in ms per step, the short name
    and, for a row under an op, that op (a kernel's launching op)."""
    from kineto_sql.trace_diff import short_name

    lines = [f"{'status':<11} {'dev':<3} {'before':>7} {'after':>7} {'moved':>7}  name [under op] (ms per step)"]
    for r in rows.itertuples(index=False):
        lines.append(f"{r.status:<11} {r.device:<3} {r.before_us / 1e3:>7.2f} {r.after_us / 1e3:>7.2f} "
                     f"{r.diff_us / 1e3:>+7.2f}  {_label(r.name, r.path, short_name)}")
    return "\n".join(lines)


def _label(name: str, path: str, short_name) -> str:
    """The short name, and the op it sits under when there is one: `aten::to [enumerate(DataLoader)#...]`."""
    if " -> " in name:
        old, new = name.split(" -> ", 1)
        return f"{short_name(old, 18)} -> {short_name(new, 17)}"
    parent = path.rsplit(" > ", 1)[-1] if path else ""
    if not parent or parent == "ProfilerStep#*":
        return short_name(name, 39)
    parent = short_name(parent, 14)
    return short_name(name, 39 - len(parent) - 3) + f" [{parent}]"


def _hta_diff(before: Path, after: Path, fmt: str, device: str, all_steps: bool, step: int, limit: int, choice):
    from kineto_sql import trace_diff

    options = trace_diff.SummaryOptions(all_steps=all_steps, step=step)
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(trace_diff.summarise_file, str(p), options, choice) for p in (before, after)]
        frames = [f.result() for f in futures]
    diff = trace_diff.diff_summaries(frames[0], frames[1], None if device == "all" else device.upper())
    counts = trace_diff.status_counts(diff)
    if fmt == "json":
        emit_json({"before": str(before), "after": str(after), "status_counts": counts, "rows": frame_records(diff)})
        return
    if fmt == "csv":
        emit_frame(diff, fmt)
        return
    shown = diff if limit <= 0 else diff.head(limit)
    emit_frame(shown.round(2), fmt, title=f"{before.name} -> {after.name} (top {len(shown)} of {len(diff)} by |diff_total_us|)")
    click.echo(", ".join(f"{v} {k}" for k, v in counts.items()))
