"""Trace diff: what changed between two traces, per op and per kernel.

Each trace is summarised by the `hta.op_summary` query (one row per device and name: count, total and
mean time); the two summaries are joined here with pandas. Like HTA's TraceDiff.compare_traces the
comparison is by name (a renamed kernel shows as one disappeared and one appeared), and by default
it compares the first profiler step of each trace.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

STATUSES = ("appeared", "disappeared", "increased", "decreased", "unchanged")


@dataclass(frozen=True)
class SummaryOptions:
    all_steps: bool = False
    step: int = -1

    def params(self) -> dict[str, object]:
        return {"all_steps": self.all_steps, "step": self.step}


def summarise(tp, options: SummaryOptions = SummaryOptions()) -> pd.DataFrame:
    """One trace's per-(device, name) summary, from the hta.op_summary query."""
    from kineto_sql.runner import run_query

    return run_query(tp, "hta.op_summary", options.params()).df


def summarise_file(path, options: SummaryOptions = SummaryOptions(), engine=None) -> pd.DataFrame:
    """Loads a trace, summarises it and closes it (the unit of work of a diff worker process)."""
    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace

    tp = open_trace(path, engine or EngineChoice())
    try:
        return summarise(tp, options)
    finally:
        tp.close()


def diff_summaries(before: pd.DataFrame, after: pd.DataFrame, device: str | None = None) -> pd.DataFrame:
    """Outer join of two summaries by (device, name), with deltas and a status per row.

    status: appeared (only in after), disappeared (only in before), increased / decreased / unchanged
    by count. Sorted by the absolute change in total time, largest first.
    """
    cols = ["device", "name", "count", "total_us"]
    b = before[cols].rename(columns={"count": "before_count", "total_us": "before_total_us"})
    a = after[cols].rename(columns={"count": "after_count", "total_us": "after_total_us"})
    merged = b.merge(a, on=["device", "name"], how="outer", indicator=True)
    if device:
        merged = merged[merged["device"] == device]
    for c in ("before_count", "after_count", "before_total_us", "after_total_us"):
        merged[c] = merged[c].fillna(0)
    merged["before_count"] = merged["before_count"].astype(int)
    merged["after_count"] = merged["after_count"].astype(int)
    merged["before_mean_us"] = _safe_div(merged["before_total_us"], merged["before_count"])
    merged["after_mean_us"] = _safe_div(merged["after_total_us"], merged["after_count"])
    merged["diff_count"] = merged["after_count"] - merged["before_count"]
    merged["diff_total_us"] = merged["after_total_us"] - merged["before_total_us"]
    merged["diff_mean_us"] = merged["after_mean_us"].fillna(0) - merged["before_mean_us"].fillna(0)
    merged["status"] = [
        "appeared" if m == "right_only" else "disappeared" if m == "left_only"
        else "increased" if d > 0 else "decreased" if d < 0 else "unchanged"
        for m, d in zip(merged["_merge"], merged["diff_count"])]
    merged = merged.drop(columns="_merge")
    order = merged["diff_total_us"].abs().sort_values(ascending=False, kind="stable").index
    return merged.loc[order, ["device", "name", "status", "before_count", "after_count", "diff_count",
                              "before_total_us", "after_total_us", "diff_total_us",
                              "before_mean_us", "after_mean_us", "diff_mean_us"]].reset_index(drop=True)


def status_counts(diff: pd.DataFrame) -> dict[str, int]:
    counts = diff["status"].value_counts()
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def _safe_div(total: pd.Series, count: pd.Series) -> pd.Series:
    return total.where(count > 0) / count.where(count > 0)
