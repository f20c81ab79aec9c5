"""What a fix buys (kineto_sql.whatif): the dependency graph replays each window to its measured width, and
edits of it predict exact savings on hand-built traces where the answer is known."""
from __future__ import annotations

import numpy as np
import pytest

from kineto_sql.whatif import load_graph, replay
from kineto_sql.whatif.edits import EDITS, shorten
from kineto_sql.whatif.graph import Graph
from kineto_sql.whatif.predict import REPLAY, UPPER_BOUND, predict
from kineto_sql.whatif.replay import topological_order
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)

US = 1_000
COPY = dict(cat="gpu_memcpy", name="Memcpy DtoH (Device -> Pageable)")


def step_of(tp) -> int:
    graph = load_graph(tp)
    return replay(graph).window_durations(graph)[next(iter(graph.windows))]


def test_unchanged_graph_replays_to_the_measured_window(load_trace):
    tp = load_trace(KinetoTrace(sync_on_busy_gpu()))
    graph = load_graph(tp)
    assert set(graph.kind) == {"host", "call", "device"}
    assert step_of(tp) == 1000 * US


def sync_on_busy_gpu():
    """The host launches a long kernel, waits for it at a stream sync, then reads the result with a
    blocking copy right away: the device is busy the whole time the host waits."""
    return [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=5, dur_us=15),
        Launch(1, ts_us=10, dur_us=5),
        Kernel(1, ts_us=20, dur_us=785, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=100, dur_us=705, name="cudaStreamSynchronize"),
        Launch(3, ts_us=805, dur_us=10, name="cudaMemcpy"),
        Kernel(3, ts_us=805, dur_us=5, **COPY),
    ]


def test_a_sync_that_blocks_a_busy_gpu_saves_nothing(load_trace):
    tp = load_trace(KinetoTrace(sync_on_busy_gpu()))
    p = predict(load_graph(tp), ["catalog.sync_forcing_op"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.predicted_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 1000 * US, 0)


def idle_gpu_sync():
    """K1 ends at 500; the host waits for it, computes 200 us, then launches K2 at 705: the device idles
    500..715 (215 us). Removing the wait saves those 215 us."""
    return [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=5, dur_us=15),
        Launch(1, ts_us=10, dur_us=5),
        Kernel(1, ts_us=20, dur_us=480, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=100, dur_us=405, name="cudaStreamSynchronize"),
        CpuOp("aten::add", ts_us=700, dur_us=15),
        Launch(4, ts_us=705, dur_us=5),
        Kernel(4, ts_us=715, dur_us=200),
        Launch(3, ts_us=710, dur_us=215, name="cudaMemcpy"),
        Kernel(3, ts_us=915, dur_us=5, **COPY),
    ]


def test_a_sync_in_front_of_an_idle_gpu_saves_the_idle(load_trace):
    # K1 ends at 500; the host waits for it, computes 200 us, then launches K2 at 705: the device idles
    # 500..715 (215 us). Without the wait the host work runs under K1 and K2 follows it at once.
    tp = load_trace(KinetoTrace(idle_gpu_sync()))
    graph = load_graph(tp)
    p = predict(graph, ["catalog.sync_forcing_op"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 215 * US)
    assert p.predicted_step_ns == 785 * US
    # the final copy made asynchronous: the host stops waiting for K2 and the copy (710..920 less the
    # call's own 5 us)
    assert predict(graph, ["catalog.blocking_copy"], has_device=True).saving_ns == 210 * US


@pytest.mark.parametrize(("claim_us", "capped"), [(215, False), (214, True), (0, True)])
def test_a_prediction_never_saves_more_than_the_finding_claims(load_trace, claim_us, capped):
    # the replay saves 215 us; a finding that claims 215 us keeps it, one that claims 1 us less is capped
    # at its claim (the range's ends too), and one that claims nothing promises nothing
    graph = load_graph(load_trace(KinetoTrace(idle_gpu_sync())))
    p = predict(graph, ["catalog.sync_forcing_op"], has_device=True, claimed_per_step_ns=claim_us * US)
    saving = min(215, claim_us) * US
    assert (p.basis, p.saving_ns, p.predicted_step_ns, p.saving_high_ns) == (
        REPLAY, saving, 1000 * US - saving, saving)
    assert p.saving_low_ns <= saving
    assert bool(p.reason) is capped
    if capped:
        assert p.reason == (f"the replay removes 0.2 ms a step, more than the {claim_us / 1e3:.1f} ms the "
                            "finding claims: capped at the claim")


def test_a_host_read_in_a_capture_without_device_work_waits_for_nothing(load_trace):
    # on a CPU capture `.item()` is the op's own host work (a 300 us stall inside it here): deferring the
    # read removes none of it, so the sync fix has nothing to act on and falls back to the claim
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=5, dur_us=400),
        CpuOp("aten::item", ts_us=500, dur_us=310),
        CpuOp("aten::_local_scalar_dense", ts_us=502, dur_us=300),
        CpuOp("aten::add", ts_us=850, dur_us=100),
    ]))
    graph = load_graph(tp)
    assert int(graph.dur[graph.tag == "sync_read"].sum()) == 300 * US
    p = predict(graph, ["catalog.sync_forcing_op"], has_device=False, claimed_per_step_ns=1 * US)
    assert (p.basis, p.saving_ns, p.reason) == (UPPER_BOUND, 1 * US,
                                                "the fix has nothing to act on in this trace's graph")


