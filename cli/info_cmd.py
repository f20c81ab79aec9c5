"""`kineto-sql info TRACE`: what was loaded, and what the loader had to fix and why."""
from __future__ import annotations

from pathlib import Path

import click
import pandas as pd
from rich.table import Table

from dataclasses import replace

from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.output import console as output_console
from kineto_sql.cli.output import finish, emit_frame, emit_result, format_option, friendly_errors, rank_failures
from kineto_sql.errors import KinetoSqlError
from kineto_sql.fleet.executors import RankFailure
from kineto_sql.fleet.run import all_failed
from kineto_sql.inputs import rank_dir_entries
from kineto_sql.cli.progress import spinner
from kineto_sql.loading.load import open_rank_dir, open_trace
from kineto_sql.trace_info import TraceInfo, describe


@click.command("info")
@click.argument("trace", type=click.Path(path_type=Path))
@format_option("text", "json", "csv")
@jobs_option
@engine_options
@friendly_errors
def command(trace: Path, fmt: str, jobs: int | None, engine_kind: str, tp_shell: str | None):
    """What was loaded from TRACE (a .json / .json.gz file, or a directory of rank traces).

    Ranks, devices, steps, threads, streams, event and slice counts, flows, and every change the loader
    made so that nothing is lost (overlapping slices moved to lanes, timestamps rebased, ids remapped).
    A file and a directory give the same shape: json's result is {"traces": [one object per trace]},
    csv one row per trace.

    \b
    Examples:
      kineto-sql info trace.json.gz
      kineto-sql info ./tb_logs/ --format json
    """
    choice = engine_choice(engine_kind, tp_shell)
    targets, refused = rank_dir_entries(trace, open_rank_dir(trace)) if trace.is_dir() else ([(trace, None)], [])
    infos, failures = [], [RankFailure(p, s) for p, s in refused]
    # info exists to show a loss: load anyway, report it, then refuse below unless --allow-loss.
    with spinner() as say:
        for k, (path, rank) in enumerate(targets, 1):
            if len(targets) > 1:
                say(f"rank file {k} of {len(targets)}: {path.name}")
            try:
                with open_trace(path, replace(choice, allow_loss=True), rank_from_name=rank,
                                jobs=jobs_or_default(jobs)) as tp:
                    infos.append(describe(tp))
            except KinetoSqlError as exc:
                if not trace.is_dir():
                    raise
                failures.append(RankFailure(str(path), str(exc)))  # a bad rank: the others are still described
    if not infos:
        raise all_failed(failures)
    lossy = [i for i in infos if not i.conserved]
    code, reason = 0, None
    if failures:
        code, reason = 1, rank_failures(sorted(f.sentence() for f in failures))
    elif lossy and not choice.allow_loss:
        code, reason = 2, (f"{lossy[0].source}: loading it loses data ({'; '.join(lossy[0].loss_sentences()[:3])}); "
                           "pass --allow-loss to accept it")
    if fmt == "json":
        emit_result({"traces": [i.to_json() for i in infos],
                     "failed_ranks": [{"path": f.path, "error": f.reason} for f in sorted(failures)]}, code, reason)
    elif fmt == "csv":
        emit_frame(pd.DataFrame([_flat(i) for i in infos]), "csv")
    else:
        for info in infos:
            _render(info)
    finish(code, reason)


def _flat(info: TraceInfo) -> dict:
    return {
        "source": info.source, "rank": info.rank, "engine": info.engine, "input_bytes": info.input_bytes,
        "steps": len(info.steps), "devices": len(info.devices), "streams": len(info.streams),
        **{f"events_{k}": v for k, v in info.events_by_phase.items()},
        "expected_slices": info.expected_slices, **info.counts, "conserved": info.conserved,
        "fixes": "; ".join(f"{f.kind}={f.count}" for f in info.fixes),
    }


def _render(info: TraceInfo) -> None:
    console = output_console()
    rank = f" (rank {info.rank})" if info.rank is not None else ""
    if console.is_terminal:
        console.rule(f"[bold]{info.source}{rank}")
    else:  # a rule would be as wide as the pipe console
        console.print(f"== {info.source}{rank} ==")
    console.print(f"{info.input_bytes / 1e6:.1f} MB JSON, schema {info.schema_version}, engine {info.engine}; "
                  f"recorded with: {', '.join(info.options()) or 'no profiler option (shapes, stacks, memory, flops)'}")
    for d in info.devices:
        console.print(f"device {d['id']}: {d['name']} ({d['memory_gb']} GB)")
    phases = ", ".join(f"{k}={v}" for k, v in info.events_by_phase.items())
    verdict = "[green]nothing lost[/]" if info.conserved else "[red]LOSS: see below[/]"
    console.print(f"events: {phases}\nslices: {info.counts['slices']} of {info.expected_slices} X+i events "
                  f"({verdict}); flows: {info.counts['flows']}; processes: {info.counts['processes']}; "
                  f"threads: {info.counts['threads']}")
    if len(info.steps):
        durs = info.steps["dur"] / 1e6
        console.print(f"steps: {len(info.steps)} ({info.steps['name'].iloc[0]} .. {info.steps['name'].iloc[-1]}), "
                      f"median {durs.median():.2f} ms, min {durs.min():.2f}, max {durs.max():.2f}")
    else:
        console.print("steps: no ProfilerStep#N on the CPU side (no profiler schedule, or a GPU-only capture)")
    if len(info.streams):
        emit_frame(info.streams, "table", title="GPU streams")
    emit_frame(info.processes, "table", title="processes")
    if not info.conserved:
        console.print("[red]LOSS[/]: " + "\n[red]LOSS[/]: ".join(info.loss_sentences()), soft_wrap=True)
    if info.fixes:
        kept = "every event kept" if info.conserved else "see LOSS above"
        table = Table(title=f"what the loader changed ({kept}) and why", show_lines=True)
        for col in ("change", "count", "why", "examples"):
            table.add_column(col, overflow="fold")
        for f in info.fixes:
            table.add_row(f.kind, str(f.count), f.why, "\n".join(f.examples))
        console.print(table)
    else:
        console.print("the loader changed nothing: the file loaded exactly as written")
    if info.ts_offset_ns:
        console.print(f"timestamps rebased: add {info.ts_offset_ns} ns to recover the file's clock")
    if not info.data_loss.empty:
        emit_frame(info.data_loss, "table", title="engine data-loss / error stats")
