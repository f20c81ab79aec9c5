"""The job's dependency graph across ranks: every rank's graph (kineto_sql.whatif.graph) in one index space,
joined at the collectives. A collective ends when the last rank of its group arrives: NCCL requires every
rank of a group to issue the group's collectives in the same order, so the n-th call of a (step, process
group, collective) is the same call on every rank (reading.collective_calls numbers them; queries/fleet
matches them the same way). Each rank's first kernel of a call becomes two nodes: its arrival (zero length,
holding the edges that started the kernel on that rank) and the transfer, which starts once every rank
of the group has arrived and lasts what the rank measured after the last arrival. So the replay of the
joined graph reproduces each rank's step, and an edit on one rank moves the others only through the
collectives: shortening the compute of a rank that waits saves nothing, shortening the last one to
arrive saves up to what the others waited."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kineto_sql.run.runner import run_query
from kineto_sql.whatif.buckets import name_segment, node_pieces
from kineto_sql.whatif.edits import EDITS, combine
from kineto_sql.whatif.graph import NONE, Graph, graph_of
from kineto_sql.whatif.replay import Replay, replay

CALLS = "reading.collective_calls"
# the joined graph's window ids: rank position * STRIDE + the rank's own window id; stream keys and host
# lanes are moved apart the same way, so that no two ranks share one
STRIDE = 1 << 24
ARRIVE = "arrive"
COLLECTIVE_EDGE = "collective"
# how far a call's last arrival may fall after a rank's end of it (two devices' clocks, aligned by the call
# ends, disagree by a few us) before the pair is taken for two different calls
SLACK_NS = 20_000


@dataclass(frozen=True)
class RankGraph:
    """One rank's graph and its collective calls: ((step, pg, collective, seq), start, end) on its clock;
    with `buckets`, the ledger bucket pieces of its nodes' time (kineto_sql.whatif.buckets.node_pieces);
    `rebased_ns`, what the loader took off the trace's timestamps (its report's ts_offset_ns: the fleet's
    clock offsets are on the trace's own clock)."""

    rank: int
    graph: Graph
    calls: tuple
    buckets: dict | None = None
    rebased_ns: int = 0
    # an edited graph's node durations as measured (kineto_sql.whatif.ranks.job_prediction): the join keeps
    # of a collective kernel what it measured after the last arrival, scaled as the edit scaled the kernel
    measured_dur: np.ndarray | None = None


def read_rank(tp, rank: int, buckets: bool = False) -> RankGraph:
    """A loaded rank trace's graph and collective calls (device calls only: a call with no kernel, gloo's,
    has no node to join), and with `buckets` the ledger bucket of each node's time. A trace diagnose read
    gives the graph and pieces it already holds (kineto_sql.whatif.graph.graph_of)."""
    graph = graph_of(tp)
    calls = tuple(((r["step"], r["pg"], r["collective"], int(r["seq"])), int(r["ts"]), int(r["ts"]) + int(r["dur"]))
                  for r in run_query(tp, CALLS).rows.records() if r["source"] == "kernel")
    pieces = node_pieces(tp) if buckets else None
    report = getattr(tp, "report", None)
    return RankGraph(rank, graph, calls, pieces, int(getattr(report, "ts_offset_ns", 0) or 0))


@dataclass(frozen=True)
class Job:
    graph: Graph
    rank_of: np.ndarray      # per node: the rank it runs on
    ranks: tuple             # the ranks, in the order their graphs were given
    steps: dict              # step -> the joined graph's windows of that step, one per rank that has it
    offsets: dict            # rank -> ns taken off its clock to put it on the first rank's
    joined: int              # collective calls joined across two ranks or more
    buckets: dict            # rank -> its RankGraph.buckets (or None)

    def step_widths(self, result: Replay | None = None) -> dict[int, int]:
        """Per step, the job's width: its slowest rank's window, measured, or replayed (`result`)."""
        widths = result.window_durations(self.graph) if result is not None else \
            {w: self.graph.windows[w][1] for w in self.graph.windows}
        return {s: max(widths[w] for w in ws if w in widths) for s, ws in self.steps.items()
                if any(w in widths for w in ws)}

    def steady_steps(self) -> list[int]:
        """The steps no rank calls cold (every step when each is cold somewhere)."""
        steady = [s for s, ws in sorted(self.steps.items()) if not any(self.graph.windows[w][3] for w in ws)]
        return steady or sorted(self.steps)

    def median_step(self, result: Replay | None = None) -> int:
        widths = self.step_widths(result)
        return int(np.median([widths[s] for s in self.steady_steps() if s in widths]))


