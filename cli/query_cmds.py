"""The query commands: `list`, `show`, `run`, `lint`, `new`. Thin: parse, call the library, print."""
from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from kineto_sql.catalog.spec import KINDS, load_catalog
from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.progress import spinner
from kineto_sql.cli.output import (finish, emit_frame, emit_not_applicable, emit_result, format_option, frame_records,
                                   friendly_errors)
from kineto_sql.cli.rules_option import rules_option
from kineto_sql.loading.load import open_trace
from kineto_sql.devtools.paste import paste_bundle
from kineto_sql.run.runner import resolve_params, resolve_spec, run_query

param_option = click.option(
    "-p", "--param", "params", type=(str, str), multiple=True, metavar="NAME VALUE",
    help="Set a query parameter (repeatable); the value is converted to the declared type.")


@click.command("list")
@click.option("--kind", type=click.Choice(KINDS), default=None, help="Only queries of this kind.")
@format_option()
@rules_option
@friendly_errors
def list_command(kind: str | None, fmt: str):
    """Every query in the catalog: id, version, kind, what it needs, title.

    \b
    Examples:
      kineto-sql list
      kineto-sql list --kind detector --format json
    """
    cat = load_catalog()
    specs = [s for s in cat.specs if kind is None or s.kind == kind]
    rows = [{"id": s.id, "version": s.version, "kind": s.kind, "status": s.status, "needs": ",".join(s.needs) or "none",
             "params": " ".join(f"{p.name}={p.default}" for p in s.params), "title": s.title} for s in specs]
    emit_frame(pd.DataFrame(rows, columns=["id", "version", "kind", "status", "needs", "params", "title"]), fmt)
    for problem in cat.problems:
        click.echo(f"warning: {problem}", err=True)


@click.command("show")
@click.argument("query_id")
@click.option("--paste", is_flag=True, help="Print one self-contained script for the Perfetto UI query page.")
@param_option
@format_option("text", "markdown", "json")
@rules_option
@friendly_errors
def show_command(query_id: str, paste: bool, params: tuple[tuple[str, str], ...], fmt: str):
    """Show a query's page (what it detects, why it costs time, false positives, the example case, the fix,
    parameters); or, with --paste, a script for the Perfetto UI.

    The pasted script inlines every library module the query includes and ends with
    `SELECT * FROM <entrypoint>(<defaults>)`; it runs as is (and twice in a row) in the UI's query page.

    \b
    Examples:
      kineto-sql show reading.step_table
      kineto-sql show reading.step_table --paste -p sparse_below_pct 30 > step_table.sql
    """
    spec = resolve_spec(query_id)
    if paste:
        script = paste_bundle(spec, dict(params))
        return emit_result({"id": spec.id, "version": spec.version, "script": script}) if fmt == "json" else \
            click.echo(script, nl=False)
    from kineto_sql.catalog.user_rules import shown
    from kineto_sql.devtools.page import render_markdown, render_text

    if fmt == "json":
        emit_result({"id": spec.id, "version": spec.version, "kind": spec.kind, "title": spec.title,
                     "path": str(Path(spec.path).resolve()), "page": shown(render_text(spec)), "sql": Path(spec.path).read_text()})
    else:
        click.echo(shown(render_markdown(spec) if fmt == "markdown" else render_text(spec)), nl=False)


@click.command("run")
@click.argument("query_ids", nargs=-1, required=True, metavar="QUERY_ID...")
@click.argument("trace", type=click.Path(path_type=Path))
@param_option
@format_option()
@jobs_option
@rules_option
@engine_options
@friendly_errors
def run_command(query_ids: tuple[str, ...], trace: Path, params: tuple[tuple[str, str], ...], fmt: str,
                jobs: int | None, engine_kind: str, tp_shell: str | None):
    """Run one or more queries on TRACE and print their rows: the trace is loaded once for all of them.

    Each `-p NAME VALUE` goes to every named query that declares NAME (one that none declares is an
    error). Queries, parameters and values are checked before the trace is loaded. When the trace lacks
    what a query needs (no steps, no GPU...) it prints `not applicable: ...` and exits 0. json has one
    shape however many queries: the envelope's result is {"trace", "queries": [{"id", "version", "title",
    "not_applicable", "columns", "rows"}]} (not_applicable is null or the reason). With several queries,
    csv starts each table with a `# ID@VERSION` line. Bad input (unknown query or parameter, unreadable trace)
    is one sentence and exit status 2.

    \b
    Examples:
      kineto-sql run reading.step_table trace.json.gz
      kineto-sql run reading.op_table trace.json.gz -p top_n 10 --format csv
      kineto-sql run hta.kernel_breakdown hta.idle_time_breakdown hta.queue_length trace.json.gz
    """
    plan = list(_plan(query_ids, dict(params)))
    with spinner() as say, open_trace(trace, engine_choice(engine_kind, tp_shell), jobs=jobs_or_default(jobs)) as tp:
        results = []
        for k, (spec, values) in enumerate(plan, 1):
            say(f"query {k} of {len(plan)}: {spec.id}")
            results.append(run_query(tp, spec, values))
    if fmt == "json":
        emit_result({"trace": str(trace), "queries": [
            {"id": r.spec.id, "version": r.spec.version, "title": r.spec.title, "not_applicable": r.not_applicable,
             "columns": [] if r.not_applicable else [str(c) for c in r.df.columns],
             "rows": [] if r.not_applicable else frame_records(r.df)} for r in results]})
    elif len(results) == 1:
        _emit_result(results[0], fmt)
    else:
        for i, result in enumerate(results):
            if fmt == "csv":
                click.echo(f"{'' if i == 0 else chr(10)}# {result.id_version}")
            _emit_result(result, fmt)


