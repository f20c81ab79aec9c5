"""`kineto-sql collectives DIR`: every collective call matched across ranks: latency, bandwidth, skew."""
from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.output import emit_frame, emit_json, format_option, frame_records, friendly_errors
from kineto_sql.fanout import RankFailure, all_failed, fan_out
from kineto_sql.inputs import rank_dir_entries


@click.command("collectives")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@format_option
@click.option("--jobs", "-j", type=click.IntRange(1), default=1, show_default=True,
              help="Ranks loaded at once, each in its own process.")
@click.option("--slow-pct", type=float, default=25.0, show_default=True,
              help="A call is slow when its bus bandwidth is under this % of the GPU's link bandwidth...")
@click.option("--slow-min-mib", type=float, default=32.0, show_default=True,
              help="...and its message is at least this many MiB (smaller ones are latency-bound).")
@click.option("--skew-min-us", type=float, default=100.0, show_default=True,
              help="A call is skewed when its ranks start at least this far apart...")
@click.option("--skew-factor", type=float, default=2.0, show_default=True,
              help="...and at least this many times the call's own latency.")
@click.option("--limit", type=int, default=40, show_default=True, help="Calls shown in the table (0: all).")
@engine_options
@friendly_errors
def command(directory: Path, fmt: str, jobs: int, slow_pct: float, slow_min_mib: float, skew_min_us: float,
            skew_factor: float, limit: int, engine_kind: str, tp_shell: str | None):
    """Every collective call of a job in DIRECTORY (one trace per rank), matched across ranks.

    Per call (matched by step, process group, collective and sequence number): the ranks, the size,
    latency (the shortest duration across ranks), algorithm and bus bandwidth by NCCL's formulas, the
    GPU link's bandwidth and the % reached, start and end skew, the time early ranks waited, and the
    all_to_allv imbalance. Then the findings: calls far below the link bandwidth, and ranks whose late
    arrival makes the others wait. Works on NCCL (GPU kernels) and gloo (CPU ops) traces.

    \b
    Examples:
      kineto-sql collectives ./tb_logs/
      kineto-sql collectives ./tb_logs/ --jobs 4 --format json
    """
    from kineto_sql import collectives, ranks

    choice = engine_choice(engine_kind, tp_shell)
    files, refused = rank_dir_entries(directory, ranks.rank_files(directory))
    per_rank, failures = fan_out(collectives.rank_calls, [(str(p), r, choice) for p, r in files], jobs)
    failures = sorted(failures + [RankFailure(p, s) for p, s in refused])
    if not per_rank:
        raise all_failed(failures)
    thresholds = collectives.Thresholds(slow_pct, int(slow_min_mib * (1 << 20)), skew_min_us, skew_factor)
    report = collectives.build_report(per_rank, thresholds)
    findings = pd.DataFrame(report.findings, columns=["rule", "impact_us", "step", "collective", "seq", "evidence"])
    if fmt == "json":
        emit_json({"ranks": report.ranks, "headline": report.headline, "calls": frame_records(report.calls),
                   "findings": frame_records(findings),
                   "failed_ranks": [{"path": f.path, "error": f.reason} for f in failures]})
        return _fail_on(failures)
    if fmt == "csv":
        emit_frame(report.calls, fmt)
        return _fail_on(failures)
    click.echo(report.headline)
    shown = _compact(report.calls if limit <= 0 else report.calls.head(limit))
    emit_frame(shown, fmt, title=f"Collective calls across {len(report.ranks)} ranks "
                                          f"({len(shown)} of {len(report.calls)})")
    if findings.empty:
        click.echo("No collective is far below the link bandwidth, and no rank makes the others wait.")
    for f in findings.itertuples(index=False):
        click.echo(f"- [{f.rule}] {f.evidence} (about {f.impact_us / 1e3:.2f} ms)")
    _fail_on(failures)


def _fail_on(failures) -> None:
    """The good ranks are reported; each bad one is named on stderr and the command exits 1."""
    for failure in failures:
        click.echo(f"error: rank file not loaded: {failure.sentence()}", err=True)
    if failures:
        raise SystemExit(1)


def _compact(calls: pd.DataFrame) -> pd.DataFrame:
    """The columns a person reads first, rounded, so the table fits a terminal."""
    from kineto_sql.collectives import _size

    return pd.DataFrame({
        "step": calls["step"], "collective": calls["collective"], "seq": calls["seq"], "ranks": calls["ranks"],
        "size": [_size(v) for v in calls["size_bytes"]],
        "lat_us": calls["latency_us"].round(1), "busbw_GB/s": calls["busbw_gbps"].round(2),
        "%link": calls["pct_of_link"].round(1), "skew_us": calls["start_skew_us"].round(1),
        "end_skew_us": calls["end_skew_us"].round(1), "wait_us": calls["wait_us"].round(1),
        "last": calls["last_rank"], "imbal": calls["imbalance"].round(2),
    })
