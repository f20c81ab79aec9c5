"""The one place where Python values become SQL text. sqlglot quotes them; nothing else formats SQL.

The trace processor's RPC has no bind parameters, so a query parameter or a metadata value has to be
written into the statement. Doing it only here, through sqlglot's literal builder, keeps it injection-proof.
"""
from __future__ import annotations

import re

from sqlglot import exp

from kineto_sql.sql.text import segments

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")


def literal(value) -> str:
    """A typed SQL literal: NULL, integer, real, TRUE/FALSE, or a quoted string."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value != value:
        return "NULL"
    if value is not None and not isinstance(value, (int, float, str)):
        raise TypeError(f"cannot turn {type(value).__name__} into a SQL literal")
    return exp.convert(value).sql(dialect="sqlite")


def identifier(name: str) -> str:
    """A bare SQL identifier, refused unless it is a plain word (no quoting games)."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return name


def table_function_call(function: str, args: list) -> str:
    """`SELECT * FROM function(arg, ...)` with every argument as a literal."""
    call = exp.Anonymous(this=identifier(function), expressions=[exp.maybe_parse(literal(a)) for a in args])
    return exp.select(exp.Star()).from_(exp.Table(this=call)).sql(dialect="sqlite", normalize_functions=False)



def bind(template: str, values: dict) -> str:
    """Replaces each `:name` placeholder of a .sql text with the literal of values[name].

    Placeholders are found in code only (`sql_text.segments`), so text inside strings and comments is
    never touched. A placeholder without a value is an error, never an empty string.
    """
    pieces = []
    for kind, text in segments(template):
        if kind != "code":
            pieces.append(text)
            continue

        def replace(match: re.Match) -> str:
            name = match.group(1)
            if name not in values:
                raise KeyError(f"no value for SQL placeholder :{name}")
            return literal(values[name])

        pieces.append(_PLACEHOLDER.sub(replace, text))
    return "".join(pieces)


def include_statement(module: str) -> str:
    """`INCLUDE PERFETTO MODULE a.b.c;` for a module name made only of plain SQL words."""
    return "INCLUDE PERFETTO MODULE " + ".".join(identifier(part) for part in module.split(".")) + ";"
