"""Printing rows: `--format table|csv|json` for every command, and the one way errors reach the user."""
from __future__ import annotations

import functools
import sys

import click
import orjson
import pandas as pd
from rich.console import Console
from rich.table import Table

from kineto_sql.errors import KinetoSqlError

FORMATS = ("table", "csv", "json")

format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
    help="table for people, csv or json (stable keys) for machines.")


def emit_frame(df: pd.DataFrame, fmt: str, title: str | None = None) -> None:
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    elif fmt == "json":
        click.echo(orjson.dumps(frame_records(df), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())
    else:
        table = Table(title=title, show_lines=False)
        for column in df.columns:
            table.add_column(str(column), overflow="fold")
        for row in df.itertuples(index=False):
            table.add_row(*("" if _missing(v) else str(v) for v in row))
        Console(width=max(120, Console().width)).print(table)


def frame_records(df: pd.DataFrame) -> list[dict]:
    return [{k: (None if _missing(v) else v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def emit_json(obj) -> None:
    click.echo(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
                            default=str).decode())


def _missing(value) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def friendly_errors(func):
    """Turns a KinetoSqlError into one sentence on stderr and exit status 2: never a traceback."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except KinetoSqlError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except MemoryError:
            from kineto_sql.engine.memory import address_space_cap
            cap = address_space_cap()
            where = f" (this process is capped at {cap / 2**30:.1f} GiB of address space: ulimit -v)" if cap else ""
            click.echo(f"error: out of memory while loading{where}; free memory, raise the cap, or load a shorter "
                       "capture", err=True)
            sys.exit(2)
    return wrapper
