"""The cross-rank reading as DuckDB SQL (queries/fleet/*.sql) over the per-rank tables: the one path for
many ranks (`kineto-sql fleet`, `ranks`, `collectives`, `diagnose RANK_DIR`).

The tables come either from a Parquet dataset (`kineto-sql fleet DATASET`: nothing but Parquet is read)
or from the tasks' Arrow tables in memory; both go through the same views and the same queries. The clocks
are aligned first (fleet.call_match, fleet.clock_offsets), and every skew, lag and lateness reads the aligned
clocks. Values reach SQL only as DuckDB parameters.
"""
from __future__ import annotations

import functools
import importlib.resources
import math
from dataclasses import dataclass, field, replace

import pandas as pd

from kineto_sql.errors import KinetoSqlError
from kineto_sql.fleet.collective_text import Thresholds
from kineto_sql.fleet.tables import rank_tables
from kineto_sql.fleet.verdict import (MOVING_QUANTITY, QuantityStats, StragglerVerdict, moving_text,
                                     no_straggler_text, straggler_cause, straggler_text)

DEFAULT_THRESHOLD_PCT = 10.0
# table files (each a table computed once, read by the later ones), in dependency order; the straggler and
# collective_calls queries run last, with their parameters
VIEWS = ("call_match", "clock_offsets", "collective_skew", "rank_lateness", "rank_summary", "distribution",
         "shape_balance", "step_balance")
# The tables are small (a few rows per rank); one thread reads them, and leaves the cores to the rank
# workers. With a view over the Parquet files per query and DuckDB's default threads, the driver's peak RSS
# grew by ~0.5 MB per rank (every query rescanned every file); read once, single-threaded, it is flat.
DUCKDB_CONFIG = {"threads": 1}
HTA = ("load", "hta_steps", "hta_temporal", "hta_overlap", "hta_balance")
NEEDS = {"rank_summary": HTA, "distribution": HTA, "call_match": ("load",), "clock_offsets": ("load",),
         "collective_skew": ("load",), "rank_lateness": ("load",), "shape_balance": ("op_shapes",),
         "step_balance": ("balance_steps",)}


@functools.lru_cache(maxsize=None)
def fleet_sql(name: str) -> str:
    return importlib.resources.files("kineto_sql.queries").joinpath(f"fleet/{name}.sql").read_text()


@dataclass
class FleetReport:
    ranks: list
    summary: pd.DataFrame | None
    distribution: pd.DataFrame | None
    verdict: StragglerVerdict | None
    collective_skew: pd.DataFrame | None = None  # with the slow / skewed flags of fleet.collective_calls
    rank_lateness: pd.DataFrame | None = None
    clock: pd.DataFrame | None = None  # fleet_clock_offsets: each rank's offset, its band, whether applied
    shapes: pd.DataFrame | None = None  # fleet_shape_balance: each rank's work against the typical rank's
    tables: dict = field(default_factory=dict)  # the per-rank HTA tables (kineto_sql.fleet.tables), when asked
    failures: list = field(default_factory=list)  # (path, sentence)
    skipped: int = 0
    source: str = ""


