"""Printing rows: `--format table|csv|json` for every command, and the one way errors reach the user."""
from __future__ import annotations

import errno
import functools
import math
import numbers
import os
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
    """csv and json keep every value exact; the table is for people: durations, percentages and bytes in
    their units, every number whole. Where the columns do not fit the width, the table continues below
    with the first text column repeated (as pandas prints a wide frame); long names fold."""
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    elif fmt == "json":
        click.echo(orjson.dumps(frame_records(df), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())
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
        need = {c: max([len(x) for x in cells[c]] + [min(len(c), 8) if numeric[c] else len(c)]) for c in cells}
    key = next((c for c in cells if not numeric[c]), None)
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