def _plan(query_ids: tuple[str, ...], params: dict[str, str]):
    """Each query with the `-p` values it declares, coerced now: a bad id, name or value fails before the
    trace is loaded."""
    specs = [resolve_spec(query_id) for query_id in dict.fromkeys(query_ids)]
    for name in params:
        if not any(name in {p.name for p in spec.params} for spec in specs):
            specs[0].param(name)  # the catalog's own sentence for an unknown parameter
    for spec in specs:
        mine = {k: v for k, v in params.items() if k in {p.name for p in spec.params}}
        resolve_params(spec, mine)
        yield spec, mine


def _emit_result(result, fmt: str) -> None:
    if result.not_applicable:
        emit_not_applicable(result.not_applicable, fmt)
    else:
        emit_frame(result.df, fmt, title=f"{result.id_version}: {result.spec.title}")


@click.command("lint")
@click.argument("ids", nargs=-1)
@click.option("--update-lock", is_flag=True, help="Write queries/LOCK.toml for every query and lib module (or "
                                                  "for IDS) after you bumped versions.")
@click.option("--force", is_flag=True, help="With --update-lock: accept changed SQL or cases at the same "
                                            "version (only for a query not released yet).")
@format_option("text", "json")
@rules_option
@friendly_errors
def lint_command(ids: tuple[str, ...], update_lock: bool, force: bool, fmt: str):
    """Check every query file against queries/README.md; print `path:line: what to fix`.

    Exit status 1 when anything is wrong. With --rules DIR, the user rules there are linted too (by the
    same checks; `kineto-sql test --rules DIR` runs their cases). `--update-lock` writes the generated
    queries/LOCK.toml (per query: version, SQL hash, included lib versions, case digests; it refuses where SQL
    or a case changed and the version did not) and queries/REFERENCE.md. IDS (e.g. catalog.gc_gil_stall, lib.steps) limit the
    update to those entries.

    \b
    Examples:
      kineto-sql lint
      kineto-sql lint --update-lock catalog.gc_gil_stall
    """
    from kineto_sql.devtools import lint
    from kineto_sql.catalog import lock as versions

    from kineto_sql.catalog import user_rules

    locked = None
    if update_lock:
        refused = versions.update_lock(ids=list(ids) or None, force=force)
        if refused:
            reason = f"the lock was not updated: {len(refused)} refusal(s)"
            if fmt == "json":
                emit_result({"problems": [user_rules.shown(str(i)) for i in refused], "locked": None}, 1, reason)
            else:
                for issue in refused:
                    click.echo(user_rules.shown(str(issue)))
            finish(1, reason)
        from kineto_sql.devtools.page import write_reference

        mine = user_rules.save_lock()
        where = ", ".join(map(str, mine)) if mine else f"{versions.lock_path()}; wrote {write_reference()}"
        locked = f"locked {', '.join(ids) if ids else 'every query and lib module'} in {where}"
        if fmt != "json":
            click.echo(locked)
    problems = [user_rules.shown(str(p)) for p in lint.lint()]
    reason = f"lint: {len(problems)} problem(s)" if problems else None
    if fmt == "json":
        emit_result({"problems": problems, "locked": locked}, 1 if problems else 0, reason)
    else:
        for problem in problems:
            click.echo(problem)
    finish(1 if problems else 0, reason)
    if fmt != "json":
        click.echo("lint: clean", err=True)


@click.command("new")
@click.argument("target")
@format_option("text", "json")
@friendly_errors
def new_command(target: str, fmt: str):
    """Scaffold a detector: queries/kineto/<area>/<name>.sql and its <name>.test.toml, from templates.

    TARGET is AREA.NAME (area catalog, guide, reading or hta) or a bare NAME (goes to catalog). Name
    the bad pattern, not the fix.

    \b
    Examples:
      kineto-sql new catalog.sync_forcing_op
      kineto-sql new eager_small_op_storm
    """
    from kineto_sql.devtools.scaffold import scaffold

    made = scaffold(target)
    if fmt == "json":
        return emit_result({"id": made.query_id, "sql_path": str(made.sql_path), "test_path": str(made.test_path)})
    click.echo(f"wrote {made.sql_path}\nwrote {made.test_path}")
    click.echo(f"next: edit both, `kineto-sql try {made.query_id} golden/traces` to see where it fires, "
               "then `kineto-sql lint --update-lock`")


commands = (list_command, show_command, run_command, lint_command, new_command)
