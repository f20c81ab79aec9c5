"""The options every trace-reading command shares: which engine runs the SQL."""
from __future__ import annotations

import click

from kineto_sql.engine.processor import TP_SHELL_ENV, EngineChoice


def engine_options(func):
    func = click.option("--tp-shell", type=click.Path(dir_okay=False), default=None,
                        help=f"A native trace_processor_shell to use instead of the embedded engine (or ${TP_SHELL_ENV}).")(func)
    func = click.option("--engine", "engine_kind", type=click.Choice(["auto", "wasm", "wasm64", "native"]),
                        default="auto", show_default=True,
                        help="auto: the embedded wasm engine, memory64 build for inputs over 1 GB; native with --tp-shell.")(func)
    return func


def engine_choice(engine_kind: str, tp_shell: str | None) -> EngineChoice:
    return EngineChoice(engine_kind, tp_shell)
