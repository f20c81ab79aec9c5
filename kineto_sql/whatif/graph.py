"""The dependency graph of every iteration window, read once from kineto.lib.dep_graph into numpy arrays."""
from __future__ import annotations

from kineto_sql.whatif.per_trace import LatestTrace
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
NONE = np.iinfo(np.int64).min
# the graph the latest loaded trace gave (a trace's graph never changes once loaded): diagnose's predictions,
# its critical path line and the fleet's per-rank task (the job's graph across ranks) read it once
_LOADED: LatestTrace = LatestTrace()


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
    edge_kind: np.ndarray     # 'thread', 'launch', 'stream', 'wait', 'fork', 'join'; inferred in SQL: 'event'
                              # (cross-stream wait), 'queue' (a launch blocked on a full launch queue)
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
    """The graph of every window of a loaded trace (a kineto_sql engine), read as plain rows (diagnose never
    imports pandas)."""
    tp.query(f"INCLUDE PERFETTO MODULE {MODULE}")
    return build(tp.columns(NODES), tp.columns(EDGES), tp.rows(WINDOWS))


def graph_of(tp) -> Graph:
    """load_graph, once per loaded trace."""
    return _LOADED.get(tp, lambda: load_graph(tp))


def _ints(rows, name: str, missing: int = 0) -> np.ndarray:
    values = rows.column(name)
    if None in values:
        values = [missing if v is None else v for v in values]
    # numpy converts the engine's ints (and truncates a float, as int() does) in C
    return np.array(values, dtype=np.int64)


def _strs(rows, name: str) -> np.ndarray:
    return np.array(["" if v is None else str(v) for v in rows.column(name)], dtype=object)


def build(nodes, edges, windows) -> Graph:
    """From the results of NODES and EDGES (anything with .column(name): kineto_sql.engine.rows.Columns or
    Rows) and the rows of WINDOWS (kineto_sql.engine.rows.Rows)."""
    raw_ids, raw_window, raw_ts = _ints(nodes, "id"), _ints(nodes, "window_id"), _ints(nodes, "ts")
    order = np.lexsort((raw_ids, raw_ts, raw_window))
    ids = raw_ids[order]
    position = np.empty(len(ids), dtype=np.int64)
    position[order] = np.arange(len(ids))
    by_id = np.argsort(raw_ids, kind="stable")
    sorted_ids = raw_ids[by_id]

    def index_of(values: np.ndarray) -> np.ndarray:
        """Node ids -> positions in the sorted arrays (-1 for an id that is no node)."""
        if not len(ids):
            return np.full(len(values), -1, dtype=np.int64)
        found = np.clip(np.searchsorted(sorted_ids, values), 0, len(ids) - 1)
        return np.where(sorted_ids[found] == values, position[by_id[found]], -1)

    src, dst = index_of(_ints(edges, "src")), index_of(_ints(edges, "dst"))
    ok = (src >= 0) & (dst >= 0)
    kind = _strs(nodes, "kind")[order]
    tag = _strs(nodes, "tag")[order]
    ts = raw_ts[order]
    dur = np.maximum(_ints(nodes, "dur")[order], 0)
    ready = _ints(nodes, "ready_ts", NONE)[order]
    lane = _ints(nodes, "utid", -1)[order]
    stream_key = _ints(nodes, "device", -1)[order] * (1 << 32) + _ints(nodes, "stream", -1)[order]
    src, dst = src[ok], dst[ok]
    edge_kind = _strs(edges, "kind")[ok]
    to_end = (_strs(edges, "constrains") == "end")[ok]
    gap = _ints(edges, "gap")[ok]
    # the gaps below compare measured times; the graph keeps each node's own time
    own = _own_time(ts, dur, src, dst, to_end, gap)
    gap = _launch_gaps(ts, dur, src, dst, edge_kind, gap)
    dur = own
    wins = {int(r["id"]): (int(r["ts"]), int(r["dur"]), None if r["step"] is None else int(r["step"]),
                           bool(r["is_cold"])) for r in windows.records()}
    return Graph(ids=ids, window=raw_window[order], kind=kind, tag=tag, lane=lane,
                 stream_key=stream_key, ts=ts, dur=dur, ready=ready,
                 is_end=_ints(nodes, "is_window_end")[order].astype(bool), src=src, dst=dst,
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
    queued[dst[stream]] = ts[dst[stream]] <= prev_end + np.maximum(gap[stream], 0)
    # a kernel held back by another stream's work (an event edge) owes its start to that work, not its launch
    queued[dst[edge_kind == "event"]] = True
    q = queued[dst[launch]]
    free = gap[launch][~q]
    latency = int(np.median(free)) if free.size else DEFAULT_LAUNCH_LATENCY_NS
    latency = max(latency, 0)
    out = gap.copy()
    out[launch[q]] = np.minimum(gap[launch[q]], latency)
    return out
