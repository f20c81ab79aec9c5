"""A value computed once per loaded trace, kept for the latest trace only.

diagnose's predictions, its critical path line and the fleet's rank task read one trace's graph in turn, so
one slot serves them; a cache per trace ever loaded would keep every graph of a long-lived process (a test
session holds dozens of loaded traces) alive for as long as its trace."""
from __future__ import annotations

import weakref
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class LatestTrace(Generic[T]):
    def __init__(self) -> None:
        self._trace: weakref.ref | None = None
        self._value: T | None = None

    def get(self, tp, compute: Callable[[], T]) -> T:
        if self._trace is not None and self._trace() is tp:
            return self._value  # type: ignore[return-value]
        self._trace, self._value = None, None  # let the previous value go before computing the next
        value = compute()
        self._trace, self._value = weakref.ref(tp), value
        return value