def test_a_kernel_off_the_critical_path_saves_nothing_when_shortened(load_trace):
    # the host works until 1000; the kernel (20..300) is never waited for
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=5, dur_us=15),
        Launch(1, ts_us=10, dur_us=5),
        Kernel(1, ts_us=20, dur_us=280, name="volta_sgemm_128x64_nn"),
        CpuOp("aten::add", ts_us=400, dur_us=500),
    ]))
    graph = load_graph(tp)
    halved = shorten(graph, graph.kind == "device", 0.5)
    assert replay(halved).window_durations(halved) == replay(graph).window_durations(graph) == {1: 1000 * US}


def test_a_kernel_on_the_critical_path_saves_what_it_loses(load_trace):
    tp = load_trace(KinetoTrace(sync_on_busy_gpu()))
    graph = load_graph(tp)
    gemm = graph.tag == "gemm"
    halved = shorten(graph, gemm, 0.5)
    # 785 us -> 392 us (integer ns): the sync and the copy after it move up by the 392.5 us it lost
    assert replay(halved).window_durations(halved) == {1: 1000 * US - (785 * US - 392_500)}


def test_a_dataloader_wait_in_front_of_an_idle_device_saves_the_wait(load_trace):
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ts_us=0, dur_us=400,
              cat="user_annotation"),
        CpuOp("aten::mm", ts_us=400, dur_us=15),
        Launch(1, ts_us=405, dur_us=5),
        Kernel(1, ts_us=415, dur_us=185, name="volta_sgemm_128x64_nn"),
        Launch(3, ts_us=420, dur_us=190, name="cudaMemcpy"),
        Kernel(3, ts_us=600, dur_us=5, **COPY),
    ]))
    graph = load_graph(tp)
    p = predict(graph, ["catalog.input_bound"], has_device=True)
    assert (p.basis, p.saving_ns, p.predicted_step_ns) == (REPLAY, 400 * US, 600 * US)
    # one window only: the cautious variant (the shortest wait any window shows) keeps the whole wait
    assert (p.saving_low_ns, p.saving_high_ns) == (0, 400 * US)


def test_gc_removed_on_a_cpu_capture(load_trace):
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=300),
        CpuOp("Python GC", ts_us=300, dur_us=250, cat="python_function"),
        CpuOp("aten::add", ts_us=550, dur_us=450),
    ]))
    graph = load_graph(tp)
    p = predict(graph, ["catalog.gc_gil_stall"])
    assert (p.basis, p.saving_ns) == (REPLAY, 250 * US)


