"""Claims: which ledger time each finding's impact is drawn from, resolved in one place so that no two
findings claim the same nanosecond.

A detector's header names the ledger buckets its impact is drawn from (`-- claims:`, read in SQL through
kineto_ledger_claim). The ledger puts every nanosecond of every window in exactly one bucket, so detectors
that claim different buckets never claim the same time. Where several claim one bucket, the larger estimate
claims first and the others get what is left (`rest of ...` claims go last: they take what no specific cause
explained); a rule with no claims line claims from every steady bucket, last.

Claims are resolved per window: a finding's row for step N draws only from step N's buckets (time x lanes
of that window), a row with no step (a whole-capture finding) from any window. So the claims in one window
never add up to more than the window holds, in any bucket. Cold windows are their own pool (`cold`):
catalog.cold_start claims it."""
from __future__ import annotations

from collections import defaultdict

from kineto_sql.engine.rows import missing, truthy

RESIDUAL = "rest of "
COLD = "cold"

Key = tuple  # (step or None, bucket)


def _expand(claim: str, buckets) -> list[str]:
    """`busy.*` names every bucket of a kind; a plain name is itself."""
    if claim.endswith(".*"):
        prefix = claim[:-1]
        return sorted({b for b in buckets if b.startswith(prefix)})
    return [claim]


def _key(k) -> Key:
    return k if isinstance(k, tuple) else (None, k)


def _order(step) -> tuple:
    return (step is None, step if step is not None else 0)


def resolve_window_claims(estimates, pools) -> dict[str, dict[Key, int]]:
    """What each detector's finding claims, per (step, bucket): at most its own estimate per step, at most
    what is left of its buckets in that step's window.

    `estimates` is [(spec, estimate)], the estimate an int (the whole finding) or {step: ns} (its rows'
    impact per step; None for rows without a step) or {(step, bucket): ns} (rows that name the one bucket of
    their claims line their impact is drawn from). `pools` is the ledger time per (step, bucket) (steady
    windows; `cold` for the cold windows' time), or per bucket alone (then every estimate draws from it).
    Order: rules with specific claims by estimate (largest first, then id), then `rest of` claims, then rules
    without a claims line (which claim from every steady bucket). No (step, bucket) is ever claimed twice over."""
    left = {_key(k): v for k, v in pools.items()}
    steps = sorted({s for s, _ in left}, key=_order)
    buckets = {b for _, b in left}
    steady = sorted(b for b in buckets if b != COLD)

    def wants(estimate) -> dict:
        return dict(estimate) if isinstance(estimate, dict) else {None: estimate}

    def order(item):
        spec, estimate = item
        claims = spec.claims
        tier = 2 if not claims else (1 if claims[0].startswith(RESIDUAL) else 0)
        return tier, -sum(max(v, 0) for v in wants(estimate).values()), spec.id

    out: dict[str, dict[Key, int]] = {}
    for spec, estimate in sorted(estimates, key=order):
        claims = [c.removeprefix(RESIDUAL) for c in spec.claims] or steady
        names = [b for c in claims for b in _expand(c, buckets)]
        taken: dict[Key, int] = defaultdict(int)
        unplaced: dict[tuple, int] = defaultdict(int)
        for where, want in sorted(wants(estimate).items(), key=lambda kv: _order(_step_of(kv[0]))):
            step, hint = where if isinstance(where, tuple) else (where, None)
            # a row that names its bucket (a `claim_bucket` column) draws from that bucket only
            row_names = tuple([hint] if hint in names else names)
            if step is None or not any((step, b) in left for b in row_names):
                unplaced[row_names] += max(want, 0)  # no step, or a step with no window of its own: any window
                continue
            unplaced[row_names] += _draw(left, taken, [(step, b) for b in row_names], max(want, 0))
        for row_names, want in unplaced.items():
            _draw(left, taken, [(s, b) for b in row_names for s in steps], want)
        out[spec.id] = dict(taken)
    return out


def _step_of(where):
    return where[0] if isinstance(where, tuple) else where


def _draw(left: dict, taken: dict, keys: list, want: int) -> int:
    """Takes up to `want` from `keys` in order; returns what could not be taken."""
    for key in keys:
        if want <= 0:
            break
        take = min(want, left.get(key, 0))
        if take > 0:
            left[key] -= take
            taken[key] += take
            want -= take
    return want


def resolve_claims(estimates, pools) -> dict[str, dict[str, int]]:
    """resolve_window_claims summed over the windows: per detector id, the time taken from each bucket (its
    impact is their sum)."""
    out = {}
    for query_id, taken in resolve_window_claims(estimates, pools).items():
        per_bucket: dict[str, int] = defaultdict(int)
        for (_, bucket), ns in taken.items():
            per_bucket[bucket] += ns
        out[query_id] = dict(per_bucket)
    return out


def window_pools(ledger_rows) -> dict[Key, int]:
    """The claim pools from reading.step_ledger's rows: steady time per (step, bucket), cold windows' time
    per (step, `cold`)."""
    pools: dict[Key, int] = defaultdict(int)
    for row in ledger_rows:
        step = None if missing(row["step"]) else int(row["step"])
        bucket = COLD if truthy(row["is_cold"]) else str(row["bucket"])
        pools[(step, bucket)] += int(row["dur"])
    return dict(pools)
