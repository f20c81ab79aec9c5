"""Re-time a dependency graph: one pass over the nodes in topological order (Kahn), linear in nodes plus
edges. A node starts at the latest of its `start` edges' (source end + gap), its outside ready time, or, with
none of these, its measured start; it ends at the latest of (start + own duration) and its `end` edges'
(source end + gap)."""
from __future__ import annotations

import heapq
from collections import OrderedDict
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
        end, preds = self._walk_lists(graph)
        out, seen, cap = [], set(), end[k]
        while k >= 0 and k not in seen and end[k] > floor:
            seen.add(k)
            pred = preds[k]
            hi = min(end[k], cap)
            begin = max(end[pred] if pred >= 0 else floor, floor)
            if hi > begin:
                out.append((k, hi - begin, hi))
            cap = min(hi, begin)
            k = pred
        return out

    def _walk_lists(self, graph: Graph) -> tuple[list, list]:
        """(replayed ends, each node's predecessor on a walk: the source of the edge that set its end, else
        its start, -1 for none) as lists, once per graph: a walk per window reads them node by node."""
        cached = self.__dict__.get("_walk")
        if cached is not None and cached[0] is graph.src:
            return cached[1], cached[2]
        by = np.where(self.end_by >= 0, self.end_by, self.start_by)
        preds = np.where(by >= 0, graph.src[np.maximum(by, 0)] if graph.src.size else -1, -1)
        value = (self.end.tolist(), preds.tolist())
        # a frozen dataclass: the cache goes straight into the instance's dict
        self.__dict__["_walk"] = (graph.src, *value)
        return value

    def path(self, graph: Graph, window: int) -> dict[int, int]:
        """{node id: ns it holds the window's critical path} (Replay.segments)."""
        out: dict[int, int] = {}
        for k, ns, _ in self.segments(graph, window):
            node = int(graph.ids[k])
            out[node] = out.get(node, 0) + ns
        return out


def topological_order(graph: Graph) -> tuple[np.ndarray, int]:
    structure = _structure(graph)
    return np.array(structure.order, dtype=np.int64), structure.cyclic


@dataclass(frozen=True)
class _Structure:
    """What a replay needs of a graph's edges: a topological order (Kahn), the nodes left on a cycle, and
    each node's in-edges split into `start` and `end` edges (CSR, each in the order of the edges sorted
    stably by destination, so that of equal candidates the first edge wins, as it always did), as plain
    lists: the replay is a Python loop and list indexing is its cheapest step."""

    order: list
    cyclic: int
    start_heads: list
    start_edges: list   # edge indices
    start_src: list
    end_heads: list
    end_edges: list
    end_src: list


# The structure of the last few graphs replayed, keyed by their edge arrays: an edit that changes only
# durations or gaps keeps the arrays, so the predictions of one trace (a replay per finding, two where the
# fix's outcome is uncertain) sort the edges once. The topological order of the last acyclic graph is kept
# too: an edit drops edges or adds a few, and where every edge of the edited graph still runs forward in
# that order it is a topological order of the edited graph as well (checked in numpy); on an acyclic graph
# every node's replayed times depend only on its in-edges, not on which valid order visits it.
_CACHE: "OrderedDict[tuple[int, int, int], tuple]" = OrderedDict()
_CACHE_SIZE = 8
_LAST_ORDER: list = []  # [(node count, order as an array, order as a list)] of the last acyclic graph


def _structure(graph: Graph) -> _Structure:
    key = (id(graph.src), id(graph.dst), id(graph.to_end))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is graph.src and hit[1] is graph.dst and hit[2] is graph.to_end:
        _CACHE.move_to_end(key)
        return hit[3]
    n = graph.n
    order, cyclic = _reused_order(graph)
    if order is None:
        order, cyclic = _kahn(graph)
        if cyclic == 0:
            _LAST_ORDER[:] = [(n, np.array(order, dtype=np.int64), order)]
    by_dst = np.argsort(graph.dst, kind="stable")
    is_end = graph.to_end[by_dst]
    start_e, end_e = by_dst[~is_end], by_dst[is_end]
    nodes = np.arange(n + 1)
    value = _Structure(order, cyclic,
                       np.searchsorted(graph.dst[start_e], nodes).tolist(), start_e.tolist(),
                       graph.src[start_e].tolist(),
                       np.searchsorted(graph.dst[end_e], nodes).tolist(), end_e.tolist(),
                       graph.src[end_e].tolist())
    # the arrays are kept with their entry, so an id is never reused for other arrays while it is cached
    _CACHE[key] = (graph.src, graph.dst, graph.to_end, value)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def _reused_order(graph: Graph) -> tuple[list | None, int]:
    """The last acyclic graph's topological order, where it is one of this graph too (same nodes, every edge
    from an earlier node to a later one)."""
    if not _LAST_ORDER or _LAST_ORDER[0][0] != graph.n:
        return None, 0
    _, order, as_list = _LAST_ORDER[0]
    position = np.empty(graph.n, dtype=np.int64)
    position[order] = np.arange(graph.n)
    if graph.src.size and not (position[graph.src] < position[graph.dst]).all():
        return None, 0
    return as_list, 0