def clock_offsets(ranks: list[RankGraph]) -> dict[int, int]:
    """Each rank's clock against the first rank's: the median difference of the ends of the calls both
    made (a collective ends at about the same moment on every rank of its group); 0 with no call in common."""
    ref = {key: end for key, _, end in ranks[0].calls}
    out = {}
    for r in ranks:
        diffs = [end - ref[key] for key, _, end in r.calls if key in ref]
        out[r.rank] = int(np.median(diffs)) if diffs else 0
    return out


def join(ranks: list[RankGraph], offsets: dict[int, int] | None = None) -> Job:
    """The ranks' graphs as one job graph, joined at the calls two ranks or more made; `offsets` (rank -> ns
    taken off its graph's clock, e.g. the fleet's, kineto_sql.fleet.job_path) or clock_offsets'."""
    offsets = clock_offsets(ranks) if offsets is None else {r.rank: int(offsets.get(r.rank, 0)) for r in ranks}
    parts = [_moved(r.graph, pos, offsets[r.rank]) for pos, r in enumerate(ranks)]
    base = np.cumsum([0] + [g.n for g in parts])
    g = _concat(parts, base)
    measured = np.concatenate([r.graph.dur if r.measured_dur is None else r.measured_dur for r in ranks])
    rank_of = np.repeat(np.array([r.rank for r in ranks], dtype=np.int64), [p.n for p in parts])
    # each call's first kernel on each rank: the device node that starts where the call starts
    members: dict[tuple, list[int]] = {}
    for pos, r in enumerate(ranks):
        graph = r.graph
        dev = np.flatnonzero(graph.kind == "device")
        by_ts = dev[np.argsort(graph.ts[dev], kind="stable")]
        for key, ts, _ in r.calls:
            i = int(np.searchsorted(graph.ts[by_ts], ts))
            if i < len(by_ts) and graph.ts[by_ts[i]] == ts:
                members.setdefault(key, []).append(int(base[pos] + by_ts[i]))
    groups = [m for m in members.values() if len(m) > 1 and _consistent(g, m)]
    g = _with_arrivals(g, groups, measured)
    rank_of = np.concatenate([rank_of, rank_of[np.concatenate(groups)] if groups else np.zeros(0, np.int64)])
    steps: dict[int, list[int]] = {}
    for w, (_, _, step, _) in g.windows.items():
        if step is not None:
            steps.setdefault(step, []).append(w)
    return Job(g, rank_of, tuple(r.rank for r in ranks), {s: tuple(sorted(ws)) for s, ws in steps.items()},
               offsets, len(groups), {r.rank: r.buckets for r in ranks})


def _consistent(g: Graph, members: list[int]) -> bool:
    """No rank's kernel of the call ended before the last rank arrived (within the device timing slack): a
    pair that breaks it is not one call (a sampled capture, calls of two process groups the trace does not
    name), or the clocks disagree, and joining it would make a rank wait for work that came after."""
    m = np.array(members, dtype=np.int64)
    return int(g.ts[m].max()) <= int((g.ts[m] + g.dur[m]).min()) + SLACK_NS


def _moved(g: Graph, pos: int, offset: int) -> Graph:
    """A rank's graph on the reference clock, its windows, lanes and streams apart from the other ranks'."""
    shift = pos * STRIDE
    return g.with_(ts=g.ts - offset, ready=np.where(g.ready == NONE, NONE, g.ready - offset),
                   window=g.window + shift, lane=np.where(g.lane >= 0, g.lane + shift, -1),
                   stream_key=np.where(g.stream_key >= 0, g.stream_key + (pos << 48), g.stream_key),
                   windows={w + shift: (ts - offset, dur, step, cold) for w, (ts, dur, step, cold) in g.windows.items()})


def _concat(parts: list[Graph], base: np.ndarray) -> Graph:
    cat = np.concatenate
    windows = {}
    for p in parts:
        windows.update(p.windows)
    return Graph(ids=cat([p.ids for p in parts]), window=cat([p.window for p in parts]), kind=cat([p.kind for p in parts]),
                 tag=cat([p.tag for p in parts]), lane=cat([p.lane for p in parts]),
                 stream_key=cat([p.stream_key for p in parts]), ts=cat([p.ts for p in parts]),
                 dur=cat([p.dur for p in parts]), ready=cat([p.ready for p in parts]),
                 is_end=cat([p.is_end for p in parts]), src=cat([p.src + b for p, b in zip(parts, base)]),
                 dst=cat([p.dst + b for p, b in zip(parts, base)]), edge_kind=cat([p.edge_kind for p in parts]),
                 to_end=cat([p.to_end for p in parts]), gap=cat([p.gap for p in parts]), windows=windows)


