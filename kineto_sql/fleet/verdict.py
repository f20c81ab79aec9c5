"""The straggler verdict in words: the quantity the cross-rank SQL chose (queries/fleet/straggler.sql), said
in five sentences, or plainly that no rank is a straggler. The numbers all come from the fleet tables."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class QuantityStats:
    """One quantity across ranks."""

    column: str
    meaning: str
    direction: int
    median: float
    mad: float
    std: float
    minimum: float
    maximum: float
    worst_rank: int
    worst_value: float
    worst_z: float
    # How far the worst rank sits beyond the median in its costly direction, us.
    excess_us: float
    # excess_us as % of the median step width.
    excess_pct_of_step: float


@dataclass(frozen=True)
class StragglerVerdict:
    straggler: int | None
    quantity: QuantityStats | None
    stats: tuple[QuantityStats, ...]
    median_step_us: float
    threshold_pct: float
    narration: str
    # "data imbalance" / "machine" (fleet.shape_balance), None when unknown or no straggler
    cause: str | None = None
    # Set when no rank is slow every step but each step's slowest rank costs the others (moving imbalance,
    # queries/fleet/moving_straggler.sql): steps, slowest_counts, mean_excess_us, excess_pct_of_step, ...
    moving: dict | None = None


MOVING_QUANTITY = "own work of each step's slowest rank beyond the median rank (the slowest rank moves between steps)"


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms"


def no_straggler_text(n: int, worst: QuantityStats | None, median_step: float, threshold_pct: float) -> str:
    if n < 2:
        return "No straggler verdict: a straggler needs at least two ranks to compare, and this set has one."
    if worst is None:
        return ("No straggler verdict: the ranks lack the profiler steps and GPU timings needed to compare them.")
    return (f"No straggler: across {n} ranks no rank costs the others {threshold_pct:g}% of the median step "
            f"({_ms(median_step)}) or more. The largest gap is rank {worst.worst_rank}'s {worst.meaning}, "
            f"{_ms(worst.excess_us)} beyond the median ({worst.excess_pct_of_step:.1f}% of a step, "
            f"robust z {worst.worst_z:+.1f}), which is within normal rank-to-rank noise.")


def moving_text(r: int, moving: dict, median_step: float) -> str:
    """Data imbalance that moves between ranks, in four sentences (queries/fleet/moving_straggler.sql)."""
    share = 100.0 * moving["excess_sum_us"] / moving["total_excess_us"] if moving["total_excess_us"] else 0.0
    return (f"No rank is slow every step: the slowest rank moves from step to step (slowest in "
            f"{moving['steps']} steps: {moving['slowest_counts']}), and the ranks' ops by input shape differ "
            f"(record_shapes): data imbalance that moves between ranks. "
            f"Each step every other rank waits in the collectives for that step's slowest rank, on average "
            f"{_ms(moving['mean_excess_us'])} of own work beyond the median rank's "
            f"({moving['excess_pct_of_step']:.1f}% of the median step, {_ms(median_step)}). "
            f"Rank {r} costs the others most: {_ms(moving['excess_sum_us'])} in the {moving['slowest_steps']} "
            f"step(s) it is the slowest, {share:.0f}% of the excess over all steps. "
            f"Fix the data, not the machine: give every rank the same work per step (length-sorted or bucketed "
            f"batches, packing to a fixed number of tokens per rank).")


def straggler_text(summary: pd.DataFrame, worst: QuantityStats, stats: tuple[QuantityStats, ...],
                   median_step: float, lateness: pd.DataFrame | None = None,
                   shapes: pd.DataFrame | None = None) -> str:
    r = worst.worst_rank
    others = summary[summary["rank"] != r]
    comm = next((s for s in stats if s.column == "comm_us"), None)
    own = summary[summary["rank"] == r].iloc[0]
    extreme = "highest" if worst.direction > 0 else "lowest"
    s1 = (f"Rank {r} is the straggler: its {worst.meaning} is the {extreme} of {len(summary)} ranks, "
          f"{_ms(worst.worst_value)} against a median of {_ms(worst.median)}.")
    s2 = (f"That is {_ms(worst.excess_us)} beyond the median rank, {worst.excess_pct_of_step:.0f}% of the "
          f"median step ({_ms(median_step)}), robust z-score {worst.worst_z:+.1f}.")
    if comm is not None and pd.notna(own.get("comm_us")) and others["comm_us"].notna().any():
        s3 = (f"The others pay for it in collectives: their communication kernels take a median "
              f"{_ms(float(others['comm_us'].median()))} against rank {r}'s {_ms(float(own['comm_us']))}, "
              f"time they spend waiting in NCCL for rank {r}.")
    else:
        s3 = "No communication kernels were found, so the cost shows as step-time spread rather than NCCL wait."
    s4 = ("Fault catalog row: Straggler rank (one rank's compute longer or later, the others' NCCL wait "
          "longer, per step; confirm with the HTA temporal breakdown per rank).")
    if worst.column == "step_start_lag_us":
        s5 = (f"Next, check what rank {r} does before its step starts (data loading, host-side work, a sync "
              f"or checkpoint), then compare its input sizes with the other ranks for data imbalance.")
    elif worst.column == "compute_us":
        s5 = (f"Next, compare rank {r}'s kernel breakdown (kineto-sql run hta.kernel_breakdown) with a median "
              f"rank's: more or longer kernels point at data imbalance (variable sequence length), equal "
              f"kernels running slower point at the hardware.")
    elif worst.column == "own_work_us":
        s5 = (f"Next, compare rank {r}'s op table (kineto-sql run reading.op_table) and step timeline with a "
              f"median rank's: more ops or larger inputs point at data imbalance, the same ops running slower "
              f"at a slower or oversubscribed host (CPU threads, other processes on its cores).")
    else:
        s5 = (f"Next, open rank {r}'s idle-time breakdown (hta.idle_time_breakdown) to see whether its GPU "
              f"waits on the host or on other streams, and compare its CPU timeline with a median rank's.")
    return " ".join(s for s in (s1, s2, s3, _at_collectives(r, lateness), _cause_text(r, shapes), s4, s5) if s)


def straggler_cause(r: int, shapes: pd.DataFrame | None) -> str | None:
    """Data imbalance when the straggler's ops or input shapes per step differ from the typical rank's, the
    machine when they are the same and record_shapes was on; None when the shapes were not read."""
    row = _shape_row(r, shapes)
    if row is None:
        return None
    if bool(row["work_differs"]):
        return "data imbalance"
    return "machine" if bool(row["shapes_recorded"]) else None


def _shape_row(r: int, shapes: pd.DataFrame | None):
    if shapes is None or shapes.empty or r not in set(shapes["rank"]) or len(shapes) < 2:
        return None
    row = shapes[shapes["rank"] == r].iloc[0]
    return None if pd.isna(row["work_diff_pct"]) else row


def _cause_text(r: int, shapes: pd.DataFrame | None) -> str:
    row, cause = _shape_row(r, shapes), straggler_cause(r, shapes)
    if row is None:
        return ""
    pct = float(row["work_diff_pct"])
    if cause == "data imbalance":
        # work_diff_pct is the difference as a share of the typical rank's calls: it passes 100% when the
        # straggler makes more calls than the typical rank, so it is not said as a share of its own calls
        return (f"Its work is not the others': its op calls per step differ in op or input shape from the "
                f"typical rank's by {pct:.0f}% of that rank's calls (record_shapes), so it was given more work: "
                f"data imbalance (variable sequence length, uneven sharding), not a slow machine.")
    if cause == "machine":
        return (f"It runs the same ops on the same input shapes as the others (within {pct:.1f}% of the typical "
                f"rank's op calls per step, record_shapes), so the same work takes it longer: the machine (a "
                f"slower or busier GPU or host), not its data.")
    return (f"It runs the same ops as the others (within {pct:.1f}% per step), but record_shapes was off, so "
            f"equal input sizes cannot be confirmed.")


def _at_collectives(r: int, lateness: pd.DataFrame | None) -> str:
    """What the collectives say of the named rank on aligned clocks (fleet.rank_lateness), when they say it."""
    if lateness is None or lateness.empty or r not in set(lateness["rank"]):
        return ""
    row = lateness[lateness["rank"] == r].iloc[0]
    if not row["calls"] or not row["late_beyond_band"]:
        return ""
    return (f"At the collectives, on clocks aligned across ranks, rank {r} arrived last at "
            f"{int(row['late_beyond_band'])} of {int(row['calls'])} calls by more than the clock band, and the "
            f"others waited {_ms(float(row['wait_caused_us']))} for it there.")
