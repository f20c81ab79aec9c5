"""Re-time a dependency graph: one pass over the nodes in topological order (Kahn), linear in nodes plus
edges. A node starts at the latest of its `start` edges' (source end + gap), its outside ready time, or, with
none of these, its measured start; it ends at the latest of (start + own duration) and its `end` edges'
(source end + gap)."""
from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np

from kineto_sql.whatif.graph import Graph

NONE = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Replay:
    start: np.ndarray
    end: np.ndarray
    # the index of the edge that set each node's start (-1: its own measured start or ready time) and end
    # (-1: start + own duration)
    start_by: np.ndarray
    end_by: np.ndarray
    # nodes left out because they sit on a cycle (a clock skew between host and device can make one)
    cyclic: int

    def window_durations(self, graph: Graph) -> dict[int, int]:
        """Replayed width of each window: from its start to the end of its main thread's last node."""
        out = {}
        for k in np.flatnonzero(graph.is_end):
            w = int(graph.window[k])
            out[w] = int(self.end[k]) - graph.windows[w][0]
        return out

    def segments(self, graph: Graph, window: int) -> list[tuple[int, int, int]]:
        """The window's critical path in the replayed times, latest first: walked back from the end of its
        main thread (Replay.walk), as reading.critical_path walks the measured graph. (node index, ns it
        holds the path inside the window, the end of that stretch); [] for a window without a main-thread
        end."""
        ends = np.flatnonzero(graph.is_end & (graph.window == window))
        if not ends.size:
            return []
        return self.walk(graph, int(ends[0]), graph.windows[window][0])

    def walk(self, graph: Graph, k: int, floor: int) -> list[tuple[int, int, int]]:
        """The critical path back from node k down to `floor`, latest first: at each node to the edge that
        set its end (a wait) or else its start. A stretch ends at its node's replayed end or where the
        stretch after it begins, whichever is first: a blocking copy's call can return a few us before its
        device copy is timed to end (a wait edge with a negative gap, the two clocks disagreeing), and the
        copy holds the path only until the call returned, not twice over. So the stretches add up to the
        time from floor to k's end. (node index, ns, the stretch's end)."""
        out, seen, cap = [], set(), int(self.end[k])
        while k >= 0 and k not in seen and self.end[k] > floor:
            seen.add(k)
            e = self.end_by[k] if self.end_by[k] >= 0 else self.start_by[k]
            pred = int(graph.src[e]) if e >= 0 else -1
            hi = min(int(self.end[k]), cap)
            begin = max(int(self.end[pred]) if pred >= 0 else floor, floor)
            if hi > begin:
                out.append((k, hi - begin, hi))
            cap = min(hi, begin)
            k = pred
        return out

    def path(self, graph: Graph, window: int) -> dict[int, int]:
        """{node id: ns it holds the window's critical path} (Replay.segments)."""
        out: dict[int, int] = {}
        for k, ns, _ in self.segments(graph, window):
            node = int(graph.ids[k])
            out[node] = out.get(node, 0) + ns
        return out


def topological_order(graph: Graph) -> tuple[np.ndarray, int]:
    order, cyclic, _, _ = _structure(graph)
    return np.array(order, dtype=np.int64), cyclic


# The edge structure of the last few graphs replayed (topological order, in-edges per node), keyed by their
# edge arrays: an edit that changes only durations or gaps keeps the arrays, so the predictions of one trace
# (a replay per finding, two where the fix's outcome is uncertain) sort and walk the edges once.
_CACHE: "OrderedDict[tuple[int, int, int], tuple]" = OrderedDict()
_CACHE_SIZE = 8


def _structure(graph: Graph) -> tuple[list, int, list, list]:
    """(topological order (Kahn), nodes on a cycle, edge indices sorted by destination, each node's first
    index in them)."""
    key = (id(graph.src), id(graph.dst), id(graph.to_end))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is graph.src and hit[1] is graph.dst and hit[2] is graph.to_end:
        _CACHE.move_to_end(key)
        return hit[3]
    n = graph.n
    indegree = np.bincount(graph.dst, minlength=n)
    order = np.argsort(graph.src, kind="stable")
    heads = np.searchsorted(graph.src[order], np.arange(n + 1)).tolist()
    out_dst = graph.dst[order].tolist()
    ready = deque(np.flatnonzero(indegree == 0).tolist())
    result = []
    indegree = indegree.tolist()
    while ready:
        k = ready.popleft()
        result.append(k)
        for d in out_dst[heads[k]:heads[k + 1]]:
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    by_dst = np.argsort(graph.dst, kind="stable")
    in_heads = np.searchsorted(graph.dst[by_dst], np.arange(n + 1)).tolist()
    value = (result, n - len(result), by_dst.tolist(), in_heads)
    # the arrays are kept with their entry, so an id is never reused for other arrays while it is cached
    _CACHE[key] = (graph.src, graph.dst, graph.to_end, value)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def replay(graph: Graph) -> Replay:
    n = graph.n
    topo, cyclic, by_dst, heads = _structure(graph)
    src = graph.src.tolist()
    gap = graph.gap.tolist()
    to_end = graph.to_end.tolist()
    ts = graph.ts.tolist()
    dur = graph.dur.tolist()
    ready = graph.ready.tolist()
    start = list(ts)
    end = [t + d for t, d in zip(ts, dur)]
    start_by = [-1] * n
    end_by = [-1] * n
    for k in topo:
        s, s_by = NONE, -1
        e_cons, e_by = NONE, -1
        for e in by_dst[heads[k]:heads[k + 1]]:
            t = end[src[e]] + gap[e]
            if to_end[e]:
                if t > e_cons:
                    e_cons, e_by = t, e
            elif t > s:
                s, s_by = t, e
        if ready[k] > s:
            s, s_by = ready[k], -1
        if s == NONE:
            s = ts[k]
        own_end = s + dur[k]
        start[k], start_by[k] = s, s_by
        if e_cons > own_end:
            end[k], end_by[k] = e_cons, e_by
        else:
            end[k], end_by[k] = own_end, -1
    return Replay(np.array(start, dtype=np.int64), np.array(end, dtype=np.int64),
                  np.array(start_by, dtype=np.int64), np.array(end_by, dtype=np.int64), cyclic)


def drift(graph: Graph, result: Replay | None = None, steady_only: bool = True) -> tuple[int, int]:
    """(replayed, measured) total width of the windows (steady ones unless every window is cold)."""
    result = result or replay(graph)
    widths = result.window_durations(graph)
    chosen = [w for w in widths if not (steady_only and graph.windows[w][3])] or list(widths)
    return sum(widths[w] for w in chosen), sum(graph.windows[w][1] for w in chosen)
