"""The ledger buckets of a path walked over the dependency graph in Python: each node's time cut into the
ledger's buckets by SQL (kineto.lib.dep_graph_buckets, the pieces reading.critical_path names its segments
with), a path segment named from its node's pieces."""
from __future__ import annotations

from kineto_sql.whatif.per_trace import LatestTrace

from kineto_sql.sql.literals import include_statement
from kineto_sql.whatif.graph import Graph
from kineto_sql.whatif.replay import Replay

MODULE = "kineto.lib.dep_graph_buckets"
PIECES = "SELECT node_id, ts, dur, bucket FROM kineto_dep_graph_buckets()"
# a segment's part before its node's replayed start: a launch's latency, as reading.critical_path names it
LATENCY = "idle.launch"
# per loaded trace: diagnose's critical path line and the fleet's per-rank task read the same pieces
_LOADED: LatestTrace = LatestTrace()


def node_pieces(tp) -> dict[int, tuple]:
    """node id -> ((start, end, bucket), ...) in time order, for every node with time (once per loaded trace)."""
    return _LOADED.get(tp, lambda: _pieces(tp))


def _pieces(tp) -> dict[int, tuple]:
    tp.query(include_statement(MODULE))
    cols = tp.columns(PIECES)
    pieces: dict[int, tuple] = {}
    several = []  # the nodes of more than one piece, put in time order below
    for node, start, dur, bucket in zip(cols.column("node_id"), cols.column("ts"), cols.column("dur"),
                                        cols.column("bucket")):
        got = pieces.get(node)
        if got is None:
            pieces[node] = ((start, start + dur, bucket),)
        else:
            if len(got) == 1:
                several.append(node)
            pieces[node] = got + ((start, start + dur, bucket),)
    for node in several:
        pieces[node] = tuple(sorted(pieces[node]))
    return pieces


def name_segments(out: dict, key, graph: Graph, result: Replay, segments, pieces: dict) -> None:
    """name_segment over many (node, ns, end) segments of one graph and replay."""
    ids, starts = graph.ids.tolist(), result.start.tolist()
    for node, ns, end in segments:
        _name(out, key, ns, end, starts[node], pieces.get(ids[node], ()))


def name_segment(out: dict, key, graph: Graph, result: Replay, node: int, ns: int, end: int,
                 pieces: dict) -> None:
    """Add a segment of `ns` ending at `end` (the node's replayed end) to out[(key, bucket)]: the part
    before the node's replayed start is a launch's latency; the node's own part takes the buckets of its
    measured time from its end backwards (the first piece takes what the replay added)."""
    _name(out, key, ns, end, int(result.start[node]), pieces.get(int(graph.ids[node]), ()))


def _name(out: dict, key, ns: int, end: int, start: int, mine: tuple) -> None:
    own = max(min(ns, end - start), 0)
    if ns > own:
        out[(key, LATENCY)] = out.get((key, LATENCY), 0) + ns - own
    if not mine:
        if own > 0:
            out[(key, LATENCY)] = out.get((key, LATENCY), 0) + own
        return
    left = own
    for lo, hi, bucket in reversed(mine):
        take = min(hi - lo, left)
        if take > 0:
            out[(key, bucket)] = out.get((key, bucket), 0) + take
        left -= take
        if left <= 0:
            break
    if left > 0:
        out[(key, mine[0][2])] = out.get((key, mine[0][2]), 0) + left
