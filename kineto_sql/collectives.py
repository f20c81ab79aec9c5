"""Collectives across ranks: each call matched on every rank, its latency, bandwidth and skew.

Each rank's calls come from the `reading.collective_calls` query (one row per call: step, process group,
collective, sequence number, device time, message bytes). A call is matched across ranks by
(step, process group, collective, seq): NCCL and gloo require every rank of a group to issue the group's
collectives in the same order, so the n-th all_reduce of a group in a step is one call everywhere.

Per matched call (definitions of NCCL's nccl-tests, doc/PERFORMANCE.md):
- latency = the shortest duration across ranks. Every rank's kernel (or gloo op) starts when that rank
  arrives and ends when the data is through; the last rank to arrive waits for nobody, so its duration is
  the transfer itself and the others' surplus is waiting.
- size S, per nccl-tests: all_reduce / broadcast / reduce / send_recv: the message; all_gather: the
  gathered output (n x the input when only the input is recorded); reduce_scatter and all_to_all: the
  full input buffer of one rank.
- algbw = S / latency; busbw = algbw x the bus factor: all_reduce 2(n-1)/n, all_gather, reduce_scatter and
  all_to_all (n-1)/n, broadcast / reduce / send_recv 1. busbw is what compares with the link's
  bandwidth in one direction, whatever the collective.
- start skew = last start - first start; end skew = last end - first end; wait = sum over ranks of
  (last start - own start): time the early ranks spent inside the call waiting for the last.
- all_to_allv imbalance: the largest per-destination split over the mean split (from `In split size`),
  else the largest rank's message over the mean message across ranks; 1.0 is balanced.

Rules (findings), with thresholds an expert would defend on any job:
- slow: busbw under `slow_pct` (25%) of the GPU's scale-up link bandwidth (kineto.lib.device_specs,
  one direction) for a message of at least `slow_min_bytes` (32 MiB). nccl-tests on NVLink / Infinity
  Fabric nodes reach 60-90% of the link at >= 32 MiB for every collective; below a quarter of it the
  traffic is on a slower path (PCIe or the network instead of NVLink, a broken topology, a
  misconfigured NCCL_P2P / NCCL_ALGO), or it is contended. Smaller messages are latency-bound and not
  judged against the link.
- skew: start skew of at least `skew_min_us` (100 us, ~10x NCCL's per-call latency on one node) and at
  least `skew_factor` (2x) the call's latency: the early ranks wait longer than the transfer takes, so
  the time is lost to imbalance before the call (compute, data loading, a sync), not to the network.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from kineto_sql.errors import KinetoSqlError

BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}

MATCH_KEY = ["step", "pg", "collective", "seq"]


@dataclass(frozen=True)
class Thresholds:
    slow_pct: float = 25.0
    slow_min_bytes: int = 32 << 20
    skew_min_us: float = 100.0
    skew_factor: float = 2.0


@dataclass(frozen=True)
class RankCalls:
    """One rank's calls, as a worker brings them back."""

    path: str
    rank: int | None
    ts_offset_ns: int
    calls: pd.DataFrame


@dataclass
class CollectivesReport:
    ranks: list[int]
    calls: pd.DataFrame
    findings: list[dict] = field(default_factory=list)
    headline: str = ""


def bus_factor(collective: str, n: int) -> float | None:
    f = BUS_FACTOR.get(collective)
    return f(n) if f and n >= 1 else None


def algo_size(collective: str, in_bytes: float | None, out_bytes: float | None, n: int) -> float | None:
    """The size S of nccl-tests for one call on one rank."""
    def known(v):
        return v is not None and v == v

    if collective == "all_gather":
        return out_bytes if known(out_bytes) else (in_bytes * n if known(in_bytes) else None)
    if collective == "reduce_scatter":
        return in_bytes if known(in_bytes) else (out_bytes * n if known(out_bytes) else None)
    return in_bytes if known(in_bytes) else None


