"""`kineto-sql collectives` in words: the headline and the two rules' findings over the matched calls that
queries/fleet/collective_calls.sql returns (sizes, bandwidth, skew on aligned clocks, the slow / skewed flags).
Per call definitions and thresholds are that file's and fleet.collective_skew's headers."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Thresholds:
    slow_pct: float = 25.0
    slow_min_bytes: int = 32 << 20
    skew_min_us: float = 100.0
    skew_factor: float = 2.0

    def params(self) -> dict[str, float]:
        return {"slow_pct": float(self.slow_pct), "slow_min_bytes": float(self.slow_min_bytes),
                "skew_min_us": float(self.skew_min_us), "skew_factor": float(self.skew_factor)}


def findings(calls: pd.DataFrame, thresholds: Thresholds = Thresholds()) -> list[dict]:
    """One finding per slow call, one per rank that arrived last at skewed calls; largest impact first."""
    out: list[dict] = []
    for row in calls[calls["slow"]].itertuples(index=False):
        out.append({
            "rule": "collective_slow", "step": row.step, "collective": row.collective, "seq": row.seq,
            "impact_us": row.latency_us * (1 - row.pct_of_link / 100.0),
            "evidence": (f"{row.collective} #{row.seq} ({size_text(row.size_bytes)}) ran at bus bandwidth "
                         f"{row.busbw_gbps:.1f} GB/s, {row.pct_of_link:.0f}% of the {row.link_gbps:.0f} GB/s "
                         f"link (under {thresholds.slow_pct:.0f}% for a message of "
                         f"{size_text(thresholds.slow_min_bytes)} or more)"),
        })
    skewed = calls[calls["skewed"]]
    measured = calls[calls["start_skew_us"].notna()]
    total = measured["wait_us"].sum()
    for rank in sorted(set(skewed["last_rank"])):
        g = skewed[skewed["last_rank"] == rank]
        wait = float(g["wait_us"].sum())
        out.append({
            "rule": "collective_skew", "step": None, "collective": ", ".join(sorted(set(g["collective"]))),
            "seq": None, "impact_us": wait,
            "evidence": (f"rank {int(rank)} arrived last at {len(g)} of {len(measured)} collective calls "
                         f"(start skew up to {g['start_skew_us'].max() / 1e3:.2f} ms, "
                         f"up to {(g['start_skew_us'] / g['latency_us'].clip(lower=1e-3)).max():.0f}x the "
                         f"call's own latency, beyond a clock band of {g['band_us'].max():.0f} us); the other "
                         f"ranks waited {wait / 1e3:.2f} ms in those calls ({100 * wait / total:.0f}% of all "
                         "collective waiting): the time is lost before the call on that rank, not in the network"),
        })
    return sorted(out, key=lambda f: -f["impact_us"])


def headline(calls: pd.DataFrame, ranks: list[int], clock: pd.DataFrame | None = None) -> str:
    if calls.empty:
        return f"{len(ranks)} ranks, no collective calls found."
    why = mismatch(clock)
    if why:
        return (f"{len(ranks)} ranks, {len(calls)} collective calls, but {why}: the captures do not hold the same "
                "calls (sampled events, or a partial capture), so no start skew, wait or bandwidth across ranks "
                "is reported.")
    measured = calls[calls["latency_us"].notna()]
    lat = measured["latency_us"].sum()
    wait = measured["wait_us"].sum()
    band = _band(clock)
    return (f"{len(ranks)} ranks, {len(measured)} collective calls matched{band}; transfer (min across ranks) "
            f"{lat / 1e3:.2f} ms per rank, early ranks waited {wait / 1e3:.2f} ms in all "
            f"({wait / max(len(ranks), 1) / 1e3:.2f} ms per rank); {int(calls['slow'].sum())} slow, "
            f"{int(calls['skewed'].sum())} skewed.")


def mismatch(clock: pd.DataFrame | None) -> str | None:
    """Why the calls cannot be matched across ranks (fleet.clock_offsets), or None when they can."""
    if clock is None or clock.empty:
        return None
    status = str(clock["status"].iloc[0])
    if not status.endswith("a sampled or partial capture?"):
        return None
    return status.removeprefix("not aligned: ").removesuffix("; a sampled or partial capture?")


def _band(clock: pd.DataFrame | None) -> str:
    if clock is None or clock.empty:
        return ""
    status = clock["status"][clock["status"].str.startswith("not aligned")]
    if not status.empty:
        return " (clocks not aligned: " + status.iloc[0].removeprefix("not aligned: ") + ")"
    return f" (clocks aligned within {clock['band_us'].max():.0f} us)"


def size_text(n) -> str:
    if n is None or n != n:
        return "unknown size"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"
