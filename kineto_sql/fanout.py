"""One function per rank file, in worker processes, where one bad rank must not sink the others.

The good ranks finish; each bad one becomes a RankFailure that names its file and says why (its own
one-sentence error, or that its worker process died). Callers report the failures and exit 1.
Where the functions run is an executor (kineto_sql.fleet.executors): local processes by default.
"""
from __future__ import annotations

from typing import Callable

from kineto_sql.errors import KinetoSqlError
from kineto_sql.fleet.executors import LocalExecutor, RankFailure

__all__ = ["RankFailure", "all_failed", "fan_out"]


def fan_out(fn: Callable, calls: list[tuple], jobs: int = 1,
            on_done: Callable[[object], None] | None = None, executor=None) -> tuple[list, list[RankFailure]]:
    """`fn(*args)` for each args tuple (its first item is the rank file), at most `jobs` at once (or on
    `executor`). Returns the results in `calls` order (failures left out) and the failures sorted by path."""
    results: list = [None] * len(calls)
    failures: list[RankFailure] = []
    for i, result in (executor or LocalExecutor(jobs)).run(fn, calls):
        if isinstance(result, RankFailure):
            failures.append(result)
            continue
        results[i] = result
        if on_done:
            on_done(result)
    return [r for r in results if r is not None], sorted(failures)


def all_failed(failures: list[RankFailure]) -> KinetoSqlError:
    first = failures[0].sentence()
    more = f" (and {len(failures) - 1} more rank file(s) failed)" if len(failures) > 1 else ""
    return KinetoSqlError(f"no rank could be loaded: {first}{more}")
