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
    rows = tp.rows(PIECES)
    pieces: dict[int, list] = {}
    for node, start, dur, bucket in zip(rows.column("node_id"), rows.column("ts"), rows.column("dur"),
                                        rows.column("bucket")):
        pieces.setdefault(node, []).append((start, start + dur, bucket))
    return {k: tuple(sorted(v)) if len(v) > 1 else tuple(v) for k, v in pieces.items()}


def name_segment(out: dict, key, graph: Graph, result: Replay, node: int, ns: int, end: int,
                 pieces: dict) -> None:
    """Add a segment of `ns` ending at `end` (the node's replayed end) to out[(key, bucket)]: the part
    before the node's replayed start is a launch's latency; the node's own part takes the buckets of its
    measured time from its end backwards (the first piece takes what the replay added)."""
    def add(bucket, t):
        if t > 0:
            out[(key, bucket)] = out.get((key, bucket), 0) + t

    own = max(min(ns, end - int(result.start[node])), 0)
    add(LATENCY, ns - own)
    mine = pieces.get(int(graph.ids[node]), ())
    if not mine:
        add(LATENCY, own)
        return
    left = own
    for lo, hi, bucket in reversed(mine):
        take = min(hi - lo, left)
        add(bucket, take)
        left -= take
        if left <= 0:
            break
    add(mine[0][2], left)
