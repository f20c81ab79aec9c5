"""`kineto-sql try`: run one rule over many traces; optionally write the outcomes as test cases."""
from __future__ import annotations

from pathlib import Path

import click

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.output import finish, emit_frame, emit_result, format_option, friendly_errors
from kineto_sql.cli.rules_option import rules_option
from kineto_sql.run.runner import resolve_params, resolve_spec


@click.command("try")
@click.argument("query_id")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-p", "--param", "params", type=(str, str), multiple=True, metavar="NAME VALUE",
              help="Set a parameter (repeatable).")
@click.option("--fires-when", default=None, metavar="COLUMN[=VALUE]",
              help="Count only rows where COLUMN is true / non-zero (or equals VALUE) as findings.")
@click.option("--write-cases", is_flag=True,
              help="Add the outcomes on golden/ and corpus traces to the rule's <name>.test.toml [traces].")
@click.option("--check", default=None, metavar="NAME",
              help="With --write-cases: write into [traces.NAME] (default [traces]; needed with --fires-when).")
@format_option("text", "markdown", "json", "csv")
@rules_option
@engine_options
@friendly_errors
def command(query_id: str, traces: tuple[Path, ...], params, fires_when: str | None, write_cases: bool,
            check: str | None, fmt: str, engine_kind: str, tp_shell: str | None):
    """Run one rule on every trace given (files, or directories searched for .json / .json.gz) and print
    per trace: fires (with the top finding), silent, or not applicable.

    \b
    Examples:
      kineto-sql try catalog.gc_gil_stall golden/traces
      kineto-sql try catalog.gc_gil_stall golden/traces ../shared/corpus --write-cases
      kineto-sql try reading.step_table golden/traces --fires-when cold_start --check cold_start --write-cases
    """
    from kineto_sql.devtools import try_rule

    spec = resolve_spec(query_id)
    values = resolve_params(spec, dict(params))
    if write_cases and params:
        raise click.UsageError("--write-cases records outcomes at the defaults; drop -p")
    if write_cases and fires_when and not check:
        raise click.UsageError("--fires-when with --write-cases needs --check NAME (a [traces.NAME] sub-check)")
    paths = try_rule.trace_paths(list(traces))
    results = []
    for result in try_rule.try_rule(spec, paths, values, fires_when, engine_choice(engine_kind, tp_shell)):
        results.append(result)
        if fmt == "text":
            label = result.name or str(result.path)
            detail = f"{result.count} finding(s); top: {result.top}" if result.outcome == "fires" else result.top
            click.echo(f"{result.outcome:15s} {label}" + (f"  {detail}" if detail else ""))
    counts = {o: sum(r.outcome == o for r in results) for o in ("fires", "silent", "not applicable", "error")}
    click.echo(", ".join(f"{n} {o}" for o, n in counts.items()), err=True)
    added, conflicts = [], []
    if write_cases:
        added, conflicts, unnamed = try_rule.write_cases(spec, results, check or "default", fires_when)
        for line in added:
            click.echo(f"added {line}", err=True)
        for line in conflicts:
            click.echo(f"conflict (left as it is): {line}", err=True)
        if unnamed:
            click.echo(f"{len(unnamed)} trace(s) outside golden/traces and the shared corpus were not written",
                       err=True)
    code, reason = (1, f"{len(conflicts)} case(s) conflict with the test file (left as they are)") if conflicts \
        else (0, None)
    rows = [{"trace": str(r.path), "name": r.name, "outcome": r.outcome, "count": r.count, "top": r.top}
            for r in results]
    if fmt == "json":
        emit_result({"id": spec.id, "version": spec.version, "traces": rows, "counts": counts, "added": added,
                     "conflicts": conflicts}, code, reason)
    elif fmt != "text":
        import pandas as pd

        emit_frame(pd.DataFrame(rows, columns=["trace", "name", "outcome", "count", "top"]), fmt)
    finish(code, reason)
