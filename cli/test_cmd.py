"""`kineto-sql test [ID...] [--rules DIR]`: run rules' own test files (their `[[case]]`s and `[traces]` checks)
with the judge the project's tests use (kineto_sql/devtools/rule_tests.py).

A command of its own rather than `lint --cases`: lint reads files and answers in a second (pre-commit runs
it, `--update-lock` runs it); a case loads a trace into the engine, seconds each. Two jobs, two exit
statuses a CI job can tell apart, as ruff and pytest are two commands.
"""
from __future__ import annotations

import click

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.output import emit_frame, emit_result, finish, format_option, friendly_errors
from kineto_sql.cli.rules_option import rules_option


@click.command("test")
@click.argument("ids", nargs=-1, metavar="[ID...]")
@click.option("--cases-only", is_flag=True,
              help="Only the [[case]]s (tiny built traces), not the [traces] checks on golden / corpus traces.")
@format_option("text", "markdown", "json", "csv")
@rules_option
@engine_options
@friendly_errors
def command(ids: tuple[str, ...], cases_only: bool, fmt: str, engine_kind: str, tp_shell: str | None):
    """Run rules' test files (<name>.test.toml beside <name>.sql) and say which cases pass: the same
    tests, judged the same way, as the built-in rules' in this project's test suite.

    Which rules: the IDs given; else, with --rules DIR (or [tool.kineto-sql] rules in ./pyproject.toml),
    every rule there; else every built-in rule (minutes). A case passes when the rule answers not
    applicable exactly when the case says so, gives expect_count rows and the rows pinned under columns
    (sorted; floats to 6 significant digits). A [traces] check runs where its golden: / corpus: trace is
    present (else it is skipped, and said); a `todo` one is a known wrong answer. Exit status 1 when a
    case or check fails or a test file cannot be read (each is named, with why); 0 when all pass.

    \b
    Examples:
      kineto-sql test --rules rules/
      kineto-sql test catalog.slow_user_op --rules rules/ --format json
      kineto-sql test catalog.gc_gil_stall --cases-only
    """
    from kineto_sql.catalog import user_rules
    from kineto_sql.catalog.cases import load_rule_tests
    from kineto_sql.catalog.spec import load_catalog
    from kineto_sql.devtools.rule_tests import FAILED, PASSED, SKIPPED, XPASS, run_rule_tests
    from kineto_sql.run.runner import resolve_spec

    catalog = load_catalog()
    if ids:
        specs = [resolve_spec(i) for i in dict.fromkeys(ids)]
    else:
        mine = user_rules.user_rule_ids()
        specs = [s for s in catalog.specs if s.id in mine] if mine else list(catalog.specs)
    tests = [load_rule_tests(s.id, s.path) for s in specs]

    def said(outcome) -> None:
        if fmt == "text":
            where = user_rules.shown(outcome.message)
            click.echo(f"{outcome.outcome:7s} {outcome.id}" + (f"  {where}" if where else ""))

    outcomes = run_rule_tests(tests, engine_choice(engine_kind, tp_shell), traces=not cases_only, on_outcome=said)
    counts = {o: sum(x.outcome == o for x in outcomes) for o in (PASSED, FAILED, SKIPPED, "xfail", XPASS)}
    failed = [x for x in outcomes if x.outcome == FAILED]
    summary = (f"{len(outcomes)} case(s) and check(s) of {len(specs)} rule(s): "
               + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    reason = (f"test: {len(failed)} of {len(outcomes)} failed ({summary}): " + ", ".join(x.id for x in failed[:5])
              + (", ..." if len(failed) > 5 else "")) if failed else None
    rows = [{**x.to_json(), "message": user_rules.shown(x.message)} for x in outcomes]
    if fmt == "json":
        emit_result({"rules": [s.id for s in specs], "outcomes": rows, "counts": counts}, 1 if failed else 0, reason)
    elif fmt != "text":
        import pandas as pd

        emit_frame(pd.DataFrame(rows, columns=["rule_id", "kind", "name", "outcome", "message"]), fmt)
    if not failed:
        click.echo(summary, err=True)
    finish(1 if failed else 0, reason)  # a failure: its one `error:` line, with the counts
