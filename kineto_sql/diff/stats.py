"""Confidence intervals for a before/after diff: a seeded percentile bootstrap over iteration windows
(`Bootstrap`, one capture a side) or over captures and then the windows in each (`NestedBootstrap`, several
captures a side, so the interval holds run-to-run variation too).

Each side is a sample of steady windows (one number per window: its width, or its time in one ledger
bucket). The windows of each side are resampled with replacement, independently of the other side, and
the statistic (the change in the median) is taken on every resample; the 2.5th and 97.5th percentiles
of those values are the 95% interval. One set of resample indices serves every quantity of a pair, so
the step and its buckets are read from the same resampled windows.

Why numpy and not scipy.stats.bootstrap: numpy is already a dependency (scipy would add ~40 MB for one
function), and scipy's default BCa interval needs a jackknife that is degenerate on the 3-6 windows a
profiler capture usually holds (the median of 3 leave-one-out samples takes two values), giving NaN
bounds; its `percentile` method is the same arithmetic as below. The seed is fixed, so the same pair of
traces gives the same interval on every run and machine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 48  # fixed: a verdict must not change between two runs on the same traces
# Fewer steady windows than this on a side: no interval (one or two windows are not a distribution;
# kineto.lib.steady_sample and catalog.schedule_distortion use the same minimum of 3).
MIN_WINDOWS = 3


@dataclass(frozen=True)
class Interval:
    """A point estimate and its 95% interval, in the statistic's unit (% for a relative change, ns for a
    difference)."""

    point: float
    low: float
    high: float

    @property
    def beyond_noise(self) -> bool:
        """The interval leaves zero out: the change is not explained by the spread of the windows."""
        return self.low > 0 or self.high < 0

    def to_json(self) -> dict:
        return {"point": self.point, "low": self.low, "high": self.high}


class Bootstrap:
    """Resample indices for two independent samples of windows (`n_before`, `n_after`), drawn once."""

    def __init__(self, n_before: int, n_after: int, resamples: int = RESAMPLES, seed: int = SEED):
        if min(n_before, n_after) < 1:
            raise ValueError("each side needs at least one window")
        rng = np.random.default_rng(seed)
        self._before = rng.integers(0, n_before, size=(resamples, n_before), dtype=np.int32)
        self._after = rng.integers(0, n_after, size=(resamples, n_after), dtype=np.int32)

    def _medians(self, before, after) -> tuple[np.ndarray, np.ndarray]:
        b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
        return np.median(b[self._before], axis=1), np.median(a[self._after], axis=1)

    def relative_change(self, before, after) -> Interval:
        """100 * (median(after) / median(before) - 1): negative is faster. `before` must be positive."""
        mb, ma = self._medians(before, after)
        point = 100.0 * (float(np.median(after)) / float(np.median(before)) - 1.0)
        return _interval(point, 100.0 * (ma / mb - 1.0))

    def difference(self, before, after) -> Interval:
        """median(after) - median(before), in the samples' unit."""
        mb, ma = self._medians(before, after)
        return _interval(float(np.median(after)) - float(np.median(before)), ma - mb)


def _interval(point: float, resampled: np.ndarray) -> Interval:
    tail = 100.0 * (1.0 - CONFIDENCE) / 2.0
    low, high = np.percentile(resampled, [tail, 100.0 - tail])
    return Interval(point, float(low), float(high))


class NestedBootstrap:
    """Resample indices for two sides of several captures each: a two-stage (hierarchical) bootstrap.

    A side is a list of captures (recordings of the same code), each a sample of steady windows. Every
    resample first draws as many captures as the side has, with replacement, then, inside each drawn
    capture, as many windows as it has, with replacement; the statistic is the median of the pooled drawn
    windows. Drawing captures puts the capture-to-capture (run-to-run: process start, allocator state, CPU
    frequency) spread into the interval, which no amount of windows from one capture can show. The point
    estimate is the median of all the side's steady windows, pooled.

    One capture on both sides is the window bootstrap above, exactly (`Bootstrap`, same seed and draws).
    """

    def __init__(self, before_sizes, after_sizes, resamples: int = RESAMPLES, seed: int = SEED):
        before_sizes, after_sizes = list(before_sizes), list(after_sizes)
        if not before_sizes or not after_sizes or min(before_sizes + after_sizes) < 1:
            raise ValueError("each side needs at least one capture, each capture at least one window")
        self.sizes = (before_sizes, after_sizes)
        if len(before_sizes) == 1 and len(after_sizes) == 1:
            self._flat = Bootstrap(before_sizes[0], after_sizes[0], resamples, seed)
            return
        self._flat = None
        rng = np.random.default_rng(seed)
        self._before = _nested_indices(rng, before_sizes, resamples)
        self._after = _nested_indices(rng, after_sizes, resamples)

    def _medians(self, before, after) -> tuple[np.ndarray, np.ndarray]:
        return _pooled_medians(before, self._before), _pooled_medians(after, self._after)

    def relative_change(self, before, after) -> Interval:
        """`before`, `after`: one list of window values per capture. 100 * (median(after) / median(before) - 1)."""
        if self._flat is not None:
            return self._flat.relative_change(before[0], after[0])
        mb, ma = self._medians(before, after)
        point = 100.0 * (_pooled(after) / _pooled(before) - 1.0)
        return _interval(point, 100.0 * (ma / mb - 1.0))

    def difference(self, before, after) -> Interval:
        if self._flat is not None:
            return self._flat.difference(before[0], after[0])
        mb, ma = self._medians(before, after)
        return _interval(_pooled(after) - _pooled(before), ma - mb)


def _nested_indices(rng, sizes: list, resamples: int) -> np.ndarray:
    """(resamples, captures * max windows) indices into the side's windows laid end to end; -1 pads the
    slots of a drawn capture shorter than the longest."""
    n = np.asarray(sizes, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(n)[:-1]))
    k, longest = len(n), int(n.max())
    caps = rng.integers(0, k, size=(resamples, k))
    drawn = n[caps][..., None]                                   # windows in each drawn capture
    within = np.floor(rng.random((resamples, k, longest)) * drawn).astype(np.int64)
    idx = offsets[caps][..., None] + within
    idx[np.arange(longest)[None, None, :] >= drawn] = -1
    return idx.reshape(resamples, k * longest)


def _pooled_medians(captures, idx: np.ndarray) -> np.ndarray:
    flat = np.concatenate([np.asarray(c, dtype=float) for c in captures])
    if len({len(c) for c in captures}) == 1:        # no padding: np.median is ~10x faster than nanmedian
        return np.median(flat[idx], axis=1)
    values = flat[np.where(idx >= 0, idx, 0)]
    values[idx < 0] = np.nan
    return np.nanmedian(values, axis=1)


def _pooled(captures) -> float:
    return float(np.median(np.concatenate([np.asarray(c, dtype=float) for c in captures])))
