"""Printing: the one `--format` family of every command, the JSON envelope (kineto_sql/envelope.py), and the
one way errors reach the user (one `error: ...` line on stderr; the error envelope too under --format json)."""
from __future__ import annotations

import errno
import functools
import math
import numbers
import os
import re
import sys

import click
from rich.console import Console
from rich.table import Table

from kineto_sql import envelope
from kineto_sql.errors import DataLossError, KinetoSqlError, TraceInputError
from kineto_sql.inputs import check_input, name_problem, one_line

FORMATS = ("text", "markdown", "json", "csv", "html")
TABLE_FORMATS = ("text", "markdown", "json", "csv")
# The same words on every command; click lists the formats each one has.
FORMAT_HELP = ("text for people; markdown; json: one envelope {schema_version, command, result} or {..., error} "
               "(README: Machine output); csv: the rows; html: a page. Each command offers those that apply.")


class FormatChoice(click.Choice):
    """The command's formats; `table` (the old name of text) is still accepted, and not listed."""

    def convert(self, value, param, ctx):
        return super().convert("text" if value == "table" else value, param, ctx)


def format_option(*choices: str):
    choices = choices or TABLE_FORMATS
    return click.option("--format", "fmt", type=FormatChoice(choices), default="text", show_default=True,
                        help=FORMAT_HELP)


# Units of a column, from its name (the queries' convention: ts / dur / *_dur in ns, *_us, *_pct...).
_UNITS = ((re.compile(r"(^|_)(ts|dur|ns)$"), "ns"), (re.compile(r"_us$"), "us"), (re.compile(r"_ms$"), "ms"),
          (re.compile(r"_(pct|percent)$"), "%"), (re.compile(r"_bytes$"), "bytes"), (re.compile(r"_gb$"), "GB"),
          (re.compile(r"_s$"), "s"))
# Without a terminal (a pipe, a CI log) nothing limits the width: a table is as wide as its rows.
PIPE_WIDTH = 100_000


def console(stderr: bool = False) -> Console:
    """A rich Console as wide as the terminal; in a pipe as wide as COLUMNS says, else unlimited (a CI log
    or `| less` keeps every row on one line)."""
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty():
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit():
            return Console(file=stream, width=int(columns))
        return Console(file=stream, width=PIPE_WIDTH, soft_wrap=True)
    return Console(file=stream)


def emit_frame(df: pd.DataFrame, fmt: str, title: str | None = None) -> None:
    """csv and json keep every value exact (json: the rows as the envelope's result); text and markdown are
    for people: durations, percentages and bytes in their units. Where a text table does not fit the width,
    it continues below with the first text column repeated (as pandas prints a wide frame); long names fold."""
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    elif fmt == "json":
        emit_result(frame_records(df))
    elif fmt == "markdown":
        people = df.copy()
        for column in people.columns:
            people[column] = [human(str(column), v) for v in df[column]]
        align = ["right" if _is_numeric(df[c]) else "left" for c in df.columns]
        click.echo((f"**{title}**\n\n" if title else "")
                   + people.to_markdown(index=False, disable_numparse=True, colalign=align) + "\n")
    else:
        out = console()
        for table in people_tables(df, title, out.width):
            out.print(table)


# a column's borders and padding in a rich table: "│ " before the cell and " " after it
_FRAME = 3


