"""The per-rank HTA tables of `kineto-sql ranks`: which analyses a rank task runs, and each one folded to one
row per rank for display (a rank's idle time summed by cause, its kernel types as columns, its steps counted).
The cross-rank reading itself is SQL (queries/fleet/); this is presentation only."""
from __future__ import annotations

import math

import pandas as pd

# (analysis key, query id, title) of the per-rank tables, in print order; the task's table is hta_<key>.
ANALYSES: tuple[tuple[str, str, str], ...] = (
    ("temporal", "hta.temporal_breakdown", "Temporal breakdown (GPU compute / non-compute / idle)"),
    ("overlap", "hta.comm_comp_overlap", "Communication-computation overlap"),
    ("idle", "hta.idle_time_breakdown", "Idle time by cause, summed over streams"),
    ("kernel_types", "hta.kernel_type_breakdown", "GPU time by kernel type"),
    ("launches", "hta.kernel_launch_stats", "Kernel launch statistics"),
    ("steps", "hta.step_times", "Profiler steps"),
    ("balance", "reading.rank_balance", "Own work vs collective wait per steady step (step ledger)"),
)
META = ("row_index", "rank", "trace_path", "content_hash", "kineto_sql_version")


def analysis_params(key: str, hta_compat: bool) -> dict[str, object]:
    return {} if key in ("steps", "balance") else {"hta_compat": hta_compat}


def rank_tables(con, present: set[str], ranks: list[int]) -> dict[str, pd.DataFrame]:
    """One frame per analysis, one row per rank (a rank where the analysis does not apply has only its rank)."""
    tables = {}
    for key, _query_id, _title in ANALYSES:
        name = f"hta_{key}"
        frame = con.table(name).df() if name in present else pd.DataFrame(columns=list(META))
        frame = frame.sort_values(["rank", "row_index"]) if not frame.empty else frame
        rows = []
        for rank in ranks:
            own = frame[frame["rank"] == rank].drop(columns=[c for c in META if c in frame]).reset_index(drop=True)
            rows.append({"rank": rank, **_fold(key, own)})
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