def _with_arrivals(g: Graph, groups: list[list[int]], measured: np.ndarray) -> Graph:
    """Each member kernel k of a group gets an arrival node a (its start edges move to a) and an edge from
    every member's arrival to k; k keeps as its own time what it measured after the last arrival (`measured`:
    the nodes' measured durations), scaled as an edit scaled k (a collective slowed by the compute it now
    overlaps transfers slower; the other ranks' arrival does not move with it)."""
    if not groups:
        return g
    kernels = np.concatenate([np.array(m, dtype=np.int64) for m in groups])
    arrive = g.n + np.arange(len(kernels))
    to_arrival = np.full(g.n, -1, dtype=np.int64)
    to_arrival[kernels] = arrive
    moved = ~g.to_end & (to_arrival[g.dst] >= 0)
    dst = g.dst.copy()
    dst[moved] = to_arrival[g.dst[moved]]
    dur = g.dur.copy()
    new_src, new_dst = [], []
    at = 0
    for m in groups:
        m = np.array(m, dtype=np.int64)
        a = arrive[at:at + len(m)]
        last = int(g.ts[m].max())
        transfer = np.maximum(measured[m] - (last - g.ts[m]), 0)
        # a float ratio (an int product overflows for calls of seconds); 1.0 exactly for an unedited kernel
        dur[m] = np.where(measured[m] > 0, transfer * (g.dur[m] / np.maximum(measured[m], 1)), 0).astype(np.int64)
        new_src.append(np.repeat(a, len(m)))
        new_dst.append(np.tile(m, len(m)))
        at += len(m)
    new_src, new_dst = np.concatenate(new_src), np.concatenate(new_dst)
    count = len(kernels)
    return g.with_(
        ids=np.concatenate([g.ids, g.ids[kernels]]), window=np.concatenate([g.window, g.window[kernels]]),
        kind=np.concatenate([g.kind, np.full(count, "device", dtype=object)]),
        tag=np.concatenate([g.tag, np.full(count, ARRIVE, dtype=object)]),
        lane=np.concatenate([g.lane, g.lane[kernels]]), stream_key=np.concatenate([g.stream_key, g.stream_key[kernels]]),
        ts=np.concatenate([g.ts, g.ts[kernels]]), dur=np.concatenate([dur, np.zeros(count, dtype=np.int64)]),
        ready=np.concatenate([g.ready, np.full(count, NONE, dtype=np.int64)]),
        is_end=np.concatenate([g.is_end, np.zeros(count, dtype=bool)]),
        src=np.concatenate([g.src, new_src]), dst=np.concatenate([dst, new_dst]),
        edge_kind=np.concatenate([g.edge_kind, np.full(len(new_src), COLLECTIVE_EDGE, dtype=object)]),
        to_end=np.concatenate([g.to_end, np.zeros(len(new_src), dtype=bool)]),
        gap=np.concatenate([g.gap, np.zeros(len(new_src), dtype=np.int64)]))


@dataclass(frozen=True)
class Segment:
    """A stretch of the job's critical path: the node, its rank, and the ns it holds the path (the stretch
    ends at `end`: the node's replayed end, or where the stretch after it begins, Replay.walk)."""

    rank: int
    node: int        # index in the joined graph
    ns: int
    end: int         # the stretch's end, on the joined clock


def critical_path(job: Job, result: Replay, step: int) -> list[Segment]:
    """The job's critical path in one step, in time order: walked back from the end of the rank window
    that sets the step's width (the slowest rank's, Job.step_widths), at each node to the edge that set its
    end or its start, across ranks where a collective waited for the last rank to arrive; clipped at that
    window's start, so the segments sum to the job's width."""
    g = job.graph
    widths = result.window_durations(g)
    windows = [w for w in job.steps[step] if w in widths]
    if not windows:
        return []
    slowest = max(windows, key=lambda w: widths[w])
    k = int(np.flatnonzero(g.is_end & (g.window == slowest))[0])
    return [Segment(int(job.rank_of[n]), n, ns, end) for n, ns, end in result.walk(g, k, g.windows[slowest][0])[::-1]]


