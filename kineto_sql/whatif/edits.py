"""The change each detector's fix proposes, as an edit of the dependency graph, keyed by rule id. An edit
returns the edited graph and how many nodes or edges it touched (0: the fix has nothing to act on in this
graph, and the prediction falls back to the rule's claimed time). `low` is the cautious variant of the
same fix (the range's smaller saving), where the fix's outcome is uncertain."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kineto_sql.whatif.graph import Graph

SYNC_CALLS = ("stream_sync", "device_sync", "event_sync")
# An overlapped collective shares the device's memory bandwidth and SMs with the compute it runs under;
# the cautious variant lets it take this much longer.
OVERLAP_CONTENTION = 1.25


@dataclass(frozen=True)
class Edit:
    """What the fix does to the graph, in words for the report, the fix as the narration's lead names it
    ("removing the sync: step 176.0 -> 131.2 ms, -25.5%"), and the edit itself. `every_rank`: in a job of
    several ranks the fix changes every rank at once (kineto_sql.whatif.ranks.job_prediction): a
    collective's schedule is code every rank of its group runs in lockstep (DDP's bucketing, FSDP's
    prefetch), so overlapping it on one rank alone is not a fix anyone can make."""

    change: str
    apply: Callable[[Graph, bool], tuple[Graph, int]]
    doing: str = ""
    every_rank: bool = False


def _drop_waits(graph: Graph, into: np.ndarray) -> tuple[Graph, int]:
    mask = graph.to_end & into[graph.dst]
    return graph.drop_edges(mask), int(mask.sum())


def remove_syncs(graph: Graph, low: bool) -> tuple[Graph, int]:
    """The host no longer waits for the device at a stream / device / event sync, and a host read of a
    tensor value (`.item()`) costs nothing on the host (it is deferred or kept on the device). In a capture
    with no device work a read waits for nothing: it is the op's own host work, which deferring the read
    does not remove, so it is left as measured."""
    syncs = (graph.kind == "call") & np.isin(graph.tag, SYNC_CALLS)
    reads = (graph.kind == "host") & (graph.tag == "sync_read")
    edited, touched = _drop_waits(graph, syncs)
    if not low and (graph.kind == "device").any():
        edited = edited.with_(dur=np.where(reads, 0, edited.dur))
        touched += int(reads.sum())
    return edited, touched


def async_copies(graph: Graph, low: bool) -> tuple[Graph, int]:
    """A blocking copy becomes asynchronous (pinned memory, non_blocking=True): the host stops waiting."""
    return _drop_waits(graph, (graph.kind == "call") & (graph.tag == "blocking_copy"))


def no_dataloader_wait(graph: Graph, low: bool) -> tuple[Graph, int]:
    """The batch is ready when the step asks for it: DataLoader waits shrink to zero, or (cautious) to the
    shortest DataLoader time any window of the capture shows."""
    dl = (graph.kind == "host") & (graph.tag == "dataloader")
    if not dl.any():
        return graph, 0
    dur = graph.dur.copy()
    if low:
        per_window = np.bincount(graph.window[dl], weights=graph.dur[dl])
        totals = per_window[np.unique(graph.window[dl])]
        floor = totals.min()
        scale = np.where(per_window > 0, floor / np.maximum(per_window, 1), 0)
        dur[dl] = (graph.dur[dl] * scale[graph.window[dl]]).astype(np.int64)
    else:
        dur[dl] = 0
    return graph.with_(dur=dur), int(dl.sum())


def no_gc(graph: Graph, low: bool) -> tuple[Graph, int]:
    """GC passes no longer pause the step (gc.freeze / gc.disable in the loop, collecting between steps). The
    step's other work is left as measured: a loop that keeps making cyclic garbage under gc.disable() with no
    collection at all leaks it, and its allocations then take fresh memory instead of what the collections
    freed (about 1 ms a step more outside GC in such a recording); no trace with the collections in it can
    size that, so the edit predicts the fix that collects between steps."""
    gc = (graph.kind == "host") & (graph.tag == "gc")
    return graph.with_(dur=np.where(gc, 0, graph.dur)), int(gc.sum())


def device_paced_launches(graph: Graph, low: bool) -> tuple[Graph, int]:
    """Launch-bound kernels issued at the device's pace (CUDA graphs, torch.compile's fusion): launch calls
    cost the host nothing, a kernel starts as soon as its stream is free, and the host time between two
    launches (the framework's per-op dispatch, which a graph replay skips) goes too. The cautious variant
    keeps that host time and removes only the launch calls' own cost."""
    launches = (graph.kind == "call") & (graph.tag == "launch")
    if not launches.any():
        return graph, 0
    dur = np.where(launches, 0, graph.dur)
    gap = np.where(graph.edge_kind == "launch", np.minimum(graph.gap, 0), graph.gap)
    if not low:
        thread = graph.edge_kind == "thread"
        after_launch = np.zeros(graph.n, dtype=bool)
        before_launch = np.zeros(graph.n, dtype=bool)
        after_launch[graph.dst[thread]] = launches[graph.src[thread]]
        before_launch[graph.src[thread]] = launches[graph.dst[thread]]
        between = (graph.kind == "host") & (graph.tag == "host") & after_launch & before_launch
        dur = np.where(between, 0, dur)
    return graph.with_(dur=dur, gap=gap), int(launches.sum())


def overlap_collectives(graph: Graph, low: bool) -> tuple[Graph, int]:
    """A collective overlaps the compute that follows it (its own stream: DDP bucketing, FSDP prefetch): it
    still starts after the work before it (the gradients it reduces), but the next compute no longer queues
    behind it or waits for it on another stream (an inferred event edge), and a sync that waited for the
    stream waits for the collective too. The cautious variant lets the overlapped collective run 25% slower
    (it shares SMs and memory bandwidth with the compute)."""
    comm = (graph.kind == "device") & (graph.tag == "communication")
    if not comm.any():
        return graph, 0
    dev = np.flatnonzero(graph.kind == "device")
    order = dev[np.lexsort((graph.ts[dev], graph.stream_key[dev], graph.window[dev]))]
    # per device node, in stream order: the last compute node at or before it on its stream and window
    group = np.concatenate([[True], (graph.window[order][1:] != graph.window[order][:-1])
                            | (graph.stream_key[order][1:] != graph.stream_key[order][:-1])])
    position = np.arange(len(order))
    last_compute = np.where(~comm[order], position, -1)
    starts = np.maximum.accumulate(np.where(group, position, 0))
    last_compute = np.maximum.accumulate(np.where(group, np.maximum(last_compute, -1), last_compute))
    last_compute = np.where(last_compute >= starts, last_compute, -1)
    # compute right after a collective: its new predecessor is the compute before the collective
    after_comm = np.flatnonzero(~group & comm[order][np.maximum(position - 1, 0)] & ~comm[order])
    prev_compute = np.where(after_comm > 0, last_compute[np.maximum(after_comm - 1, 0)], -1)
    keep = prev_compute >= 0
    new_src, new_dst = order[prev_compute[keep]], order[after_comm[keep]]
    drop = np.isin(graph.edge_kind, ("stream", "event")) & comm[graph.src] & ~comm[graph.dst]
    edited = graph.drop_edges(drop)
    # a sync that waited for device work also waits for the last collective that started before that work
    # ended (the sync returned after it); collectives are looked up per window by binary search
    waits = np.flatnonzero(graph.to_end & (graph.edge_kind == "wait"))
    waited_until = np.full(graph.n, np.iinfo(np.int64).min)
    np.maximum.at(waited_until, graph.dst[waits], graph.ts[graph.src[waits]] + graph.dur[graph.src[waits]])
    tail = np.full(graph.n, np.iinfo(np.int64).max)
    np.minimum.at(tail, graph.dst[waits], graph.gap[waits])
    syncs = np.unique(graph.dst[waits])
    comm_nodes = np.flatnonzero(comm)
    comm_nodes = comm_nodes[np.lexsort((graph.ts[comm_nodes], graph.window[comm_nodes]))]
    cw, ct = graph.window[comm_nodes], graph.ts[comm_nodes]
    w_src, w_dst, w_gap = [], [], []
    for k in syncs.tolist():
        lo, hi = np.searchsorted(cw, graph.window[k], "left"), np.searchsorted(cw, graph.window[k], "right")
        j = lo + int(np.searchsorted(ct[lo:hi], waited_until[k], "left")) - 1
        if j >= lo:
            w_src.append(int(comm_nodes[j]))
            w_dst.append(k)
            w_gap.append(int(tail[k]))
    src = np.concatenate([new_src, np.array(w_src, dtype=np.int64)])
    dst = np.concatenate([new_dst, np.array(w_dst, dtype=np.int64)])
    edited = edited.with_(
        src=np.concatenate([edited.src, src]), dst=np.concatenate([edited.dst, dst]),
        edge_kind=np.concatenate([edited.edge_kind, np.array(["stream"] * len(new_src) + ["wait"] * len(w_src),
                                                             dtype=object)]),
        to_end=np.concatenate([edited.to_end, np.array([False] * len(new_src) + [True] * len(w_src), dtype=bool)]),
        gap=np.concatenate([edited.gap, np.zeros(len(new_src), dtype=np.int64), np.array(w_gap, dtype=np.int64)]))
    if low:
        edited = edited.with_(dur=np.where(comm, (graph.dur * OVERLAP_CONTENTION).astype(np.int64), edited.dur))
    return edited, int(comm.sum())


def shorten(graph: Graph, nodes: np.ndarray, fraction: float) -> Graph:
    """The given nodes (a boolean mask) take `fraction` of their time: a kernel brought to an attainable
    fraction of its roof, an op made cheaper."""
    return graph.with_(dur=np.where(nodes, (graph.dur * fraction).astype(np.int64), graph.dur))


EDITS: dict[str, Edit] = {
    "catalog.sync_forcing_op": Edit("remove the sync wait", remove_syncs, "removing the host sync"),
    "catalog.blocking_copy": Edit("make the copy asynchronous", async_copies, "making the blocking copy asynchronous"),
    "catalog.input_bound": Edit("the DataLoader wait shrinks to zero", no_dataloader_wait,
                                "a DataLoader that keeps up"),
    "catalog.dataloader_workers_missing": Edit("the DataLoader wait shrinks to zero", no_dataloader_wait,
                                               "DataLoader workers that keep up"),
    "catalog.gc_gil_stall": Edit("no GC pauses in the step", no_gc, "keeping GC out of the step"),
    "catalog.small_op_storm": Edit("kernels issued at the device's pace (CUDA graphs)", device_paced_launches,
                                   "issuing the small ops at the device's pace (CUDA graphs)"),
    "catalog.exposed_communication": Edit("the collective overlaps the compute", overlap_collectives,
                                          "overlapping the collective with compute", every_rank=True),
}


def combine(rule_ids, graph: Graph, low: bool = False) -> tuple[Graph, int]:
    """Several fixes at once: their edits applied one after another."""
    touched = 0
    for rule in rule_ids:
        graph, t = EDITS[rule].apply(graph, low)
        touched += t
    return graph, touched