def connect_tables(tables: dict[str, list]):
    """A DuckDB connection with one view per table name over the tasks' Arrow tables, and the names."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect(config=DUCKDB_CONFIG)
    present = set()
    for name, parts in tables.items():
        if parts:
            con.register(name, pa.concat_tables(parts, promote_options="permissive"))
            present.add(name)
    return con, present


def connect_dataset(files: dict[str, list[str]]):
    """A DuckDB connection with one view per table over its Parquet files (union by column name)."""
    import duckdb

    con = duckdb.connect(config=DUCKDB_CONFIG)
    for name, paths in files.items():  # each file read once into a (small) table, not a view rescanned per query
        con.read_parquet(paths, union_by_name=True).create(name)
    return con, set(files)


def analyse(connection, threshold_pct: float = DEFAULT_THRESHOLD_PCT, hta: bool = True,
            thresholds: Thresholds = Thresholds(), per_rank_tables: bool = False) -> FleetReport:
    """`connection` is what connect_tables / connect_dataset return. `hta`: the straggler reading (needs the
    hta part); without it, only the clocks and the collectives."""
    con, present = connection
    missing = [t for t in (HTA if hta else ("load",)) if t not in present]
    if missing:
        raise KinetoSqlError(f"the fleet tables lack {', '.join(missing)}; rerun with the hta part "
                             "(kineto-sql fleet RANK_DIR --parts hta,...)")
    have_collectives = "collectives" in present
    if not have_collectives:
        con.execute(fleet_sql("empty_collectives"))
    for view in VIEWS:
        if all(t in present for t in NEEDS[view]):
            con.execute(fleet_sql(view))
    clock = con.table("fleet_clock_offsets").df()
    clock["rank"] = clock["rank"].astype("int64")
    ranks = [int(r) for r in clock["rank"]]
    skew = con.execute(fleet_sql("collective_calls"), thresholds.params()).df() if have_collectives else None
    lateness = con.table("fleet_rank_lateness").df() if have_collectives else None
    shapes = con.table("fleet_shape_balance").df() if "op_shapes" in present else None
    report = FleetReport(ranks, None, None, None, skew, lateness, clock, shapes)
    if hta:
        summary = con.table("fleet_rank_summary").df()
        summary["rank"] = summary["rank"].astype("int64")
        distribution = con.table("fleet_distribution").df()
        row = con.execute(fleet_sql("straggler"), {"threshold_pct": float(threshold_pct)}).df().iloc[0]
        report.ranks = [int(r) for r in summary["rank"]]
        report.summary, report.distribution = summary, distribution
        report.verdict = straggler_verdict(summary, distribution, row, lateness, shapes)
        if report.verdict.straggler is None and {"balance_steps", "op_shapes"} <= present:
            moving = con.execute(fleet_sql("moving_straggler"), {"threshold_pct": float(threshold_pct)}).df().iloc[0]
            if pd.notna(moving["straggler"]):
                report.verdict = moving_verdict(report.verdict, moving)
    if per_rank_tables:
        report.tables = rank_tables(con, present, report.ranks)
    return report


def _stats(distribution: pd.DataFrame) -> tuple[QuantityStats, ...]:
    def num(v):
        return float("nan") if v is None or pd.isna(v) else float(v)

    return tuple(QuantityStats(
        column=r["quantity"], meaning=r["meaning"], direction=int(r["direction"]), median=num(r["median"]),
        mad=num(r["mad"]), std=num(r["std"]), minimum=num(r["min"]), maximum=num(r["max"]),
        worst_rank=int(r["worst_rank"]), worst_value=num(r["worst_value"]), worst_z=num(r["worst_z"]),
        excess_us=num(r["excess_us"]), excess_pct_of_step=num(r["excess_pct_of_step"]))
        for r in distribution.to_dict("records"))


def straggler_verdict(summary: pd.DataFrame, distribution: pd.DataFrame, row,
                      lateness: pd.DataFrame | None = None, shapes: pd.DataFrame | None = None) -> StragglerVerdict:
    """The verdict the SQL chose, in the sentences of kineto_sql.fleet.verdict."""
    stats = _stats(distribution)
    chosen = None if pd.isna(row["quantity"]) else next(s for s in stats if s.column == row["quantity"])
    median_step = float(row["median_step_us"]) if pd.notna(row["median_step_us"]) else float("nan")
    threshold = float(row["threshold_pct"])
    n = int(row["ranks"])
    if pd.isna(row["straggler"]):
        return StragglerVerdict(None, chosen, stats, median_step, threshold,
                                no_straggler_text(n, chosen, median_step, threshold))
    rank = int(row["straggler"])
    text = straggler_text(summary, chosen, stats, median_step, lateness, shapes)
    return StragglerVerdict(rank, chosen, stats, median_step, threshold, text, straggler_cause(rank, shapes))


def moving_verdict(fixed: StragglerVerdict, row) -> StragglerVerdict:
    """No rank is slow every step, but the slowest rank of each step costs the others a tenth of a step or
    more, and the ranks' input shapes differ (queries/fleet/moving_straggler.sql): data imbalance that moves
    between ranks. The rank named is the one that costs the others most over the steps."""
    rank = int(row["straggler"])
    moving = {"steps": int(row["steps"]), "slowest_counts": str(row["slowest_counts"]),
              "mean_excess_us": float(row["mean_excess_us"]), "excess_pct_of_step": float(row["excess_pct_of_step"]),
              "excess_sum_us": float(row["excess_sum_us"]), "total_excess_us": float(row["total_excess_us"]),
              "slowest_steps": int(row["slowest_steps"])}
    return replace(fixed, straggler=rank, median_step_us=float(row["median_step_us"]),
                   narration=moving_text(rank, moving, float(row["median_step_us"])), cause="data imbalance",
                   moving=moving)


def summary_dict(report: FleetReport) -> dict:
    """The cross-rank reading as diagnose's `ranks_summary`."""
    verdict = report.verdict
    quantity = verdict.quantity
    pct = quantity.excess_pct_of_step if quantity else None
    if verdict.moving:
        pct = verdict.moving["excess_pct_of_step"]
    return {
        "ranks": len(report.ranks),
        "straggler": verdict.straggler,
        "moving": bool(verdict.moving),
        "quantity": (MOVING_QUANTITY if verdict.moving else quantity.meaning if quantity else None),
        "excess_pct_of_step": round(pct, 2) if pct is not None and not math.isnan(pct) else None,
        "median_step_us": verdict.median_step_us,
        "threshold_pct": verdict.threshold_pct,
        "cause": verdict.cause,
        "narration": verdict.narration,
    }
