"""`kineto-sql diff BEFORE AFTER` / `BEFORE... --vs AFTER...`: what changed between two sides (one capture or
several each), and why one is faster."""
from __future__ import annotations

import os
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import click
import pandas as pd

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.output import emit_frame, emit_json, emit_result, finish, format_option, frame_records, friendly_errors
from kineto_sql.cli.ranks_cmd import _progress


@click.command("diff", context_settings={"ignore_unknown_options": True})
@click.argument("traces", nargs=-1, type=click.UNPROCESSED, metavar="BEFORE... [--vs] AFTER...")
@format_option("text", "json", "csv")
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
              help="For CI: exit 1 when the low end of the 95% interval of AFTER's median-step change is above PCT % "
              "(slower), 0 when it is not, 3 when the gate cannot judge: a capture invalid or not comparable, or "
              "fewer than 3 captures on a side without --noise-floor. Prints one line saying why.")
@click.option("--noise-floor", "noise_floor", type=click.FloatRange(min=0), default=None, metavar="PCT",
              help="With --fail-on-regression: a run-to-run spread you measured (e.g. between repeated captures of "
              "the same code), in %; the gate then judges one capture a side, lowering the interval's low end by PCT.")
@click.option("--baseline", "baseline_name", default=None, metavar="NAME",
              help="A named baseline: with BEFORE and AFTER, BEFORE's captures are stored as NAME; with one side, it "
              "is compared against NAME (or stored as NAME with --update-baseline).")
@click.option("--baseline-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where baselines are kept (default: .kineto-sql/baselines in the working directory).")
@click.option("--update-baseline", is_flag=True, help="With one side and --baseline NAME: store its captures as NAME "
              "and compare nothing.")
@click.option("--hta-compat", is_flag=True, help="HTA's compare_traces: by name, the first step (or --all-steps), "
              "status by count.")
@engine_options
@friendly_errors
def diff_command(traces: tuple, fmt: str, device: str, median_step: bool, all_steps: bool,
                 step: int | None, threshold_pct: float, min_us: float, limit: int, fail_pct: float | None,
                 noise_floor: float | None, baseline_name: str | None, baseline_dir: Path | None,
                 update_baseline: bool, hta_compat: bool, engine_kind: str, tp_shell: str | None):
    """What changed from BEFORE to AFTER, and why one is faster: a verdict with its confidence, then rows by
    time moved.

    \b
    Sides: BEFORE AFTER (two traces, or two directories of captures), or
           BEFORE... --vs AFTER... (traces, directories or quoted globs a side).

    A side of several captures (the same code recorded several times) is what makes the interval hold
    run-to-run variation: the bootstrap resamples captures, then windows in each. One capture a side
    holds only the step-to-step noise inside it.

    The headline: the change in the median step over the steady iteration windows of each side, with a 95%
    bootstrap interval ("AFTER is faster by 28.2% (95% CI ...)" or "No change beyond noise"), when each
    side has at least 3 steady windows; the step-ledger buckets that moved beyond noise, each with its
    interval; whether the change is host-side (device idle moved) or device-side (device busy moved);
    then what makes the two sides not comparable (an invalid capture, too few steady windows,
    another device or iteration source) or worth a flag (another schedule, with_stack / record_shapes /
    profile_memory set differently). Rows: per op and kernel (keyed by call path, so a renamed kernel
    pairs with the one it replaced), per-step time before and after (the mean over a side's captures),
    status by time (increased / decreased beyond --threshold-pct and --min-us). By default every step
    counts for the rows (mean per step); --median-step or --step N picks one. Traces load in parallel,
    each in its own process.

    The gate (--fail-on-regression PCT) exits 0 (passed), 1 (failed) or 3 (not judged: it says why in
    its one line). A baseline (--baseline NAME) is a small JSON file of one side's numbers per capture,
    per window and per op, not the traces: store it on the main branch, compare each new capture against it.

    \b
    Examples:
      kineto-sql diff baseline.json.gz candidate.json.gz
      kineto-sql diff runs/main/ runs/pr/ --fail-on-regression 5
      kineto-sql diff main_*.json.gz --vs pr_*.json.gz --fail-on-regression 5
      kineto-sql diff a.json.gz b.json.gz --device gpu --median-step --format csv
      kineto-sql diff main.json pr.json --fail-on-regression 5 --noise-floor 8
      kineto-sql diff runs/main/ --baseline main --update-baseline
      kineto-sql diff runs/pr/ --baseline main --fail-on-regression 5
    """
    from kineto_sql.diff import baselines
    from kineto_sql.diff import traces as trace_diff
    from kineto_sql.diff.sides import split_sides

    choice = engine_choice(engine_kind, tp_shell)
    before, after = split_sides(traces)
    if noise_floor is not None and fail_pct is None:
        raise click.UsageError("--noise-floor widens the regression gate's interval: give it with --fail-on-regression.")
    if update_baseline and (baseline_name is None or after is not None):
        raise click.UsageError("--update-baseline takes one side and --baseline NAME (it stores that side as NAME).")
    if after is None and baseline_name is None:
        raise click.UsageError("diff compares BEFORE and AFTER, or one TRACE against --baseline NAME.")
    if hta_compat:
        if after is None or baseline_name is not None:
            raise click.UsageError("--hta-compat compares two traces; a baseline keeps no HTA summary.")
        if len(before) != 1 or len(after) != 1:
            raise click.UsageError("--hta-compat compares one trace with one trace, not sides of several captures.")
        return _hta_diff(before[0], after[0], fmt, device, all_steps, -1 if step is None else step, limit, choice)
    window = "step" if step is not None else "median" if median_step else "all"
    options = trace_diff.DiffOptions(window=window, step=step, threshold_pct=threshold_pct, min_us=min_us)
    if after is None and not update_baseline:
        sides = [baselines.load(baseline_name, baseline_dir), _load_sides(before, choice)]
    else:
        loaded = _load_sides(before + (after or []), choice)
        sides = [loaded[:len(before)], loaded[len(before):]]
    if baseline_name is not None and (update_baseline or after is not None):
        path = baselines.save(sides[0], baseline_name, baseline_dir)
        said = ", ".join(str(p) for p in before)
        click.echo(f"baseline {baseline_name!r} stored at {path} (from {said})", err=True)
        if update_baseline:
            if fail_pct is not None:
                click.echo("regression gate: not judged, nothing to compare: --update-baseline stores a baseline "
                           "and compares nothing.", err=True)
            return
    report = trace_diff.build_diff(sides[0], sides[1], options, None if device == "all" else device)
    result = None
    if fail_pct is not None:
        from kineto_sql.diff.verdict import gate

        result = gate(report.verdict, fail_pct, noise_floor)
    _emit(report, sides, fmt, limit, min_us, result)
    if result is not None:
        if not result.exit_code:  # passed: said, not an error
            click.echo(result.line, err=True)
        finish(result.exit_code, result.line)  # failed or not judged: `error: regression gate: ...`


