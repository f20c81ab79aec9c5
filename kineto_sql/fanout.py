"""One function per rank file, in worker processes, where one bad rank must not sink the others.

The good ranks finish; each bad one becomes a RankFailure that names its file and says why (its own
one-sentence error, or that its worker process died). Callers report the failures and exit 1.
"""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable

from kineto_sql.errors import KinetoSqlError


@dataclass(frozen=True, order=True)
class RankFailure:
    path: str
    reason: str

    def sentence(self) -> str:
        return self.reason if self.path in self.reason else f"{self.path}: {self.reason}"


def fan_out(fn: Callable, calls: list[tuple], jobs: int = 1,
            on_done: Callable[[object], None] | None = None) -> tuple[list, list[RankFailure]]:
    """`fn(*args)` for each args tuple (its first item is the rank file), at most `jobs` at once.
    Returns the results in `calls` order (failures left out) and the failures sorted by path."""
    results: list = [None] * len(calls)
    failures: list[RankFailure] = []
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(fn, *args): i for i, args in enumerate(calls)}
        for future in as_completed(futures):
            i = futures[future]
            path = str(calls[i][0])
            try:
                result = future.result()
            except KinetoSqlError as exc:
                failures.append(RankFailure(path, str(exc)))
            except BrokenProcessPool:
                failures.append(RankFailure(path, "its worker process died before finishing (a crash, or the "
                                                  "system ran out of memory); load it alone to see why"))
            except Exception as exc:  # a bug on one rank's data: name it, keep the others
                failures.append(RankFailure(path, f"failed with {type(exc).__name__}: {exc}"))
            else:
                results[i] = result
                if on_done:
                    on_done(result)
    return [r for r in results if r is not None], sorted(failures)


def all_failed(failures: list[RankFailure]) -> KinetoSqlError:
    first = failures[0].sentence()
    more = f" (and {len(failures) - 1} more rank file(s) failed)" if len(failures) > 1 else ""
    return KinetoSqlError(f"no rank could be loaded: {first}{more}")
