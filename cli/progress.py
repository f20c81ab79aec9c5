"""Progress for people and for pipes: the library logs its stages (logger `kineto_sql`); the CLI shows them.

On a terminal, commands with a spinner (diagnose, ranks) show it and nothing else; when stderr is not a
terminal (a CI log, `2> file`), each stage is one plain line on stderr: `kineto-sql: [  1.2s] loaded ...`.
`--quiet` silences both; errors are still printed.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import Callable, Iterator

import click

LOGGER = "kineto_sql"
_QUIET = "kineto_sql.quiet"
_STARTED = time.perf_counter()


class _Elapsed(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"kineto-sql: [{time.perf_counter() - _STARTED:6.1f}s] {record.getMessage()}"


class _Handler(logging.StreamHandler):
    """Writes to the *current* sys.stderr (click's test runner swaps it)."""

    def __init__(self):
        super().__init__()
        self.setFormatter(_Elapsed())

    def emit(self, record):
        self.stream = sys.stderr
        super().emit(record)


_handler = _Handler()


def configure(quiet: bool) -> None:
    """Plain stage lines on stderr when it is not a terminal, unless quiet."""
    global _STARTED
    _STARTED = time.perf_counter()
    logger = logging.getLogger(LOGGER)
    logger.removeHandler(_handler)
    logger.propagate = False
    if quiet or sys.stderr.isatty():
        logger.setLevel(logging.WARNING)
        return
    logger.setLevel(logging.INFO)
    logger.addHandler(_handler)


def _set_quiet(ctx: click.Context, _param, value: bool) -> None:
    ctx.meta[_QUIET] = value
    configure(value)


def set_quiet() -> None:
    """What --quiet does, for its deprecated alias --no-progress."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[_QUIET] = True
    configure(True)


def quiet_option(func):
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet, is_eager=True,
                        help="No progress on stderr (by default: a spinner on a terminal, plain log lines "
                             "otherwise).")(func)


def is_quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.meta.get(_QUIET))


def stage(text: str) -> None:
    """One progress line (a command's own stage, beside the library's)."""
    logging.getLogger(LOGGER + ".cli").info(text)


class _SpinnerHandler(logging.Handler):
    """The library's stage lines, as the spinner's text."""

    def __init__(self, update: Callable[[str], None]):
        super().__init__(logging.INFO)
        self.update = update

    def emit(self, record):
        self.update(record.getMessage())


@contextlib.contextmanager
def spinner(first: str = "loading") -> Iterator[Callable[[str], None]]:
    """On a terminal (unless quiet) a spinner with the elapsed time whose text follows the stages (the
    library's log lines and what the command says through the function it yields); otherwise the plain
    stage lines only."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    show = not is_quiet() and sys.stderr.isatty()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True, disable=not show) as bar:
        task = bar.add_task(first, total=None)
        logger = logging.getLogger(LOGGER)
        handler, level = _SpinnerHandler(lambda text: bar.update(task, description=text)), logger.level
        if show:
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        try:
            yield lambda text: (bar.update(task, description=text), stage(text))
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