def test_no_edit_or_nothing_to_edit_falls_back_to_the_claim_as_an_upper_bound(load_trace):
    tp = load_trace(KinetoTrace(sync_on_busy_gpu()))
    graph = load_graph(tp)
    nothing = predict(graph, ["catalog.gc_gil_stall"], has_device=True, claimed_per_step_ns=30 * US)
    assert (nothing.basis, nothing.predicted_step_ns, nothing.reason) == (
        UPPER_BOUND, 970 * US, "the fix has nothing to act on in this trace's graph")
    unknown = predict(graph, ["catalog.memory_churn"], has_device=True, claimed_per_step_ns=10 * US)
    assert (unknown.basis, unknown.saving_ns) == (UPPER_BOUND, 10 * US)
    assert unknown.reason == "no graph edit is defined for catalog.memory_churn"


def test_device_work_without_correlation_cannot_be_linked(load_trace):
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=5, dur_us=15),
        Kernel(99, ts_us=20, dur_us=100, name="volta_sgemm_128x64_nn"),
    ]))
    p = predict(load_graph(tp), ["catalog.sync_forcing_op"], has_device=True, claimed_per_step_ns=50 * US)
    assert p.basis == UPPER_BOUND
    assert p.reason.startswith("the device work carries no correlation")


def test_fixes_together_are_replayed_not_summed(load_trace):
    # a DataLoader wait under a running kernel, then a sync for that kernel: removing the wait alone buys
    # nothing (the sync still waits for the kernel), removing the sync alone buys the sync's wait after the
    # DataLoader, and both together buy far more than the two added
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=5),
        Launch(1, ts_us=0, dur_us=5),
        Kernel(1, ts_us=10, dur_us=600, name="volta_sgemm_128x64_nn"),
        CpuOp("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ts_us=5, dur_us=400,
              cat="user_annotation"),
        Launch(2, ts_us=405, dur_us=210, name="cudaStreamSynchronize"),
        CpuOp("aten::add", ts_us=615, dur_us=385),
    ]))
    graph = load_graph(tp)
    one = predict(graph, ["catalog.input_bound"], has_device=True).saving_ns
    two = predict(graph, ["catalog.sync_forcing_op"], has_device=True).saving_ns
    both = predict(graph, ["catalog.input_bound", "catalog.sync_forcing_op"], has_device=True).saving_ns
    assert (one, two, both) == (0, 205 * US, 605 * US)


def test_device_paced_launches_remove_launch_cost_and_dispatch_between_launches(load_trace):
    # three launches 100 us apart (10 us calls, 90 us of dispatch between them), then a blocking copy:
    # the cautious edit frees the three calls (30 us) and the copy's 10 us launch latency, the full one (CUDA
    # graphs) also the 2 x 90 us of host dispatch between launches; the 90 us after the last launch is not
    # between launches and stays
    events = [ProfilerStep(1, ts_us=0, dur_us=1000), CpuOp("aten::mm", ts_us=0, dur_us=5)]
    for i, ts in enumerate((100, 200, 300), start=1):
        events += [Launch(i, ts_us=ts, dur_us=10), Kernel(i, ts_us=ts + 20, dur_us=10)]
    events += [Launch(9, ts_us=400, dur_us=20, name="cudaMemcpy"), Kernel(9, ts_us=410, dur_us=5, **COPY)]
    p = predict(load_graph(load_trace(KinetoTrace(events))), ["catalog.small_op_storm"], has_device=True)
    assert (p.basis, p.saving_low_ns, p.saving_high_ns, p.predicted_step_ns) == (REPLAY, 40 * US, 220 * US, 780 * US)


