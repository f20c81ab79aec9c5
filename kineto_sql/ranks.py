"""Many ranks at once: run the HTA analyses on every rank of a job, then treat them as a distribution.

Each rank loads in its own process (the engine holds the GIL, so threads give no parallelism); a
ProcessPoolExecutor with `jobs` workers keeps at most `jobs` engines resident. A worker returns
small per-rank frames, never the engine. The straggler verdict is a distribution question: per
quantity, the median and spread across ranks, each rank's robust z-score, and the rank that sits
furthest from the others in the direction that costs step time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from kineto_sql.errors import KinetoSqlError

# (analysis key, query id, title) of the per-rank tables, in print order.
ANALYSES: tuple[tuple[str, str, str], ...] = (
    ("temporal", "hta.temporal_breakdown", "Temporal breakdown (GPU compute / non-compute / idle)"),
    ("overlap", "hta.comm_comp_overlap", "Communication-computation overlap"),
    ("idle", "hta.idle_time_breakdown", "Idle time by cause, summed over streams"),
    ("kernel_types", "hta.kernel_type_breakdown", "GPU time by kernel type"),
    ("launches", "hta.kernel_launch_stats", "Kernel launch statistics"),
    ("steps", "hta.step_times", "Profiler steps"),
    ("balance", "reading.rank_balance", "Own work vs collective wait per steady step (step ledger)"),
)

# Quantities compared across ranks: (column, meaning, +1 when a larger value costs the job time,
# -1 when a smaller one does). All are microseconds so deviations compare with the step time.
QUANTITIES: tuple[tuple[str, str, int], ...] = (
    ("step_start_lag_us", "step start (after the earliest rank)", +1),
    ("compute_us", "GPU compute time", +1),
    ("comm_us", "communication kernel time", -1),
    ("idle_us", "GPU idle time", +1),
    # kineto.lib.rank_balance, the definition catalog.straggler_rank judges one rank by: device busy outside
    # exposed collectives, or on a CPU trainer every host bucket but the collective wait
    ("own_work_us", "own work per step (outside collective waits)", +1),
)

DEFAULT_THRESHOLD_PCT = 10.0


@dataclass(frozen=True)
class RankResult:
    """What one worker brings back for one rank file."""

    path: str
    rank: int | None
    ts_offset_ns: int
    frames: dict[str, pd.DataFrame]
    not_applicable: dict[str, str]
    load_s: float
    query_s: float


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


@dataclass
class RanksReport:
    results: list[RankResult]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: pd.DataFrame | None = None
    distribution: pd.DataFrame | None = None
    verdict: StragglerVerdict | None = None
    # Rank files that could not be loaded (kineto_sql.fanout.RankFailure): named, never fatal to the others.
    failures: list = field(default_factory=list)


def analysis_params(key: str, hta_compat: bool) -> dict[str, object]:
    return {} if key in ("steps", "balance") else {"hta_compat": hta_compat}


def run_rank(path: str, rank_from_name: int | None, hta_compat: bool, engine=None) -> RankResult:
    """Worker body: load one rank, run every analysis, return small frames. Runs in a child process."""
    import time

    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace

    t0 = time.perf_counter()
    tp = open_trace(path, engine or EngineChoice(), rank_from_name=rank_from_name)
    try:
        return analyse_rank(tp, path, hta_compat, time.perf_counter() - t0)
    finally:
        tp.close()


def analyse_rank(tp, path, hta_compat: bool, load_s: float) -> RankResult:
    """Every per-rank analysis on an already loaded rank (diagnose reuses its own load)."""
    import time

    from kineto_sql.runner import run_query

    t1 = time.perf_counter()
    frames, not_applicable = {}, {}
    for key, query_id, _title in ANALYSES:
        run = run_query(tp, query_id, analysis_params(key, hta_compat))
        frames[key] = run.df
        if run.not_applicable:
            not_applicable[key] = run.not_applicable
    return RankResult(str(path), tp.rank, int(tp.report.ts_offset_ns or 0), frames, not_applicable,
                      load_s, time.perf_counter() - t1)


def rank_files(directory) -> list[tuple[Path, int | None]]:
    from kineto_sql.loading.load import open_rank_dir

    files = open_rank_dir(directory)
    if not files:
        raise KinetoSqlError(f"{directory} holds no trace files (*.json, *.json.gz)")
    return files


def run_ranks(directory, jobs: int = 1, hta_compat: bool = False, engine=None,
              on_done: Callable[[RankResult], None] | None = None) -> RanksReport:
    """Loads every rank of `directory` in worker processes (at most `jobs` at once) and builds the report."""
    from kineto_sql.fanout import all_failed, fan_out

    files = rank_files(directory)
    results, failures = fan_out(run_rank, [(str(p), r, hta_compat, engine) for p, r in files], jobs, on_done)
    if not results:
        raise all_failed(failures)
    report = build_report(results)
    report.failures = failures
    return report


def build_report(results: list[RankResult], threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> RanksReport:
    results = sorted(results, key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.path))
    _check_unique_ranks(results)
    report = RanksReport(results)
    report.tables = per_rank_tables(results)
    report.summary = summary_frame(results)
    report.distribution, stats = distribution_frame(report.summary)
    report.verdict = straggler_verdict(report.summary, stats, threshold_pct)
    return report


def _check_unique_ranks(results: list[RankResult]) -> None:
    seen: dict[int, str] = {}
    for r in results:
        if r.rank is None:
            continue
        if r.rank in seen:
            raise KinetoSqlError(f"rank {r.rank} appears twice ({seen[r.rank]} and {r.path}); "
                                 "one trace file per rank, please")
        seen[r.rank] = r.path


def _rank_label(r: RankResult, i: int) -> int:
    return r.rank if r.rank is not None else i


def per_rank_tables(results: list[RankResult]) -> dict[str, pd.DataFrame]:
    """One frame per analysis, one row per rank (multi-row analyses are folded to one row per rank)."""
    tables: dict[str, pd.DataFrame] = {}
    for key, _qid, _title in ANALYSES:
        rows = []
        for i, r in enumerate(results):
            df = r.frames.get(key, pd.DataFrame())
            row = {"rank": _rank_label(r, i)}
            row.update(_fold(key, df))
            rows.append(row)
        tables[key] = pd.DataFrame(rows)
    return tables


def _fold(key: str, df: pd.DataFrame) -> dict:
    if df is None or df.empty:
        return {}
    if key == "idle":
        sums = df.groupby("idle_category")["idle_us"].sum()
        return {f"{c}_us": float(sums.get(c, 0.0)) for c in ("host_wait", "kernel_wait", "other")} | {
            "streams": int(df["stream"].nunique())}
    if key == "kernel_types":
        return {str(t): float(v) for t, v in zip(df["kernel_type"], df["dur_us"])}
    if key == "steps":
        return {"steps": int(len(df)), "first_step": int(df["step"].iloc[0]),
                "first_start_us": float(df["start_us"].iloc[0]), "median_step_us": float(df["dur_us"].median())}
    return {k: _plain(v) for k, v in df.iloc[0].to_dict().items()}


def _plain(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def summary_frame(results: list[RankResult]) -> pd.DataFrame:
    """The quantities straggler hunting compares, one row per rank."""
    rows = []
    starts = {}
    for i, r in enumerate(results):
        steps = r.frames.get("steps", pd.DataFrame())
        if steps is not None and not steps.empty:
            starts[i] = r.ts_offset_ns / 1e3 + float(steps["start_us"].iloc[0])
    earliest = min(starts.values()) if starts else None
    for i, r in enumerate(results):
        t = _first(r.frames.get("temporal"))
        o = _first(r.frames.get("overlap"))
        steps = r.frames.get("steps", pd.DataFrame())
        rows.append({
            "rank": _rank_label(r, i),
            "step_us": float(steps["dur_us"].median()) if steps is not None and not steps.empty else None,
            "step_start_lag_us": (starts[i] - earliest) if i in starts else None,
            "compute_us": t.get("compute_us"),
            "comm_us": o.get("comm_us", 0.0) if t else None,
            "idle_us": t.get("idle_us"),
            "overlap_pct": o.get("overlap_pct"),
            "own_work_us": _first(r.frames.get("balance")).get("own_work_us"),
        })
    return pd.DataFrame(rows)


def _first(df) -> dict:
    if df is None or df.empty:
        return {}
    return {k: _plain(v) for k, v in df.iloc[0].to_dict().items()}


def robust_z(values: pd.Series) -> pd.Series:
    """(x - median) / (1.4826 * MAD); falls back to the standard deviation when the MAD is 0."""
    med = values.median()
    scale = 1.4826 * (values - med).abs().median()
    if not scale or math.isnan(scale):
        scale = values.std(ddof=0)
    if not scale or math.isnan(scale):
        return pd.Series(0.0, index=values.index)
    return (values - med) / scale


def distribution_frame(summary: pd.DataFrame) -> tuple[pd.DataFrame, tuple[QuantityStats, ...]]:
    """Per quantity: median, spread, worst rank in the costly direction, its z-score and excess."""
    median_step = summary["step_us"].median() if summary["step_us"].notna().any() else None
    stats = []
    for column, meaning, direction in QUANTITIES:
        if column not in summary:
            continue
        col = summary[["rank", column]].dropna()
        if len(col) < 2:
            continue
        values = col[column].astype(float)
        z = robust_z(values)
        worst_pos = int((values * direction).to_numpy().argmax())
        worst_value = float(values.iloc[worst_pos])
        median = float(values.median())
        excess = max(0.0, (worst_value - median) * direction)
        stats.append(QuantityStats(
            column=column, meaning=meaning, direction=direction, median=median,
            mad=float((values - median).abs().median()), std=float(values.std(ddof=1)),
            minimum=float(values.min()), maximum=float(values.max()),
            worst_rank=int(col["rank"].iloc[worst_pos]), worst_value=worst_value,
            worst_z=float(z.iloc[worst_pos]), excess_us=excess,
            excess_pct_of_step=(100.0 * excess / median_step) if median_step else float("nan")))
    frame = pd.DataFrame([{
        "quantity": s.column, "median": s.median, "mad": s.mad, "std": s.std, "min": s.minimum,
        "max": s.maximum, "worst_rank": s.worst_rank, "worst_value": s.worst_value,
        "worst_z": round(s.worst_z, 2), "excess_us": s.excess_us,
        "excess_pct_of_step": round(s.excess_pct_of_step, 2)} for s in stats])
    return frame, tuple(stats)


def straggler_verdict(summary: pd.DataFrame, stats: tuple[QuantityStats, ...],
                      threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> StragglerVerdict:
    """Names a straggler when one rank costs the job at least `threshold_pct` of the median step."""
    median_step = float(summary["step_us"].median()) if summary["step_us"].notna().any() else float("nan")
    n = len(summary)
    usable = [s for s in stats if not math.isnan(s.excess_pct_of_step)]
    worst = max(usable, key=lambda s: s.excess_pct_of_step, default=None)
    if n < 2 or worst is None or worst.excess_pct_of_step < threshold_pct:
        return StragglerVerdict(None, worst, stats, median_step, threshold_pct,
                                _no_straggler_text(n, worst, median_step, threshold_pct))
    return StragglerVerdict(worst.worst_rank, worst, stats, median_step, threshold_pct,
                            _straggler_text(summary, worst, stats, median_step))


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms"


def _no_straggler_text(n: int, worst: QuantityStats | None, median_step: float, threshold_pct: float) -> str:
    if n < 2:
        return "No straggler verdict: a straggler needs at least two ranks to compare, and this set has one."
    if worst is None:
        return ("No straggler verdict: the ranks lack the profiler steps and GPU timings needed to compare them.")
    return (f"No straggler: across {n} ranks no rank costs the others {threshold_pct:g}% of the median step "
            f"({_ms(median_step)}) or more. The largest gap is rank {worst.worst_rank}'s {worst.meaning}, "
            f"{_ms(worst.excess_us)} beyond the median ({worst.excess_pct_of_step:.1f}% of a step, "
            f"robust z {worst.worst_z:+.1f}), which is within normal rank-to-rank noise.")


def _straggler_text(summary: pd.DataFrame, worst: QuantityStats, stats: tuple[QuantityStats, ...],
                    median_step: float) -> str:
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
    return " ".join((s1, s2, s3, s4, s5))
