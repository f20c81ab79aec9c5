"""The dependency graph of every iteration window, read once from kineto.lib.dep_graph into numpy arrays."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

MODULE = "kineto.lib.dep_graph_edges"
NODES = "SELECT id, window_id, kind, utid, device, stream, ts, dur, tag, is_window_end, ready_ts " \
        "FROM kineto_dep_graph_nodes"
EDGES = "SELECT window_id, src, dst, kind, constrains, gap FROM kineto_dep_graph_edges"
WINDOWS = "SELECT id, ts, dur, step, is_cold FROM kineto_iterations ORDER BY id"
# A kernel that was queued behind the one before it on its stream (it started when that one ended) does not
# owe its start to its launch; after an edit its launch may hold it back by no more than a launch's
# latency, the median latency of the kernels that were not queued (capped at this many ns where none was).
DEFAULT_LAUNCH_LATENCY_NS = 5_000


@dataclass(frozen=True)
class Graph:
    """Nodes in arrays indexed 0..n-1 (`ids` maps back to the graph's node ids), edges as index pairs. The
    arrays are never changed in place: an edit returns a new Graph (kineto_sql.whatif.edits)."""

    ids: np.ndarray
    window: np.ndarray
    kind: np.ndarray          # 'host', 'call', 'device'
    tag: np.ndarray
    lane: np.ndarray          # utid for host / call nodes, -1 for device nodes
    stream_key: np.ndarray    # device nodes: one number per (device, stream); -1 for the others
    ts: np.ndarray
    dur: np.ndarray           # own duration (replay: end >= start + dur)
    ready: np.ndarray         # earliest start from outside the window, or INT64 min
    is_end: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    edge_kind: np.ndarray     # 'thread', 'launch', 'stream', 'wait'
    to_end: np.ndarray        # True: the edge holds back the destination's end
    gap: np.ndarray
    windows: dict             # window id -> (ts, dur, step, is_cold)

    @property
    def n(self) -> int:
        return len(self.ids)

    def with_(self, **changes) -> "Graph":
        return replace(self, **changes)

    def drop_edges(self, mask: np.ndarray) -> "Graph":
        keep = ~mask
        return replace(self, src=self.src[keep], dst=self.dst[keep], edge_kind=self.edge_kind[keep],
                       to_end=self.to_end[keep], gap=self.gap[keep])


def load_graph(tp) -> Graph:
    """The graph of every window of a loaded trace (a kineto_sql engine)."""
    tp.query(f"INCLUDE PERFETTO MODULE {MODULE}")
    nodes = tp.query(NODES).as_pandas_dataframe()
    edges = tp.query(EDGES).as_pandas_dataframe()
    windows = tp.query(WINDOWS).as_pandas_dataframe()
    return build(nodes, edges, windows)


def build(nodes, edges, windows) -> Graph:
    nodes = nodes.sort_values(["window_id", "ts", "id"], kind="stable").reset_index(drop=True)
    ids = nodes["id"].to_numpy(np.int64)
    index = {int(i): k for k, i in enumerate(ids)}
    src = np.array([index.get(int(s), -1) for s in edges["src"]], dtype=np.int64)
    dst = np.array([index.get(int(d), -1) for d in edges["dst"]], dtype=np.int64)
    ok = (src >= 0) & (dst >= 0)
    kind = nodes["kind"].to_numpy(object)
    ts = nodes["ts"].to_numpy(np.int64)
    dur = np.maximum(nodes["dur"].to_numpy(np.int64), 0)
    ready = nodes["ready_ts"].fillna(np.iinfo(np.int64).min).to_numpy(np.int64)
    lane = nodes["utid"].fillna(-1).to_numpy(np.int64)
    stream_key = (nodes["device"].fillna(-1).to_numpy(np.int64) * (1 << 32)
                  + nodes["stream"].fillna(-1).to_numpy(np.int64))
    # a blocking call's own time is what it spends not waiting: its duration less the overlap with the
    # latest device work it waits for (that part comes back from the wait edges)
    src, dst = src[ok], dst[ok]
    edge_kind = edges["kind"].to_numpy(object)[ok]
    to_end = (edges["constrains"].to_numpy(object) == "end")[ok]
    gap = edges["gap"].fillna(0).to_numpy(np.int64)[ok]
    dur = _own_time(ts, dur, src, dst, to_end, gap)
    gap = _launch_gaps(ts, dur, src, dst, edge_kind, gap)
    wins = {int(r.id): (int(r.ts), int(r.dur), None if r.step != r.step else int(r.step), bool(r.is_cold))
            for r in windows.itertuples()}
    return Graph(ids=ids, window=nodes["window_id"].to_numpy(np.int64), kind=kind,
                 tag=nodes["tag"].fillna("").to_numpy(object), lane=lane, stream_key=stream_key, ts=ts, dur=dur, ready=ready,
                 is_end=nodes["is_window_end"].fillna(0).to_numpy(bool), src=src, dst=dst,
                 edge_kind=edge_kind, to_end=to_end, gap=gap, windows=wins)


def _own_time(ts, dur, src, dst, to_end, gap):
    """Blocking calls: the measured duration less the part spent waiting for the latest waited work."""
    own = dur.copy()
    waits = np.flatnonzero(to_end)
    if waits.size == 0:
        return own
    waited_end = np.full(len(ts), np.iinfo(np.int64).min)
    np.maximum.at(waited_end, dst[waits], ts[src[waits]] + dur[src[waits]])
    has = waited_end > np.iinfo(np.int64).min
    overlap = np.clip(waited_end - ts, 0, dur)
    own[has] = dur[has] - overlap[has]
    return own


def _launch_gaps(ts, dur, src, dst, edge_kind, gap):
    """A queued kernel's launch edge gets the typical launch latency (never more than it measured), so that
    once the queue ahead of it drains it can start that long after its launch, not at its measured time."""
    launch = np.flatnonzero(edge_kind == "launch")
    if launch.size == 0:
        return gap
    stream = np.flatnonzero(edge_kind == "stream")
    queued = np.zeros(len(ts), dtype=bool)
    prev_end = ts[src[stream]] + dur[src[stream]]
    queued[dst[stream]] = ts[dst[stream]] <= prev_end
    q = queued[dst[launch]]
    free = gap[launch][~q]
    latency = int(np.median(free)) if free.size else DEFAULT_LAUNCH_LATENCY_NS
    latency = max(latency, 0)
    out = gap.copy()
    out[launch[q]] = np.minimum(gap[launch[q]], latency)
    return out
