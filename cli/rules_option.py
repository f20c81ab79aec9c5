"""`--rules DIR` (repeatable): your own rule directories, beside the built-in rules (kineto_sql.catalog.user_rules)."""
from __future__ import annotations

from pathlib import Path

import click

from kineto_sql.catalog import user_rules


def _activate(ctx: click.Context, _param, value: tuple[Path, ...]) -> None:
    from kineto_sql.cli.output import fail
    from kineto_sql.errors import KinetoSqlError

    try:
        user_rules.activate(list(value) or user_rules.configured_dirs())
    except KinetoSqlError as exc:
        fail(str(exc), "bad_input", as_json=False, command=ctx.command.name)


def rules_option(func):
    return click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
                        expose_value=False, is_eager=True, callback=_activate, metavar="DIR",
                        help="A directory of your own rules (<area>/<name>.sql + <name>.test.toml, as in "
                             "queries/kineto/), used beside the built-in ones (repeatable). Default: "
                             "[tool.kineto-sql] rules in ./pyproject.toml.")(func)