def people_tables(df: pd.DataFrame, title: str | None, width: int) -> list[Table]:
    cells = {str(c): [human(str(c), v) for v in df[c]] for c in df.columns}
    numeric = {c: _is_numeric(df[c]) for c in cells}
    need = {c: max([len(x) for x in cells[c]] + [len(c)]) for c in cells}
    if sum(need.values()) + _FRAME * len(need) + 1 > width:  # headers of numbers fold before anything splits
        need = {c: max([len(x) for x in cells[c]] + [min(len(c), 8) if numeric[c] or not any(cells[c]) else len(c)])
                for c in cells}
    # the column that names a row, repeated in every continued table: a rank table's rank, else the first
    # column of text (one without any value names nothing)
    key = "rank" if "rank" in cells else next((c for c in cells if not numeric[c] and any(cells[c])), None)
    key_width = min(need[key], max(12, width // 3)) if key else 0
    groups, group, used = [], [], 1 + (key_width + _FRAME if key else 0)
    for column in cells:
        if column == key:
            continue
        if group and used + need[column] + _FRAME > width:
            groups.append(group)
            group, used = [], 1 + (key_width + _FRAME if key else 0)
        group.append(column)
        used += need[column] + _FRAME
    groups.append(group)
    tables = []
    for i, group in enumerate(groups):
        shown = ([key] if key else []) + group
        table = Table(title=title if i == 0 else f"(continued: columns {', '.join(group)})", title_justify="left")
        for column in shown:
            limit = key_width if column == key else need[column]
            table.add_column(column, justify="right" if numeric[column] else "left", overflow="fold",
                             min_width=limit if numeric[column] else None,
                             max_width=limit)
        for row in zip(*(cells[c] for c in shown)):
            table.add_row(*row)
        tables.append(table)
    return tables


def human(column: str, value) -> str:
    """One cell for people: `dur` 603558000 -> `603.6 ms`, `gpu_busy_pct` 92.486 -> `92.5%`, `*_bytes`
    16777216 -> `16.0 MiB`, other floats to 4 significant digits; ids, counts and text as they are."""
    if _missing(value):
        return ""
    if not _is_number(value):
        return str(value)
    unit = _unit(column)
    if unit in _TO_NS:
        ns = float(value) * _TO_NS[unit]
        return f"{ns / 1e9:.6f} s" if _TS.search(column) else _duration(ns)
    if unit == "%":
        return f"{float(value):.1f}%"
    if unit == "bytes":
        return _bytes(float(value))
    if isinstance(value, numbers.Integral):
        return str(value)
    return _significant(float(value))


_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_TS = re.compile(r"(^|_)ts(_(ns|us|ms))?$")


def _unit(column: str) -> str | None:
    for pattern, unit in _UNITS:
        if pattern.search(column):
            return unit
    return None


def _duration(ns: float) -> str:
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(ns) >= scale:
            return f"{_significant(ns / scale)} {unit}"
    return f"{_significant(ns)} ns"


def _bytes(n: float) -> str:
    for scale, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _significant(x: float) -> str:
    """4 significant digits without an exponent: 92.48628 -> 92.49, 12345.6 -> 12346, 0.000123 -> 0.000123."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1000:
        return f"{x:.0f}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    text = f"{x:.{digits}f}"
    return text.rstrip("0").rstrip(".") if digits else text


def _is_numeric(series) -> bool:
    values = [v for v in series if not _missing(v)]
    return bool(values) and all(_is_number(v) for v in values)


def _is_number(value) -> bool:
    """int, float and numpy's numbers (registered as numbers.Real); not bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def emit_not_applicable(reason: str, fmt: str) -> None:
    """A query the trace cannot answer, in text, markdown and csv (csv gets no rows; the reason goes to
    stderr). In json it is part of the run's result (query_cmds)."""
    if fmt == "csv":
        click.echo(f"not applicable: {reason}", err=True)
    else:
        click.echo(f"not applicable: {reason}")


def frame_records(df: pd.DataFrame) -> list[dict]:
    return [{k: (None if _missing(v) else v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def command_name() -> str:
    """The running command's name (`run`, `info`...), as the envelope gives it."""
    ctx = click.get_current_context(silent=True)
    return ctx.command.name if ctx and ctx.command.name else "kineto-sql"


def emit_result(result, exit_code: int = 0, reason: str | None = None) -> None:
    """The command's answer as the JSON envelope on stdout; a non-zero exit (then `finish`) is said in it too."""
    click.echo(envelope.dumps(envelope.ok(command_name(), result, exit_code, reason)))


def render_result(result, exit_code: int = 0, reason: str | None = None) -> str:
    """The envelope as text, for a command that writes it to a file (-o)."""
    return envelope.dumps(envelope.ok(command_name(), result, exit_code, reason)) + "\n"


def finish(exit_code: int = 0, reason: str | None = None) -> None:
    """Ends a command that answered: with a non-zero status, one line on stderr saying why."""
    if exit_code:
        click.echo(f"error: {reason}", err=True)
        sys.exit(exit_code)


def rank_failures(sentences) -> str:
    """One line for every rank file that did not load (the command reports the others)."""
    return "; ".join(f"rank file not loaded: {s}" for s in sentences)


def fail(message: str, kind: str = "bad_input", exit_code: int = 2, as_json: bool | None = None,
         command: str | None = None) -> None:
    """The one way a command fails: `error: <sentence>` on stderr and, when json was asked, the error
    envelope on stdout (a program reading stdout gets JSON either way)."""
    if as_json is None:
        ctx = click.get_current_context(silent=True)
        as_json = bool(ctx and ctx.params.get("fmt") == "json")
    if as_json:
        click.echo(envelope.dumps(envelope.error(command or command_name(), message, kind)))
    click.echo(f"error: {message}", err=True)
    sys.exit(exit_code)


def emit_json(obj) -> None:
    """The envelope around obj (kept for the commands that build their result as one object)."""
    emit_result(obj)


def _missing(value) -> bool:
    try:
        import pandas as pd  # here, not at import: diagnose never needs it (kineto_sql.engine.rows)

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
        except DataLossError as exc:
            fail(one_line(exc), "data_loss")
        except KinetoSqlError as exc:
            fail(one_line(exc), "bad_input")
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
            from kineto_sql.outputs import write_error

            fail(write_error('the output', exc, atomic=False), "no_space")
        except KeyboardInterrupt:
            from kineto_sql.cli import interrupt

            interrupt.handled()
            fail("interrupted (Ctrl-C)", "interrupted", 130)
        except MemoryError:
            from kineto_sql.engine.memory import address_space_cap
            cap = address_space_cap()
            where = f" (this process is capped at {cap / 2**30:.1f} GiB of address space: ulimit -v)" if cap else ""
            fail(f"out of memory while loading{where}; free memory, raise the cap, or load a shorter capture",
                 "out_of_memory")
    return wrapper
