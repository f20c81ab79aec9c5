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
    """What the fix does to the graph, in words for the report, and the edit itself."""

    change: str
    apply: Callable[[Graph, bool], tuple[Graph, int]]


def _drop_waits(graph: Graph, into: np.ndarray) -> tuple[Graph, int]:
    mask = graph.to_end & into[graph.dst]
    return graph.drop_edges(mask), int(mask.sum())


def remove_syncs(graph: Graph, low: bool) -> tuple[Graph, int]:
    """The host no longer waits for the device at a stream / device / event sync, and a host read of a
    tensor value (`.item()`) costs nothing on the host (it is deferred or kept on the device)."""
    syncs = (graph.kind == "call") & np.isin(graph.tag, SYNC_CALLS)
    reads = (graph.kind == "host") & (graph.tag == "sync_read")
    edited, touched = _drop_waits(graph, syncs)
    if not low:
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
    """GC passes no longer pause the step (gc.freeze / gc.disable in the loop)."""
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
    """Collectives run on their own stream, under the compute that follows (DDP bucketing, FSDP prefetch):
    compute no longer queues behind them; syncs still wait for them. (Cautious) the overlapped collective
    runs 25% slower."""
    comm = (graph.kind == "device") & (graph.tag == "communication")
    if not comm.any():
        return graph, 0
    stream = graph.edge_kind == "stream"
    touching = stream & (comm[graph.src] | comm[graph.dst])
    edited = graph.drop_edges(touching)
    # chain each stream's compute and its collectives separately, in their measured order
    dev = np.flatnonzero(graph.kind == "device")
    key = np.lexsort((graph.ts[dev], comm[dev], graph.window[dev], graph.stream_key[dev]))
    order = dev[key]
    same = ((graph.window[order][1:] == graph.window[order][:-1])
            & (graph.stream_key[order][1:] == graph.stream_key[order][:-1])
            & (comm[order][1:] == comm[order][:-1]))
    src, dst = order[:-1][same], order[1:][same]
    new = ~np.isin(dst * graph.n + src, graph.dst[stream & ~touching] * graph.n + graph.src[stream & ~touching])
    src, dst = src[new], dst[new]
    edited = edited.with_(src=np.concatenate([edited.src, src]), dst=np.concatenate([edited.dst, dst]),
                          edge_kind=np.concatenate([edited.edge_kind, np.full(len(src), "stream", dtype=object)]),
                          to_end=np.concatenate([edited.to_end, np.zeros(len(src), dtype=bool)]),
                          gap=np.concatenate([edited.gap, np.zeros(len(src), dtype=np.int64)]))
    if low:
        edited = edited.with_(dur=np.where(comm, (graph.dur * OVERLAP_CONTENTION).astype(np.int64), graph.dur))
    return edited, int(comm.sum())


def shorten(graph: Graph, nodes: np.ndarray, fraction: float) -> Graph:
    """The given nodes (a boolean mask) take `fraction` of their time: a kernel brought to an attainable
    fraction of its roof, an op made cheaper."""
    return graph.with_(dur=np.where(nodes, (graph.dur * fraction).astype(np.int64), graph.dur))


EDITS: dict[str, Edit] = {
    "catalog.sync_forcing_op": Edit("remove the sync wait", remove_syncs),
    "catalog.blocking_copy": Edit("make the copy asynchronous", async_copies),
    "catalog.input_bound": Edit("the DataLoader wait shrinks to zero", no_dataloader_wait),
    "catalog.dataloader_workers_missing": Edit("the DataLoader wait shrinks to zero", no_dataloader_wait),
    "catalog.gc_gil_stall": Edit("no GC pauses in the step", no_gc),
    "catalog.small_op_storm": Edit("kernels issued at the device's pace (CUDA graphs)", device_paced_launches),
    "catalog.exposed_communication": Edit("the collective overlaps the compute", overlap_collectives),
}


def combine(rule_ids, graph: Graph, low: bool = False) -> tuple[Graph, int]:
    """Several fixes at once: their edits applied one after another."""
    touched = 0
    for rule in rule_ids:
        graph, t = EDITS[rule].apply(graph, low)
        touched += t
    return graph, touched