def _kahn(graph: Graph) -> tuple[list, int]:
    """Kahn's order, the lowest-index ready node first. Nodes are indexed in (window, start) order, so the
    replay's loop then reads its lists nearly front to back; a first-in-first-out queue hops across every
    window's nodes at once, and on a 4x replication its replay cost 5-6x, not 4x. Any Kahn order leaves the
    same nodes out (those on or after a cycle) and gives every node the same replayed times."""
    n = graph.n
    indegree = np.bincount(graph.dst, minlength=n)
    order = np.argsort(graph.src, kind="stable")
    heads = np.searchsorted(graph.src[order], np.arange(n + 1)).tolist()
    out_dst = graph.dst[order].tolist()
    ready = np.flatnonzero(indegree == 0).tolist()  # ascending: already a heap
    result = []
    indegree = indegree.tolist()
    while ready:
        k = heapq.heappop(ready)
        result.append(k)
        for d in out_dst[heads[k]:heads[k + 1]]:
            indegree[d] -= 1
            if indegree[d] == 0:
                heapq.heappush(ready, d)
    return result, n - len(result)


def replay(graph: Graph) -> Replay:
    st = _structure(graph)
    gap = graph.gap.tolist()
    s_heads, s_edges, s_src = st.start_heads, st.start_edges, st.start_src
    e_heads, e_edges, e_src = st.end_heads, st.end_edges, st.end_src
    s_gap = [gap[e] for e in s_edges]
    e_gap = [gap[e] for e in e_edges]
    ts = graph.ts.tolist()
    dur = graph.dur.tolist()
    ready = graph.ready.tolist()
    start = list(ts)
    end = [t + d for t, d in zip(ts, dur)]
    n = graph.n
    start_by = [-1] * n
    end_by = [-1] * n
    for k in st.order:
        a, b = s_heads[k], s_heads[k + 1]
        if b == a:
            s, s_by = NONE, -1
        else:
            s, s_by = end[s_src[a]] + s_gap[a], s_edges[a]
            for i in range(a + 1, b):
                t = end[s_src[i]] + s_gap[i]
                if t > s:
                    s, s_by = t, s_edges[i]
        r = ready[k]
        if r > s:
            s, s_by = r, -1
        if s == NONE:
            s = ts[k]
        start[k] = s
        start_by[k] = s_by
        own_end = s + dur[k]
        a, b = e_heads[k], e_heads[k + 1]
        if b == a:
            end[k] = own_end
            continue
        e_cons, e_by = NONE, -1
        for i in range(a, b):
            t = end[e_src[i]] + e_gap[i]
            if t > e_cons:
                e_cons, e_by = t, e_edges[i]
        if e_cons > own_end:
            end[k], end_by[k] = e_cons, e_by
        else:
            end[k] = own_end
    return Replay(np.array(start, dtype=np.int64), np.array(end, dtype=np.int64),
                  np.array(start_by, dtype=np.int64), np.array(end_by, dtype=np.int64), st.cyclic)


def drift(graph: Graph, result: Replay | None = None, steady_only: bool = True) -> tuple[int, int]:
    """(replayed, measured) total width of the windows (steady ones unless every window is cold)."""
    result = result or replay(graph)
    widths = result.window_durations(graph)
    chosen = [w for w in widths if not (steady_only and graph.windows[w][3])] or list(widths)
    return sum(widths[w] for w in chosen), sum(graph.windows[w][1] for w in chosen)