def _load_sides(paths: list[Path], choice) -> list:
    from kineto_sql.diff import traces as trace_diff

    with _progress() as progress:
        task = progress.add_task(f"loading {len(paths)} trace{'s' if len(paths) > 1 else ''}", total=len(paths))
        with ProcessPoolExecutor(max_workers=min(len(paths), max(2, os.cpu_count() or 2))) as pool:
            futures = [pool.submit(trace_diff.side_file, str(p), choice) for p in paths]
            sides = []
            for future in futures:
                sides.append(future.result())
                progress.advance(task)
    return sides


def _emit(report, sides, fmt: str, limit: int, min_us: float, result) -> None:
    if fmt == "json":
        code, reason = (result.exit_code, result.line) if result is not None else (0, None)
        emit_result({"before": ", ".join(c.path for c in sides[0]), "after": ", ".join(c.path for c in sides[1]),
                   "before_captures": [c.path for c in sides[0]], "after_captures": [c.path for c in sides[1]],
                   "headline": report.headline,
                   "step_change_pct": report.step_change_pct, "before_steps": list(report.before.steps),
                   "after_steps": list(report.after.steps), "status_counts": report.status_counts,
                   "verdict": report.verdict.to_json() if report.verdict is not None else None,
                   "gate": None if result is None else {"failed": result.failed, "judged": result.judged,
                                                        "line": result.line},
                   "rows": frame_records(report.rows)}, code, reason)
    elif fmt == "csv":
        emit_frame(report.rows, fmt)
    else:
        click.echo(textwrap.fill(report.headline, width=80))
        click.echo("")
        if report.verdict is not None and report.verdict.buckets:
            click.echo(_bucket_table(report.verdict, min_us))
            click.echo("")
        shown = report.rows if limit <= 0 else report.rows.head(limit)
        click.echo(_diff_table(shown))
        click.echo(f"({len(shown)} of {len(report.rows)} rows, per step; "
                   + ", ".join(f"{v} {k}" for k, v in report.status_counts.items() if v) + ")")


def _bucket_table(verdict, min_us: float) -> str:
    """The ledger buckets and their groups: change in the median per steady window, ms, with the 95%
    interval; `moved` when the interval leaves zero out. Buckets whose change and interval stay under
    --min-us are left out. Fits 80 columns."""
    from kineto_sql.diff.verdict import GROUPS

    lines = [f"{'ledger bucket':<22} {'change':>8} {'95% CI':>19}  ms (steady medians)"]
    entries = [(GROUPS[k] + " (all)", iv) for k, iv in verdict.groups.items()]
    entries += sorted(verdict.buckets.items(), key=lambda kv: -abs(kv[1].point))
    for name, iv in entries:
        if max(abs(iv.point), abs(iv.low), abs(iv.high)) < min_us * 1e3:
            continue
        ci = f"{iv.low / 1e6:+.2f}..{iv.high / 1e6:+.2f}"
        lines.append(f"{name[:22]:<22} {iv.point / 1e6:>+8.2f} {ci:>19}  {'moved' if iv.beyond_noise else ''}")
    return "\n".join(lines).rstrip()


def _diff_table(rows: pd.DataFrame) -> str:
    """Fixed columns that fit 80: status, device, before / after / moved in ms per step, the short name
    and, for a row under an op, that op (a kernel's launching op)."""
    from kineto_sql.diff.traces import short_name

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
    from kineto_sql.diff import traces as trace_diff

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
