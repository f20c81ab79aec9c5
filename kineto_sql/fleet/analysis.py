"""The cross-rank reading as DuckDB SQL (queries/fleet/*.sql) over the per-rank tables.

The tables come either from a Parquet dataset (`kineto-sql fleet DATASET`: nothing but Parquet is read)
or from the tasks' Arrow tables in memory (`diagnose RANK_DIR`, `fleet RANK_DIR` without --out); both go
through the same views and the same queries. Values reach SQL only as DuckDB parameters.
"""
from __future__ import annotations

import functools
import importlib.resources
import math
from dataclasses import dataclass, field

import pandas as pd

from kineto_sql.errors import KinetoSqlError

DEFAULT_THRESHOLD_PCT = 10.0
# view files, in dependency order; the straggler query runs last, with its parameter
VIEWS = ("rank_summary", "distribution", "collective_skew", "rank_lateness")
# The tables are small (a few rows per rank); one thread reads them, and leaves the cores to the rank
# workers. With a view over the Parquet files per query and DuckDB's default threads, the driver's peak RSS
# grew by ~0.5 MB per rank (every query rescanned every file); read once, single-threaded, it is flat.
DUCKDB_CONFIG = {"threads": 1}
NEEDS = {"rank_summary": ("load", "hta_steps", "hta_temporal", "hta_overlap", "hta_balance"), "distribution": ("load",),
         "collective_skew": ("collectives",), "rank_lateness": ("collectives",)}


@functools.lru_cache(maxsize=None)
def fleet_sql(name: str) -> str:
    return importlib.resources.files("kineto_sql.queries").joinpath(f"fleet/{name}.sql").read_text()


@dataclass
class FleetReport:
    ranks: list
    summary: pd.DataFrame
    distribution: pd.DataFrame
    verdict: object  # kineto_sql.ranks.StragglerVerdict
    collective_skew: pd.DataFrame | None = None
    rank_lateness: pd.DataFrame | None = None
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


def analyse(connection, threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> FleetReport:
    """`connection` is what connect_tables / connect_dataset return."""
    con, present = connection
    missing = [t for t in NEEDS["rank_summary"] if t not in present]
    if missing:
        raise KinetoSqlError(f"the fleet tables lack {', '.join(missing)}; rerun with the hta part "
                             "(kineto-sql fleet RANK_DIR --parts hta,...)")
    for view in VIEWS:
        if all(t in present for t in NEEDS[view]):
            con.execute(fleet_sql(view))
    summary = con.table("fleet_rank_summary").df()
    distribution = con.table("fleet_distribution").df()
    verdict_row = con.execute(fleet_sql("straggler"), {"threshold_pct": float(threshold_pct)}).df().iloc[0]
    have_collectives = "collectives" in present
    skew = con.table("fleet_collective_skew").df() if have_collectives else None
    lateness = con.table("fleet_rank_lateness").df() if have_collectives else None
    summary["rank"] = summary["rank"].astype("int64")
    verdict = straggler_verdict(summary, distribution, verdict_row)
    return FleetReport([int(r) for r in summary["rank"]], summary, distribution, verdict, skew, lateness)


def _stats(distribution: pd.DataFrame):
    from kineto_sql.ranks import QuantityStats

    def num(v):
        return float("nan") if v is None or pd.isna(v) else float(v)

    return tuple(QuantityStats(
        column=r["quantity"], meaning=r["meaning"], direction=int(r["direction"]), median=num(r["median"]),
        mad=num(r["mad"]), std=num(r["std"]), minimum=num(r["min"]), maximum=num(r["max"]),
        worst_rank=int(r["worst_rank"]), worst_value=num(r["worst_value"]), worst_z=num(r["worst_z"]),
        excess_us=num(r["excess_us"]), excess_pct_of_step=num(r["excess_pct_of_step"]))
        for r in distribution.to_dict("records"))


def straggler_verdict(summary: pd.DataFrame, distribution: pd.DataFrame, row):
    """The verdict the SQL chose, in the five sentences of kineto_sql.ranks (the words live there)."""
    from kineto_sql import ranks

    stats = _stats(distribution)
    chosen = None if pd.isna(row["quantity"]) else next(s for s in stats if s.column == row["quantity"])
    median_step = float(row["median_step_us"]) if pd.notna(row["median_step_us"]) else float("nan")
    threshold = float(row["threshold_pct"])
    n = int(row["ranks"])
    if pd.isna(row["straggler"]):
        text = ranks._no_straggler_text(n, chosen, median_step, threshold)
        return ranks.StragglerVerdict(None, chosen, stats, median_step, threshold, text)
    text = ranks._straggler_text(summary, chosen, stats, median_step)
    return ranks.StragglerVerdict(int(row["straggler"]), chosen, stats, median_step, threshold, text)


def summary_dict(report: FleetReport) -> dict:
    """The cross-rank reading as diagnose's `ranks_summary`."""
    verdict = report.verdict
    quantity = verdict.quantity
    pct = quantity.excess_pct_of_step if quantity else None
    return {
        "ranks": len(report.ranks),
        "straggler": verdict.straggler,
        "quantity": quantity.meaning if quantity else None,
        "excess_pct_of_step": round(pct, 2) if pct is not None and not math.isnan(pct) else None,
        "median_step_us": verdict.median_step_us,
        "threshold_pct": verdict.threshold_pct,
        "narration": verdict.narration,
    }