def shares(job: Job, path: list[Segment], label=None) -> dict:
    """ns on the path per rank, or per (rank, label(node)) with `label`."""
    out: dict = {}
    for s in path:
        key = s.rank if label is None else (s.rank, label(s.node))
        out[key] = out.get(key, 0) + s.ns
    return out


def bucket_shares(job: Job, result: Replay, path: list[Segment]) -> dict[tuple[int, str], int]:
    """ns of the path per (rank, ledger bucket), each segment named as reading.critical_path names one
    (kineto_sql.whatif.buckets.name_segment). Needs the ranks read with buckets."""
    out: dict[tuple[int, str], int] = {}
    for s in path:
        name_segment(out, s.rank, job.graph, result, s.node, s.ns, s.end, job.buckets.get(s.rank) or {})
    return out


def path_rows(job: Job, result: Replay) -> list[dict]:
    """Per steady step, the job's critical path by (rank, ledger bucket): ms and share of the step, largest
    first."""
    rows = []
    for step in job.steady_steps():
        path = critical_path(job, result, step)
        width = sum(s.ns for s in path)
        if not width:
            continue
        named = bucket_shares(job, result, path)
        for (rank, bucket), ns in sorted(named.items(), key=lambda x: (-x[1], x[0])):
            rows.append({"step": step, "rank": rank, "bucket": bucket, "ms": round(ns / 1e6, 3),
                         "pct": round(100.0 * ns / width, 1)})
    return rows


def job_prediction(ranks: list[RankGraph], offsets: dict[int, int], rank: int, rules, base: Job) -> dict | None:
    """What the fixes of `rules` found on one rank buy the job: that rank's graph edited
    (kineto_sql.whatif.edits, cautious and full), and every other rank's too for a fix that changes every
    rank at once (Edit.every_rank: a collective's overlap), the ranks joined again (on `offsets`, as `base`,
    their unedited join) and replayed, the job's median steady step against base's measured one. A rank
    that waits at the collectives for another saves the job nothing; the last to arrive saves up to what
    the others waited. `ranks` in the result: the ranks edited. None where no edit is defined or it has
    nothing to act on in that rank's graph."""
    rules = tuple(rules)
    measured = base.median_step()
    if not measured or any(r not in EDITS for r in rules):
        return None
    variants = []
    for low in (True, False):
        edited = {}
        for r in ranks:
            here = tuple(x for x in rules if r.rank == rank or EDITS[x].every_rank)
            graph, touched = combine(here, r.graph, low) if here else (r.graph, 0)
            if touched:
                edited[r.rank] = graph
        if rank not in edited:
            return None
        variants.append(edited)
    steps = []
    for edited in variants:
        if steps and edited.keys() == variants[0].keys() and \
                all(_same_graph(edited[k], variants[0][k]) for k in edited):  # most fixes have one outcome
            steps.append(steps[0])
            continue
        job = join([replace(r, graph=edited[r.rank], measured_dur=r.graph.dur) if r.rank in edited else r
                    for r in ranks], offsets)
        steps.append(job.median_step(replay(_edges_of(job.graph, base.graph))))
    low, high = steps
    return {"rank": rank, "ranks": sorted(variants[1]), "measured_step_ns": measured, "predicted_step_ns": high,
            "saving_ns": measured - high, "saving_pct": round(100.0 * (measured - high) / measured, 1),
            "saving_range_ns": [max(measured - low, 0), max(measured - high, 0)]}


def _same_graph(a: Graph, b: Graph) -> bool:
    return all(x is y or np.array_equal(x, y) for x, y in
               ((a.dur, b.dur), (a.ready, b.ready), (a.src, b.src), (a.dst, b.dst), (a.gap, b.gap), (a.to_end, b.to_end)))


def _edges_of(g: Graph, base: Graph) -> Graph:
    """g with base's edge arrays where they are equal (an edit of durations only): the replay's edge structure
    (topological order, in-edges) is cached by those arrays, so the job's edges are sorted and walked once."""
    if len(g.src) == len(base.src) and np.array_equal(g.src, base.src) and np.array_equal(g.dst, base.dst) \
            and np.array_equal(g.to_end, base.to_end):
        return g.with_(src=base.src, dst=base.dst, to_end=base.to_end)
    return g
