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
NONE = np.iinfo(np.int64).min
# The device's timing slack: how soon after another stream's activity ends a kernel must start to be taken as
# waiting for it (an event edge), after its own stream's previous one to be taken as queued behind it, and
# after a device activity ends a long launch must return to be taken as blocked on the full launch queue.
EVENT_SLACK_NS = 20_000


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
    edge_kind: np.ndarray     # 'thread', 'launch', 'stream', 'wait', 'fork', 'join'; inferred: 'event'
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
    return build(tp.rows(NODES), tp.rows(EDGES), tp.rows(WINDOWS))


def _ints(rows, name: str, missing: int = 0) -> np.ndarray:
    return np.array([missing if v is None else int(v) for v in rows.column(name)], dtype=np.int64)


def _strs(rows, name: str) -> np.ndarray:
    return np.array(["" if v is None else str(v) for v in rows.column(name)], dtype=object)


def build(nodes, edges, windows) -> Graph:
    """From the rows of NODES, EDGES and WINDOWS (kineto_sql.engine.rows.Rows)."""
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
    src, dst, edge_kind, to_end, gap = _queue_waits(ts, dur, stream_key, kind, tag, src, dst, edge_kind, to_end,
                                                    gap)
    # the inferred edges below compare measured times; the graph keeps each node's own time
    own = _own_time(ts, dur, src, dst, to_end, gap)
    src, dst, edge_kind, to_end, gap = _event_waits(ts, dur, stream_key, kind, tag, src, dst, edge_kind, to_end, gap)
    gap = _stream_gaps(ts, dur, src, dst, edge_kind, gap)
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


def _queue_waits(ts, dur, stream_key, kind, tag, src, dst, edge_kind, to_end, gap):
    """Launch-queue back-pressure: a launch call blocks while the device's launch queue is full and returns
    when an activity ahead of it completes and frees a slot (PyTorch docs, "CUDA semantics", asynchronous
    execution: the host runs ahead only as far as the queue lets it). A launch that lasted more than EVENT_SLACK_NS beyond the
    median launch call and returned within EVENT_SLACK_NS after an activity on its device ended (one that
    was launched before it started and ended while it was blocked) waited for that activity: a `queue` edge
    from it, constraining the launch's end, with the measured gap; the launch's own time is then what is
    left after that end, so when the device work ahead gets shorter the host is released earlier instead
    of keeping the blocked time as host work."""
    n = len(ts)
    calls = np.flatnonzero((kind == "call") & (tag == "launch"))
    if calls.size == 0:
        return src, dst, edge_kind, to_end, gap
    typical = int(np.median(dur[calls]))
    blocked = calls[dur[calls] - typical > EVENT_SLACK_NS]
    if blocked.size == 0:
        return src, dst, edge_kind, to_end, gap
    device = np.where(kind == "device", stream_key >> 32, -1)
    launch = np.flatnonzero(edge_kind == "launch")
    call_device = np.full(n, -1, dtype=np.int64)
    call_device[src[launch]] = device[dst[launch]]
    launched_at = np.full(n, NONE)
    np.maximum.at(launched_at, dst[launch], ts[src[launch]] + dur[src[launch]])
    dev_nodes = np.flatnonzero(kind == "device")
    end = ts + dur
    by_end = dev_nodes[np.lexsort((end[dev_nodes], device[dev_nodes]))]
    keys_dev, keys_end = device[by_end], end[by_end]
    new_src, new_dst, new_gap = [], [], []
    for k in blocked[call_device[blocked] >= 0].tolist():
        lo = int(np.searchsorted(keys_dev, call_device[k], "left"))
        hi = int(np.searchsorted(keys_dev, call_device[k], "right"))
        j = lo + int(np.searchsorted(keys_end[lo:hi], end[k], "right")) - 1
        for c in by_end[max(j - 3, lo):j + 1][::-1].tolist():  # the latest ends first, at most 4 looked at
            if end[k] - end[c] <= EVENT_SLACK_NS and end[c] > ts[k] and NONE < launched_at[c] <= ts[k]:
                new_src.append(c)
                new_dst.append(k)
                new_gap.append(int(end[k] - end[c]))
                break
    return _with_edges((src, dst, edge_kind, to_end, gap), new_src, new_dst, new_gap, "queue", to_end_=True)


