"""Printing rows: `--format table|csv|json` for every command, and the one way errors reach the user."""
from __future__ import annotations

import errno
import functools
import re
import sys

import click
import orjson
from rich.console import Console
from rich.table import Table

from kineto_sql.errors import KinetoSqlError, TraceInputError
from kineto_sql.inputs import check_input, name_problem, one_line

FORMATS = ("table", "csv", "json")

format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
    help="table for people, csv or json (stable keys) for machines.")


# Units of a column, from its name (the queries' convention: ts / dur / *_dur in ns, *_us, *_pct...).
_UNITS = ((re.compile(r"(^|_)(ts|dur|ns)$"), "ns"), (re.compile(r"_us$"), "us"), (re.compile(r"_ms$"), "ms"),
          (re.compile(r"_(pct|percent)$"), "%"), (re.compile(r"_bytes$"), "bytes"), (re.compile(r"_gb$"), "GB"),
          (re.compile(r"_s$"), "s"))
# Columns that hold identifiers or names: never wrapped, in any terminal width.
_NO_WRAP = re.compile(r"(^|_)(id|ids|name|query|op|kernel|source|path|version)$")
# Without a terminal (a pipe, a CI log) nothing limits the width: a table is as wide as its rows.
PIPE_WIDTH = 100_000


def header(column: str) -> str:
    """A table header with its unit: `dur` -> `dur (ns)`, `gpu_busy_pct` -> `gpu_busy_pct (%)`."""
    for pattern, unit in _UNITS:
        if pattern.search(column):
            return f"{column} ({unit})"
    return column


def console(stderr: bool = False) -> Console:
    """A rich Console that never wraps in a pipe (full width) and uses at least 120 columns on a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty():
        return Console(file=stream, width=PIPE_WIDTH, soft_wrap=True)
    return Console(file=stream, width=max(120, Console(file=stream).width))


def emit_frame(df: pd.DataFrame, fmt: str, title: str | None = None) -> None:
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    elif fmt == "json":
        click.echo(orjson.dumps(frame_records(df), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())
    else:
        table = Table(title=title, show_lines=False, title_justify="left")
        for column in df.columns:
            keep_whole = bool(_NO_WRAP.search(str(column)))
            table.add_column(header(str(column)), overflow="ignore" if keep_whole else "fold", no_wrap=keep_whole)
        for row in df.itertuples(index=False):
            table.add_row(*("" if _missing(v) else str(v) for v in row))
        console().print(table)


def emit_not_applicable(reason: str, fmt: str) -> None:
    """A query the trace cannot answer: JSON stays JSON, csv gets no rows (the reason goes to stderr)."""
    if fmt == "json":
        emit_json({"not_applicable": reason})
    elif fmt == "csv":
        click.echo(f"not applicable: {reason}", err=True)
    else:
        click.echo(f"not applicable: {reason}")


def frame_records(df: pd.DataFrame) -> list[dict]:
    return [{k: (None if _missing(v) else v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def emit_json(obj) -> None:
    click.echo(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
                            default=str).decode())


def _missing(value) -> bool:
    try:
        import pandas as pd  # here, not at import: diagnose never needs it (kineto_sql.rows)

        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


# The arguments that name what a command reads (a trace, a rank directory): checked before the command runs
# (kineto_sql.inputs: a file name that is not UTF-8, a FIFO or a device).
INPUT_ARGS = ("trace", "target", "directory", "before", "after", "traces")
# ... and those that name what it writes: a name that is not UTF-8 is refused there too (pyarrow, JSON and the
# report's own text cannot hold it)
OUTPUT_ARGS = ("output", "out")


def friendly_errors(func):
    """Turns a KinetoSqlError into one sentence on stderr and exit status 2: never a traceback. Ctrl-C is one
    line and exit status 130 (128 + SIGINT, what a shell reports for a command the signal ended)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            for name in INPUT_ARGS:
                value = kwargs.get(name)
                for path in value if isinstance(value, tuple) else (value,):
                    check_input(path)
            for name in OUTPUT_ARGS:
                problem = kwargs.get(name) is not None and name_problem(kwargs[name], output=True)
                if problem:
                    raise TraceInputError(problem)
            return func(*args, **kwargs)
        except KinetoSqlError as exc:
            click.echo(f"error: {one_line(exc)}", err=True)
            sys.exit(2)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            from kineto_sql.outputs import write_error

            click.echo(f"error: {write_error('the output', exc, atomic=False)}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            from kineto_sql.cli import interrupt

            interrupt.handled()
            click.echo("error: interrupted (Ctrl-C)", err=True)
            sys.exit(130)
        except MemoryError:
            from kineto_sql.engine.memory import address_space_cap
            cap = address_space_cap()
            where = f" (this process is capped at {cap / 2**30:.1f} GiB of address space: ulimit -v)" if cap else ""
            click.echo(f"error: out of memory while loading{where}; free memory, raise the cap, or load a shorter "
                       "capture", err=True)
            sys.exit(2)
    return wrapper
