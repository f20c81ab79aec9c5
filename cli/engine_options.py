"""The options every trace-reading command shares: which engine runs the SQL, and whether a lossy load may go on."""
from __future__ import annotations

import click

from kineto_sql.cli.progress import quiet_option
from kineto_sql.engine.processor import TP_SHELL_ENV, EngineChoice

_ALLOW_LOSS = "kineto_sql.allow_loss"


def _remember_allow_loss(ctx: click.Context, _param, value: bool) -> None:
    ctx.meta[_ALLOW_LOSS] = value


def engine_options(func):
    func = quiet_option(func)
    func = click.option("--allow-loss", is_flag=True, expose_value=False, callback=_remember_allow_loss,
                        help="Go on when loading loses events (the loader could not keep some, or the engine "
                             "reports data loss); the loss is reported. Without it such a load exits 2.")(func)
    func = click.option("--tp-shell", type=click.Path(dir_okay=False), default=None,
                        help=f"A native trace_processor_shell to use instead of the embedded engine (or ${TP_SHELL_ENV}).")(func)
    func = click.option("--engine", "engine_kind", type=click.Choice(["auto", "wasm", "wasm64", "native"]),
                        default="auto", show_default=True,
                        help="auto: the embedded wasm engine, memory64 build for inputs over 1 GB; native with --tp-shell.")(func)
    return func


def allow_loss() -> bool:
    """Whether the running command got --allow-loss."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.meta.get(_ALLOW_LOSS))


def engine_choice(engine_kind: str, tp_shell: str | None) -> EngineChoice:
    return EngineChoice(engine_kind, tp_shell, allow_loss=allow_loss())


JOBS_HELP = ("Processes at once: a rank directory's ranks (one engine each), or one trace's load beside its "
             "queries. Default: 2 on a machine with 2 or more cores, else 1.")


def jobs_option(func):
    """The one -j/--jobs of every trace-reading command, with one default (kineto_sql.run.pool.default_jobs)."""
    return click.option("-j", "--jobs", type=click.IntRange(1), default=None, help=JOBS_HELP)(func)


def jobs_or_default(jobs: int | None) -> int:
    from kineto_sql.run.pool import default_jobs

    return jobs or default_jobs()