def test_overlapping_a_collective_saves_only_what_compute_can_cover(load_trace):
    # one stream: a 200 us GEMM, a 500 us all-reduce of its output, a 100 us GEMM; a device sync waits for
    # all of it. Overlapped, the second GEMM runs under the all-reduce: the step saves that GEMM's 100 us,
    # not the all-reduce's 500 us. The cautious variant (the all-reduce 25% slower under compute) saves none.
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=20),
        Launch(1, ts_us=10, dur_us=2),
        Kernel(1, ts_us=20, dur_us=200, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=12, dur_us=2),
        Kernel(2, ts_us=220, dur_us=500, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
        Launch(3, ts_us=14, dur_us=2),
        Kernel(3, ts_us=720, dur_us=100, name="volta_sgemm_128x64_nn"),
        Launch(4, ts_us=100, dur_us=725, name="cudaDeviceSynchronize"),
    ]))
    p = predict(load_graph(tp), ["catalog.exposed_communication"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 100 * US)
    assert (p.saving_low_ns, p.saving_high_ns) == (0, 100 * US)


def copy_after_compute_after_collective(copy_launch_us: int):
    """One compute stream: a 200 us GEMM, a 500 us all-reduce, a 100 us GEMM that reads its output; a
    kernel on a second stream (stream 20) that reads the second GEMM's output starts 1 us after it ends; a
    stream sync at the end waits for both streams. `copy_launch_us`: when the host launches the second
    stream's kernel (long before it runs: the device held it back; or 4 us before it runs: its launch did)."""
    events = [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=20),
        Launch(1, ts_us=10, dur_us=2),
        Kernel(1, ts_us=20, dur_us=200, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=12, dur_us=2),
        Kernel(2, ts_us=220, dur_us=500, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
        Launch(3, ts_us=14, dur_us=2),
        Kernel(3, ts_us=720, dur_us=100, name="volta_sgemm_128x64_nn"),
        Launch(5, ts_us=copy_launch_us, dur_us=2),
        Kernel(5, ts_us=821, dur_us=5, name="elementwise_kernel", stream=20),
    ]
    sync_at = max(100, copy_launch_us + 2)
    return events + [Launch(4, ts_us=sync_at, dur_us=827 - sync_at, name="cudaStreamSynchronize")]


def test_a_kernel_held_back_by_another_streams_compute_moves_with_it(load_trace):
    # The second stream's kernel was launched at 16 us and ran at 821 us, 1 us after the GEMM on stream 7
    # ended: it waited for that GEMM (an event edge), not for its launch. Overlapping the all-reduce moves
    # the GEMM to 220..320 and the kernel to 321..326; the sync then waits for the all-reduce (720 + its
    # 1 us tail): 827 -> 721, the GEMM's 100 us, the kernel's 5 and the 1 us between them.
    tp = load_trace(KinetoTrace(copy_after_compute_after_collective(copy_launch_us=16)))
    graph = load_graph(tp)
    event = graph.edge_kind == "event"
    assert [(int(graph.ids[s]), int(graph.ids[d])) for s, d in zip(graph.src[event], graph.dst[event])] \
        == [(int(graph.ids[graph.kind == "device"][2]), int(graph.ids[graph.kind == "device"][3]))]
    assert step_of(tp) == 1000 * US
    p = predict(graph, ["catalog.exposed_communication"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 106 * US)


def test_a_kernel_its_launch_explains_does_not_move_with_other_streams(load_trace):
    # The same kernel launched at 815 us and run 4 us after its launch returned: the host paced it, no
    # event edge; the sync (817..827) waits for it at 826 whatever the compute stream does: saves nothing.
    tp = load_trace(KinetoTrace(copy_after_compute_after_collective(copy_launch_us=815)))
    graph = load_graph(tp)
    assert not (graph.edge_kind == "event").any()
    assert step_of(tp) == 1000 * US
    p = predict(graph, ["catalog.exposed_communication"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 0)


ENGINE = 2  # the autograd engine's device thread


def backward_on_the_engine_thread(main_launch_inside: bool = False):
    """The main thread runs a forward op and launches its kernel (10..12 us), then calls backward() and
    records nothing until 900 us; the autograd engine's thread starts at 110 us, launches a 300 us kernel,
    waits for it at a stream sync (120..421), works on the host until 790 and launches one last kernel;
    the main thread resumes at 900 and launches the optimizer's kernel. `main_launch_inside`: the main
    thread also launches at 500 us (it was not blocked in backward())."""
    events = [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=12),
        Launch(1, ts_us=10, dur_us=2),
        Kernel(1, ts_us=20, dur_us=50, name="volta_sgemm_128x64_nn"),
        CpuOp("autograd::engine::evaluate_function: MmBackward0", ts_us=105, dur_us=8, tid=ENGINE),
        Launch(2, ts_us=110, dur_us=2, tid=ENGINE),
        Kernel(2, ts_us=120, dur_us=300, name="volta_sgemm_128x64_nn"),
        Launch(3, ts_us=120, dur_us=301, name="cudaStreamSynchronize", tid=ENGINE),
        Launch(4, ts_us=790, dur_us=2, tid=ENGINE),
        Kernel(4, ts_us=792, dur_us=5),
        Launch(9, ts_us=900, dur_us=2),
        Kernel(9, ts_us=902, dur_us=10),
    ]
    if main_launch_inside:
        events += [Launch(5, ts_us=500, dur_us=2), Kernel(5, ts_us=502, dur_us=5)]
    return events


def test_the_caller_of_backward_resumes_when_the_engine_thread_finishes(load_trace):
    # fork: the main thread's launch (ends 12) -> the engine's idle stretch (0..110, 98 us after the
    # launch); join: the engine's last launch (ends 792) -> the main thread's span (12..900, resumes 108 us
    # later). Without the engine's sync wait (300 us, the kernel it waited for ran alone) the engine's last
    # launch ends at 492, the main thread resumes at 600: the step saves the 300 us.
    tp = load_trace(KinetoTrace(backward_on_the_engine_thread()))
    graph = load_graph(tp)
    kinds = {k: [(int(graph.ts[s]) // US, int(graph.ts[d]) // US, int(g) // US)
                 for s, d, g in zip(graph.src[graph.edge_kind == k], graph.dst[graph.edge_kind == k],
                                    graph.gap[graph.edge_kind == k])] for k in ("fork", "join")}
    assert kinds == {"fork": [(10, 0, 98)], "join": [(790, 12, 108)]}
    assert step_of(tp) == 1000 * US
    p = predict(graph, ["catalog.sync_forcing_op"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 300 * US)


def test_a_main_thread_that_launched_during_the_backward_is_not_joined_to_it(load_trace):
    # the main thread launched at 500 us: no node of it spans the engine's run, so it was not blocked in
    # backward(); no fork or join, and the engine's sync does not hold the main thread: saves nothing
    tp = load_trace(KinetoTrace(backward_on_the_engine_thread(main_launch_inside=True)))
    graph = load_graph(tp)
    assert not np.isin(graph.edge_kind, ("fork", "join")).any()
    assert step_of(tp) == 1000 * US
    p = predict(graph, ["catalog.sync_forcing_op"], has_device=True)
    assert (p.basis, p.measured_step_ns, p.saving_ns) == (REPLAY, 1000 * US, 0)


def back_to_back(delay_us: int):
    """Two kernels launched at once; the second starts `delay_us` after the first ends; a stream sync waits
    for both (ends 1 us after the second)."""
    end2 = 520 + delay_us + 100
    return [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=5, dur_us=15),
        Launch(1, ts_us=10, dur_us=2),
        Kernel(1, ts_us=20, dur_us=500, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=14, dur_us=2),
        Kernel(2, ts_us=520 + delay_us, dur_us=100, name="volta_sgemm_128x64_nn"),
        Launch(3, ts_us=100, dur_us=end2 + 1 - 100, name="cudaStreamSynchronize"),
    ]


@pytest.mark.parametrize("delay_us", [7, 20])
def test_a_kernel_a_few_us_behind_its_stream_moves_with_it(load_trace, delay_us):
    # the second GEMM started 7 us (or the 20 us slack) after the first ended, 500+ us after its launch:
    # the stream held it, not the launch. Halving the first (500 -> 250 us) moves it, and the sync, up by
    # 250 us.
    tp = load_trace(KinetoTrace(back_to_back(delay_us=delay_us)))
    graph = load_graph(tp)
    first = graph.ids == graph.ids[graph.kind == "device"][0]
    halved = shorten(graph, first, 0.5)
    assert replay(graph).window_durations(graph) == {1: 1000 * US}
    assert replay(halved).window_durations(halved) == {1: 750 * US}


def test_a_kernel_further_than_the_slack_behind_its_stream_keeps_its_launch_gap(load_trace):
    # 25 us after the first GEMM (more than the 20 us slack) and nothing else on the device ended then:
    # what held it is unknown, so its measured start after its launch stays: halving the first GEMM does
    # not move it (the graph claims no saving it cannot explain)
    tp = load_trace(KinetoTrace(back_to_back(delay_us=25)))
    graph = load_graph(tp)
    first = graph.ids == graph.ids[graph.kind == "device"][0]
    halved = shorten(graph, first, 0.5)
    assert replay(halved).window_durations(halved) == replay(graph).window_durations(graph) == {1: 1000 * US}


def launch_blocked_until(returns_us: int):
    """A 500 us GEMM, then three 50 us kernels queued behind it; the second of their launches (14 us) is
    blocked until `returns_us` (the launch queue was full, or the host was slow); a stream sync waits
    for the last kernel; the host works after the sync until the window ends at 1000 us."""
    return [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=20),
        Launch(1, ts_us=10, dur_us=2),
        Kernel(1, ts_us=20, dur_us=500, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=12, dur_us=2),
        Kernel(2, ts_us=520, dur_us=50, name="volta_sgemm_128x64_nn"),
        Launch(3, ts_us=14, dur_us=returns_us - 14),
        Kernel(3, ts_us=570, dur_us=50, name="volta_sgemm_128x64_nn"),
        Launch(4, ts_us=returns_us, dur_us=2),
        Kernel(4, ts_us=620, dur_us=50, name="volta_sgemm_128x64_nn"),
        Launch(5, ts_us=returns_us + 2, dur_us=671 - returns_us - 2, name="cudaStreamSynchronize"),
    ]


def test_a_launch_blocked_on_a_full_queue_is_released_by_the_kernel_that_frees_a_slot(load_trace):
    # the launch returned at 521 us, 1 us after the GEMM ahead of it ended: a `queue` edge from the GEMM.
    # Halving the GEMM (500 -> 250 us) releases the host at 271: every kernel and the sync move up by
    # 250 us (the window ends 1000 -> 750). Taken as 507 us of host work, the same edit saved 41 us.
    tp = load_trace(KinetoTrace(launch_blocked_until(521)))
    graph = load_graph(tp)
    queue = graph.edge_kind == "queue"
    assert [(int(graph.ts[s]) // US, int(graph.ts[d]) // US, int(g) // US)
            for s, d, g in zip(graph.src[queue], graph.dst[queue], graph.gap[queue])] == [(20, 14, 1)]
    assert step_of(tp) == 1000 * US
    gemm = graph.ids == graph.ids[graph.kind == "device"][0]
    halved = shorten(graph, gemm, 0.5)
    assert replay(halved).window_durations(halved) == {1: 750 * US}


def test_a_long_launch_that_ends_with_no_device_work_stays_host_work(load_trace):
    # returned at 560 us: no activity ended within 20 us before, so nothing says the queue held it: its
    # 546 us stay host work, and halving the GEMM only lets the next kernel start its launch latency
    # (8 us, the median of the unqueued kernels) after the launch instead of 10: 1000 -> 998 us
    tp = load_trace(KinetoTrace(launch_blocked_until(560)))
    graph = load_graph(tp)
    assert not (graph.edge_kind == "queue").any()
    assert step_of(tp) == 1000 * US
    gemm = graph.ids == graph.ids[graph.kind == "device"][0]
    halved = shorten(graph, gemm, 0.5)
    assert replay(halved).window_durations(halved) == {1: 998 * US}


def test_a_blocking_copy_that_returns_before_its_copy_ends_is_on_the_path_once(load_trace):
    # the call returns at 622 us, the copy it waited for is timed to end at 625 us (the host's and the
    # device's clocks disagree by 3 us: a wait edge with a negative gap). The path runs host, launch, the gemm
    # the copy queued behind, the copy until the call returned (2 of its 5 us), the host work after: 1000 us,
    # the window. Following the wait to the copy's own end counted those 3 us twice (1003 us).
    tp = load_trace(KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=0, dur_us=15),
        Launch(1, ts_us=5, dur_us=5),
        Kernel(1, ts_us=20, dur_us=600, name="volta_sgemm_128x64_nn"),
        Launch(3, ts_us=30, dur_us=592, name="cudaMemcpy"),
        Kernel(3, ts_us=620, dur_us=5, **COPY),
        CpuOp("aten::add", ts_us=622, dur_us=378),
    ]))
    graph = load_graph(tp)
    waits = graph.to_end
    assert list(zip(graph.tag[graph.src[waits]], graph.gap[waits])) == [("memcpy_dtoh", -3 * US)]
    result = replay(graph)
    (window,) = graph.windows
    segments = result.segments(graph, window)[::-1]
    assert [(graph.tag[k], ns) for k, ns, _ in segments] == [
        ("host", 5 * US), ("launch", 5 * US), ("gemm", 610 * US), ("memcpy_dtoh", 2 * US), ("host", 378 * US)]
    assert sum(ns for _, ns, _ in segments) == result.window_durations(graph)[window] == 1000 * US