def split_imbalance(split_text) -> float | None:
    """max / mean of an `In split size` list (JSON text), None when absent or empty."""
    if not isinstance(split_text, str) or not split_text.strip():
        return None
    try:
        splits = [float(x) for x in json.loads(split_text)]
    except (ValueError, TypeError):
        return None
    if not splits or sum(splits) <= 0:
        return None
    return max(splits) / (sum(splits) / len(splits))


def rank_calls(path: str, rank_from_name: int | None, engine=None) -> RankCalls:
    """Worker body: load one rank, run reading.collective_calls, return its rows. Runs in a child process."""
    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace
    from kineto_sql.runner import run_query

    tp = open_trace(path, engine or EngineChoice(), rank_from_name=rank_from_name)
    try:
        df = run_query(tp, "reading.collective_calls").df
        return RankCalls(str(path), tp.rank, int(tp.report.ts_offset_ns or 0), df)
    finally:
        tp.close()


def match_calls(ranks: list[RankCalls], thresholds: Thresholds = Thresholds()) -> pd.DataFrame:
    """One row per collective call matched across ranks, with latency, bandwidth, skew and imbalance."""
    frames = []
    for i, r in enumerate(ranks):
        if r.calls is None or r.calls.empty:
            continue
        df = r.calls.copy()
        df["rank"] = r.rank if r.rank is not None else i
        df["start"] = df["ts"].astype("int64") + r.ts_offset_ns
        df["end"] = df["start"] + df["dur"].astype("int64")
        frames.append(df)
    columns = MATCH_KEY + ["ranks", "size_bytes", "latency_us", "algbw_gbps", "busbw_gbps", "link_gbps",
                           "pct_of_link", "start_skew_us", "end_skew_us", "wait_us", "first_rank", "last_rank",
                           "imbalance", "slow", "skewed"]
    if not frames:
        return pd.DataFrame(columns=columns)
    every = pd.concat(frames, ignore_index=True)
    every["step"] = every["step"].astype("Int64")
    every["pg"] = every["pg"].fillna("")
    rows = []
    for key, g in every.groupby(MATCH_KEY, dropna=False, sort=False):
        n = int(g["group_size"].dropna().max()) if g["group_size"].notna().any() else len(g)
        sizes = [algo_size(c, b, o, n) for c, b, o in zip(g["collective"], g["in_bytes"], g["out_bytes"])]
        sizes = [s for s in sizes if s is not None]
        size = max(sizes) if sizes else None
        latency_ns = int(g["dur"].min())
        factor = bus_factor(key[2], n)
        algbw = size / latency_ns if size is not None and latency_ns > 0 else None   # bytes/ns == GB/s
        busbw = algbw * factor if algbw is not None and factor is not None else None
        link = g["link_gbps"].dropna().max() if "link_gbps" in g and g["link_gbps"].notna().any() else None
        last_start = int(g["start"].max())
        first = g.loc[g["start"].idxmin()]
        last = g.loc[g["start"].idxmax()]
        split = [split_imbalance(s) for s in g.get("in_split", pd.Series(dtype=object))]
        split = [s for s in split if s is not None]
        msgs = g["in_bytes"].dropna()
        imbalance = max(split) if split else (float(msgs.max() / msgs.mean()) if len(msgs) > 1 and msgs.mean() > 0
                                              else None)
        start_skew_us = (last_start - int(g["start"].min())) / 1e3
        pct = 100.0 * busbw / link if busbw is not None and link else None
        rows.append({
            "step": key[0], "pg": key[1], "collective": key[2], "seq": int(key[3]),
            "ranks": len(g), "size_bytes": size, "latency_us": latency_ns / 1e3,
            "algbw_gbps": algbw, "busbw_gbps": busbw, "link_gbps": link, "pct_of_link": pct,
            "start_skew_us": start_skew_us,
            "end_skew_us": (int(g["end"].max()) - int(g["end"].min())) / 1e3,
            "wait_us": float((last_start - g["start"]).sum()) / 1e3,
            "first_rank": int(first["rank"]), "last_rank": int(last["rank"]),
            "imbalance": imbalance,
            "slow": bool(pct is not None and size is not None and size >= thresholds.slow_min_bytes
                         and pct < thresholds.slow_pct),
            "skewed": bool(len(g) > 1 and start_skew_us >= thresholds.skew_min_us
                           and start_skew_us >= thresholds.skew_factor * latency_ns / 1e3),
        })
    out = pd.DataFrame(rows, columns=columns)
    for c in ("size_bytes", "latency_us", "algbw_gbps", "busbw_gbps", "link_gbps", "pct_of_link", "start_skew_us",
              "end_skew_us", "wait_us", "imbalance"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    first_start = every.groupby(MATCH_KEY, dropna=False, sort=False)["start"].min().reset_index(drop=True)
    return out.iloc[first_start.argsort(kind="stable")].reset_index(drop=True)


def findings(calls: pd.DataFrame, thresholds: Thresholds = Thresholds()) -> list[dict]:
    """The two rules over the matched calls: one finding per slow call, one per late rank for skew."""
    out: list[dict] = []
    for row in calls[calls["slow"]].itertuples(index=False):
        out.append({
            "rule": "collective_slow", "step": row.step, "collective": row.collective, "seq": row.seq,
            "impact_us": row.latency_us * (1 - row.pct_of_link / 100.0),
            "evidence": (f"{row.collective} #{row.seq} ({_size(row.size_bytes)}) ran at bus bandwidth "
                         f"{row.busbw_gbps:.1f} GB/s, {row.pct_of_link:.0f}% of the {row.link_gbps:.0f} GB/s "
                         f"link (under {thresholds.slow_pct:.0f}% for a message of "
                         f"{_size(thresholds.slow_min_bytes)} or more)"),
        })
    skewed = calls[calls["skewed"]]
    for rank, g in skewed.groupby("last_rank"):
        total = calls["wait_us"].sum()
        out.append({
            "rule": "collective_skew", "step": None, "collective": ", ".join(sorted(set(g["collective"]))),
            "seq": None, "impact_us": float(g["wait_us"].sum()),
            "evidence": (f"rank {rank} arrived last at {len(g)} of {len(calls)} collective calls "
                         f"(start skew up to {g['start_skew_us'].max() / 1e3:.2f} ms, "
                         f"up to {(g['start_skew_us'] / g['latency_us'].clip(lower=1e-3)).max():.0f}x the "
                         f"call's own latency); the other ranks waited {g['wait_us'].sum() / 1e3:.2f} ms in those calls "
                         f"({100 * g['wait_us'].sum() / total:.0f}% of all collective waiting): the time is "
                         "lost before the call on that rank, not in the network"),
        })
    return sorted(out, key=lambda f: -f["impact_us"])


def headline(calls: pd.DataFrame, ranks: list[int]) -> str:
    if calls.empty:
        return f"{len(ranks)} ranks, no collective calls found."
    lat = calls["latency_us"].sum()
    wait = calls["wait_us"].sum()
    return (f"{len(ranks)} ranks, {len(calls)} collective calls matched; transfer (min across ranks) "
            f"{lat / 1e3:.2f} ms per rank, early ranks waited {wait / 1e3:.2f} ms in all "
            f"({wait / max(len(ranks), 1) / 1e3:.2f} ms per rank); {int(calls['slow'].sum())} slow, "
            f"{int(calls['skewed'].sum())} skewed.")


def build_report(ranks: list[RankCalls], thresholds: Thresholds = Thresholds()) -> CollectivesReport:
    labels = [r.rank if r.rank is not None else i for i, r in enumerate(ranks)]
    if len(set(labels)) != len(labels):
        raise KinetoSqlError("two trace files claim the same rank; one trace file per rank, please")
    calls = match_calls(ranks, thresholds)
    return CollectivesReport(sorted(labels), calls, findings(calls, thresholds), headline(calls, labels))


def _size(n) -> str:
    if n is None or n != n:
        return "unknown size"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"