def _event_waits(ts, dur, stream_key, kind, tag, src, dst, edge_kind, to_end, gap):
    """Inferred cross-stream waits (cudaStreamWaitEvent, which Kineto records without the event it waits
    on). A device activity that started more than EVENT_SLACK_NS after both its launch returned and its own
    stream's previous activity ended was held back by something else on the device: when an activity on
    another stream of its device ended within EVENT_SLACK_NS of its start (either side: activities on two
    streams are timed by the device with a few us of jitter, so the waited one can appear to end a little
    after the waiter starts), after its launch, and was launched before it (an event can only be waited
    for once the work before it is queued: this also keeps a host / device clock skew from closing a cycle
    through the inferred edge), it waited for that activity (compute waiting for its all-reduce / all-to-all, a copy stream waiting for
    the compute that produced its tensor). An `event` edge from it, with the measured gap; its launch then
    no longer explains its start. Any class of activity can be waited for: limiting the source to
    collectives left a copy that waited on a compute stream held at its measured launch latency (6 ms on
    hta_trace_diff_control), so nothing that sped up the compute could move it."""
    n = len(ts)
    device = stream_key >> 32
    stream = np.flatnonzero(edge_kind == "stream")
    launch = np.flatnonzero(edge_kind == "launch")
    end = ts + dur
    prev_end = np.full(n, NONE)
    prev_end[dst[stream]] = end[src[stream]]
    launched_at = np.full(n, NONE)
    np.maximum.at(launched_at, dst[launch], end[src[launch]])
    dev_nodes = np.flatnonzero(kind == "device")
    t = ts[dev_nodes]
    before, launched = prev_end[dev_nodes], launched_at[dev_nodes]
    # (NONE: no predecessor / no launch; compared first, the subtraction would overflow)
    held = dev_nodes[((before == NONE) | (t - np.maximum(before, t - 2 * EVENT_SLACK_NS) > EVENT_SLACK_NS))
                     & (launched > NONE) & (t - np.maximum(launched, t - 2 * EVENT_SLACK_NS) > EVENT_SLACK_NS)]
    if held.size == 0:
        return src, dst, edge_kind, to_end, gap
    # activities by (device, end); for each held kernel the last few that ended before it on its device
    by_end = dev_nodes[np.lexsort((end[dev_nodes], device[dev_nodes]))]
    keys_dev, keys_end = device[by_end], end[by_end]
    new_src, new_dst, new_gap = [], [], []
    for k in held.tolist():
        lo = int(np.searchsorted(keys_dev, device[k], "left"))
        hi = int(np.searchsorted(keys_dev, device[k], "right"))
        j = lo + int(np.searchsorted(keys_end[lo:hi], ts[k] + EVENT_SLACK_NS, "right")) - 1
        for c in by_end[max(j - 3, lo):j + 1][::-1].tolist():  # the latest ends first, at most 4 looked at
            if stream_key[c] != stream_key[k] and abs(ts[k] - end[c]) <= EVENT_SLACK_NS \
                    and ts[c] < ts[k] and end[c] > launched_at[k] and launched_at[c] <= launched_at[k]:
                new_src.append(c)
                new_dst.append(k)
                new_gap.append(int(ts[k] - end[c]))
                break
    return _with_edges((src, dst, edge_kind, to_end, gap), new_src, new_dst, new_gap, "event", to_end_=False)


def _with_edges(edges, new_src, new_dst, new_gap, kind: str, to_end_: bool):
    """The edge arrays (src, dst, edge_kind, to_end, gap) with inferred edges of one kind appended."""
    src, dst, edge_kind, to_end, gap = edges
    count = len(new_src)
    return (np.concatenate([src, np.array(new_src, dtype=np.int64)]),
            np.concatenate([dst, np.array(new_dst, dtype=np.int64)]),
            np.concatenate([edge_kind, np.full(count, kind, dtype=object)]),
            np.concatenate([to_end, np.full(count, to_end_, dtype=bool)]),
            np.concatenate([gap, np.array(new_gap, dtype=np.int64)]))


def _stream_gaps(ts, dur, src, dst, edge_kind, gap):
    """An activity that started within EVENT_SLACK_NS after its stream's previous one ended was queued
    behind it (the device's own delay between back-to-back activities): its stream edge keeps that measured
    delay, so the stream, not the launch, explains its start (the SQL edge carries min(0, gap): it only
    says the activity cannot start before its predecessor ends)."""
    stream = np.flatnonzero(edge_kind == "stream")
    measured = ts[dst[stream]] - (ts[src[stream]] + dur[src[stream]])
    behind = (measured > 0) & (measured <= EVENT_SLACK_NS)
    out = gap.copy()
    out[stream[behind]] = measured[behind]
    return out


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