def hand_graph():
    """0 -> 1 -> 2 (1 starts 5 ns after 0 ends), 3 <-> 4 a cycle with 5 after it, 6 alone; every node 10 ns."""
    n = 7
    none = np.iinfo(np.int64).min
    src, dst = np.array([0, 1, 3, 4, 4]), np.array([1, 2, 4, 3, 5])
    return Graph(ids=np.arange(100, 100 + n), window=np.ones(n, dtype=np.int64),
                 kind=np.array(["host"] * n, dtype=object),
                 tag=np.array([""] * n, dtype=object), lane=np.ones(n, dtype=np.int64), stream_key=np.full(n, -1),
                 ts=np.array([0, 10, 20, 30, 40, 50, 5]), dur=np.full(n, 10), ready=np.full(n, none),
                 is_end=np.array([False, False, True, False, False, False, False]), src=src, dst=dst,
                 edge_kind=np.array(["thread"] * 5, dtype=object), to_end=np.zeros(5, dtype=bool),
                 gap=np.array([5, 0, 0, 0, 0]), windows={1: (0, 60, 1, False)})


def test_the_replay_order_takes_the_lowest_ready_node_first_and_leaves_a_cycle_out():
    graph = hand_graph()
    # a first-in-first-out queue would give 0, 6, 1, 2; the replay reads its lists in node order instead
    order, cyclic = topological_order(graph)
    assert order.tolist() == [0, 1, 2, 6] and cyclic == 3
    result = replay(graph)
    assert result.start.tolist() == [0, 15, 25, 30, 40, 50, 5]
    assert result.end.tolist() == [10, 25, 35, 40, 50, 60, 15]
    assert result.start_by.tolist() == [-1, 0, 1, -1, -1, -1, -1]
    assert result.cyclic == 3


