"""Many queries on one loaded trace, in two processes when the machine has the cores.

The embedded engine is wasm in this process's memory and holds the GIL across every call, so threads
cannot share the work (DESIGN.md). After the load, a forked child holds the same loaded trace
copy-on-write and the two processes take queries from one shared list. Each process builds the lib tables
its own queries include (the modules the two first queries both need, and those most queries need, are
built once, before the fork, and shared), so the scheduler keeps queries near the tables already built: the parent starts
with the first item and the child with the second (callers put the two longest chains there); then a
process takes the untaken query that needs the fewest modules it has not included yet, and leaves a query to the other
process when the other has already built more of what it needs (the step-time ledger's chain is most of
diagnose's SQL; building it twice would cost more than it saves). Results come back pickled, in the
caller's order. A query the child took but never reported (the child died) is run again here, so the
answer never depends on the child.

Serial (everything here, in list order) where fork is not available, for the native engine (its shell is
one process behind one pipe: a fork would share it), and with jobs=1.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

# A process leaves a query to the other when the other has built this many more of its modules.
LEAVE_ABOVE = 2
# A module that at least this share of the items need is built once before the fork (_shared_modules).
SHARED_SHARE = 0.75
T = TypeVar("T")
Item = TypeVar("Item")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What running one item gave: its value, or the exception it raised."""

    value: T | None = None
    error: BaseException | None = None

    def get(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value


def default_jobs() -> int:
    """Two processes on a machine with two or more cores; the SQL gains little from more (one trace)."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def can_fork(tp) -> bool:
    choice = getattr(tp, "choice", None)
    return hasattr(os, "fork") and (choice is None or choice.kind != "native")


class _Board:
    """Shared between the two processes: which items are taken, which modules each process included."""

    def __init__(self, needs: list[frozenset[int]], modules: int):
        ctx = multiprocessing.get_context("fork")
        self.needs = needs
        self.taken = ctx.RawArray("b", len(needs))
        self.included = ctx.RawArray("b", 2 * max(modules, 1))
        self.modules = max(modules, 1)
        self.started = ctx.RawArray("b", 2)
        self.lock = ctx.Lock()

    def _new(self, worker: int, item: int) -> int:
        base = worker * self.modules
        return sum(1 for m in self.needs[item] if not self.included[base + m])

    def take(self, worker: int) -> int | None:
        """The next item for `worker` (0 = parent, 1 = child), or None when nothing is left for it."""
        with self.lock:
            best, best_new = None, None
            seed = worker if worker < len(self.needs) and not self.taken[worker] and not self.started[worker] else None
            self.started[worker] = 1
            for item in range(len(self.needs)) if seed is None else ():
                if self.taken[item]:
                    continue
                mine, theirs = self._new(worker, item), self._new(1 - worker, item)
                if mine > theirs + LEAVE_ABOVE:
                    continue  # the other process has much more of it built: leave it there
                if best_new is None or mine < best_new:
                    best, best_new = item, mine
            if seed is not None:
                best = seed
            if best is not None:
                self.taken[best] = 1
                base = worker * self.modules
                for m in self.needs[best]:
                    self.included[base + m] = 1
            return best


def run_all(tp, items: Sequence[Item], run: Callable[[object, Item], T], needs: Callable[[Item], Sequence[str]],
            jobs: int = 1, on_start: Callable[[Item], None] | None = None,
            build: Callable[[object, str], None] | None = None) -> list[Outcome[T]]:
    """`run(tp, item)` for every item, as Outcomes in `items`' order. `needs(item)`: the modules it includes,
    each after the ones it depends on (the scheduler's affinity). `build(tp, module)`, when given, builds one
    module: the modules both first items need, and those most items need, are built before the fork,
    once, and both processes share them. `on_start` is told of each item as this process starts it, or as the child's result for it
    arrives (progress: every item is named once)."""
    if jobs < 2 or len(items) < 2 or not can_fork(tp):
        return [_attempt(tp, run, item, on_start) for item in items]
    shared = _shared_modules([list(needs(item)) for item in items]) if build else []
    try:
        for module in shared:
            build(tp, module)
    except Exception:  # the item that needs it will meet the same error and report it as its outcome
        shared = []
    names: dict[str, int] = {}
    item_needs = [frozenset(names.setdefault(m, len(names)) for m in needs(item)) for item in items]
    board = _Board(item_needs, len(names))
    for module in shared:
        board.included[names[module]] = board.included[board.modules + names[module]] = 1
    reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # the child: take, run, report; never return into the caller's code
        status = 0
        try:
            reader.close()
            done = []
            while (index := board.take(1)) is not None:
                done.append((index, _attempt(tp, run, items[index], None)))
            # Sent only now: a send blocks once the pipe is full, and the parent reads only when its own
            # queue is empty, so sending as it goes would stall the child on its first large result.
            for index, outcome in done:
                try:
                    writer.send((index, outcome))
                except Exception:  # a value or error that does not pickle: the parent runs it again
                    writer.send((index, None))
            writer.close()
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    writer.close()
    outcomes: dict[int, Outcome] = {}
    try:
        while (index := board.take(0)) is not None:
            outcomes[index] = _attempt(tp, run, items[index], on_start)
        while True:
            try:
                index, outcome = reader.recv()
            except (EOFError, OSError):
                break
            if outcome is not None:
                outcomes[index] = outcome
                if on_start is not None:
                    on_start(items[index])
    finally:
        reader.close()
        _reap(pid)
    for index, item in enumerate(items):
        if index not in outcomes:  # left for the child when it had stopped, or taken by one that died
            outcomes[index] = _attempt(tp, run, item, on_start)
    return [outcomes[i] for i in range(len(items))]


def _shared_modules(needs: list[list[str]]) -> list[str]:
    """The modules built once before the fork, in an order that builds a module after those it includes:
    what both first items need, and what at least SHARED_SHARE of all items need (each process would build
    those on its own: diagnose's iteration windows, needed by 24 of its 29 queries, were built twice)."""
    first_two = set(needs[0]) & set(needs[1])
    counts = Counter(m for item_needs in needs for m in set(item_needs))
    # a module's own includes are needed by every item that needs it, so they qualify with it and come
    # before it in the same item's list
    shared = {m: None for item_needs in needs for m in item_needs
              if m in first_two or counts[m] >= SHARED_SHARE * len(needs)}
    return list(shared)


def _attempt(tp, run, item, on_start) -> Outcome:
    if on_start is not None:
        on_start(item)
    try:
        return Outcome(run(tp, item))
    except Exception as exc:
        return Outcome(error=exc)


def _reap(pid: int) -> None:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if not done:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except ChildProcessError:
        pass
