"""`kineto-sql collectives DIR`: every collective call matched across ranks: latency, bandwidth, skew."""
from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.output import (finish, emit_frame, emit_result, format_option, frame_records, friendly_errors,
                                   rank_failures)


@click.command("collectives")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@format_option()
@jobs_option
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
def command(directory: Path, fmt: str, jobs: int | None, slow_pct: float, slow_min_mib: float, skew_min_us: float,
            skew_factor: float, limit: int, engine_kind: str, tp_shell: str | None):
    """Every collective call of a job in DIRECTORY (one trace per rank), matched across ranks.

    Per call (matched by step, process group, collective and sequence number): the ranks, the size,
    latency (the shortest duration across ranks), algorithm and bus bandwidth by NCCL's formulas, the
    GPU link's bandwidth and the % reached, start and end skew, the time early ranks waited, and the
    all_to_allv imbalance. Skew is read on clocks aligned across ranks (each rank's offset from the ends of
    the matched calls, with a band; no skew is claimed inside it), and only where every rank holds the
    same calls: a sampled or partial capture is named instead of measured. Then the findings: calls far below the link bandwidth, and ranks whose late
    arrival makes the others wait. Works on NCCL and RCCL (GPU kernels) and gloo (CPU ops) traces.

    \b
    Which command for a job of several ranks:
      diagnose DIR     start here: the job's verdict, the ranks that matter, then each rank's findings
      ranks DIR        HTA's per-rank analyses side by side and the straggler, when you compare ranks
      collectives DIR  each collective call matched across ranks (bandwidth, skew), for a slow all_reduce
      fleet DIR        the same reading over hundreds of ranks or a cluster (dask), kept as Parquet

    \b
    Examples:
      kineto-sql collectives ./tb_logs/
      kineto-sql collectives ./tb_logs/ --jobs 4 --format json
    """
    from kineto_sql.fleet import collective_text
    from kineto_sql.fleet.executors import LocalExecutor
    from kineto_sql.fleet.run import run_fleet

    thresholds = collective_text.Thresholds(slow_pct, int(slow_min_mib * (1 << 20)), skew_min_us, skew_factor)
    run = run_fleet(directory, ("collectives",), LocalExecutor(jobs_or_default(jobs)), engine=engine_choice(engine_kind, tp_shell),
                    thresholds=thresholds)
    report, failures = run.report, run.failures
    calls = report.collective_skew
    headline = collective_text.headline(calls, report.ranks, report.clock)
    findings = pd.DataFrame(collective_text.findings(calls, thresholds),
                            columns=["rule", "impact_us", "step", "collective", "seq", "evidence"])
    code, reason = (1, rank_failures(f.sentence() for f in failures)) if failures else (0, None)
    if fmt == "json":
        emit_result({"ranks": report.ranks, "headline": headline, "clock": frame_records(report.clock),
                     "calls": frame_records(calls), "findings": frame_records(findings),
                     "failed_ranks": [{"path": f.path, "error": f.reason} for f in failures]}, code, reason)
        return finish(code, reason)
    if fmt == "csv":
        emit_frame(calls, fmt)
        return finish(code, reason)
    click.echo(headline)
    shown = _compact(calls if limit <= 0 else calls.head(limit))
    emit_frame(shown, fmt, title=f"Collective calls across {len(report.ranks)} ranks "
                                 f"({len(shown)} of {len(calls)}; times on aligned clocks)")
    emit_frame(report.clock.round(2), fmt, title="Clock offset of each rank against the lowest (us)")
    if findings.empty:
        click.echo("No collective is far below the link bandwidth, and no rank makes the others wait.")
    for f in findings.itertuples(index=False):
        click.echo(f"- [{f.rule}] {f.evidence} (about {f.impact_us / 1e3:.2f} ms)")
    finish(code, reason)


def _compact(calls: pd.DataFrame) -> pd.DataFrame:
    """The columns a person reads first, rounded, so the table fits a terminal."""
    from kineto_sql.fleet.collective_text import size_text

    return pd.DataFrame({
        "step": calls["step"], "collective": calls["collective"], "seq": calls["seq"], "ranks": calls["ranks"],
        "match": calls["status"], "size": [size_text(v) for v in calls["size_bytes"]],
        "lat_us": calls["latency_us"].round(1), "busbw_GB/s": calls["busbw_gbps"].round(2),
        "%link": calls["pct_of_link"].round(1), "skew_us": calls["start_skew_us"].round(1),
        "end_skew_us": calls["end_skew_us"].round(1), "wait_us": calls["wait_us"].round(1),
        "last": calls["last_rank"], "band_us": calls["band_us"].round(1), "imbal": calls["imbalance"].round(2),
    })