def test_the_graph_read_column_by_column_is_the_graph_built_from_rows(load_trace):
    from dataclasses import fields

    from kineto_sql.whatif.graph import EDGES, NODES, WINDOWS, build

    tp = load_trace(KinetoTrace(sync_on_busy_gpu()))
    by_columns = load_graph(tp)
    by_rows = build(tp.rows(NODES), tp.rows(EDGES), tp.rows(WINDOWS))
    for f in fields(Graph):
        a, b = getattr(by_rows, f.name), getattr(by_columns, f.name)
        assert a == b if isinstance(a, dict) else (a.dtype == b.dtype and np.array_equal(a, b)), f.name
    empty = tp.columns("SELECT id FROM kineto_dep_graph_nodes WHERE id IS NULL")
    assert len(empty) == 0 and empty.column("id") == []


def test_the_critical_path_names_its_segments_as_one_segment_at_a_time(load_trace):
    from kineto_sql.whatif.buckets import name_segment, name_segments, node_pieces

    tp = load_trace(KinetoTrace(sync_on_busy_gpu()))
    graph = load_graph(tp)
    result = replay(graph)
    pieces = node_pieces(tp)
    segments = [s for w in graph.windows for s in result.segments(graph, w)]
    assert segments
    one_by_one, at_once = {}, {}
    for k, ns, end in segments:
        name_segment(one_by_one, None, graph, result, k, ns, end, pieces)
    name_segments(at_once, None, graph, result, segments, pieces)
    assert at_once == one_by_one and sum(at_once.values()) == sum(ns for _, ns, _ in segments)
