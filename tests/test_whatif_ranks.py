"""The job's critical path across ranks (kineto_sql.whatif.ranks): each rank's graph joined at its
collectives, on hand-built ranks where the answer is known, and on the multi-rank corpus captures."""
from __future__ import annotations

import numpy as np
import pytest

from kineto_sql.whatif.edits import shorten
from kineto_sql.whatif.ranks import ARRIVE, bucket_shares, critical_path, join, read_rank, shares
from kineto_sql.whatif.replay import replay
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)

US = 1_000
ALL_REDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float"


def rank_before_all_reduce(gemm_us: int, all_reduce_end_us: int = 720) -> KinetoTrace:
    """One step of 800 us: a gemm from 20 us, an all-reduce queued behind it on the same stream that ends
    at `all_reduce_end_us` (when the last rank arrived plus the 100 us transfer), the host waiting for it
    at a stream sync (10 us tail), then 70 us of host work to the step's end."""
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=800),
        CpuOp("aten::mm", ts_us=0, dur_us=15),
        Launch(1, ts_us=5, dur_us=5),
        Kernel(1, ts_us=20, dur_us=gemm_us, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=30, dur_us=5),
        Kernel(2, ts_us=20 + gemm_us, dur_us=all_reduce_end_us - 20 - gemm_us, name=ALL_REDUCE),
        Launch(3, ts_us=40, dur_us=all_reduce_end_us + 10 - 40, name="cudaStreamSynchronize"),
        CpuOp("aten::add", ts_us=all_reduce_end_us + 10, dur_us=800 - all_reduce_end_us - 10),
    ])


def two_ranks(load_trace):
    # rank 0's gemm takes 200 us, rank 1's 600 us: rank 0 arrives at the all-reduce at 220 us and waits
    # 400 us for rank 1 (620 us); both all-reduces end at 720 us
    return [read_rank(load_trace(rank_before_all_reduce(gemm)), rank) for rank, gemm in enumerate((200, 600))]


def test_the_job_path_runs_through_the_rank_that_arrives_last(load_trace):
    ranks = two_ranks(load_trace)
    job = join(ranks)
    assert job.joined == 1 and job.offsets == {0: 0, 1: 0}
    result = replay(job.graph)
    assert result.cyclic == 0
    assert job.step_widths(result) == job.step_widths() == {1: 800 * US}
    path = critical_path(job, result, 1)
    g = job.graph
    on_path = [(s.rank, g.tag[s.node], s.ns) for s in path]
    # rank 1's host, launch and gemm (with its 10 us launch latency) hold the all-reduce until 620 us; the
    # path crosses to rank 0 (whose window ends last at a tie) through the all-reduce's arrival: rank 0's
    # transfer, its sync's tail and its host work. Rank 0's gemm is not on the path.
    assert on_path == [(1, "host", 5 * US), (1, "launch", 5 * US), (1, "gemm", 610 * US),
                       (0, "communication", 100 * US), (0, "stream_sync", 10 * US), (0, "host", 70 * US)]
    assert shares(job, path) == {1: 620 * US, 0: 180 * US}


def test_the_job_path_in_ledger_buckets_per_rank(load_trace):
    # the same path named with each rank's ledger (the buckets reading.critical_path names segments with):
    # on rank 1 the host time inside aten::mm before its launch, the launch and the gemm's launch latency
    # (idle.launch, 5 + 5 + 10 us), the gemm; on rank 0 the exposed all-reduce transfer, its sync's tail and
    # its host work outside any launching op
    ranks = [read_rank(load_trace(rank_before_all_reduce(gemm)), rank, buckets=True)
             for rank, gemm in enumerate((200, 600))]
    job = join(ranks)
    result = replay(job.graph)
    assert bucket_shares(job, result, critical_path(job, result, 1)) == {
        (1, "idle.launch"): 20 * US, (1, "busy.gemm"): 600 * US,
        (0, "busy.comm_exposed"): 100 * US, (0, "idle.sync"): 10 * US, (0, "idle.host_compute"): 70 * US}


def test_shortening_a_waiting_rank_saves_nothing_and_the_last_rank_up_to_the_wait(load_trace):
    ranks = two_ranks(load_trace)

    def step_after(rank: int, fraction: float) -> int:
        edited = [r if r.rank != rank else
                  type(r)(r.rank, shorten(r.graph, r.graph.tag == "gemm", fraction), r.calls) for r in ranks]
        job = join(edited)
        return job.median_step(replay(job.graph))

    assert step_after(0, 0.5) == 800 * US             # rank 0 waited 400 us anyway
    assert step_after(1, 0.5) == 500 * US             # 300 us less gemm on the last rank: -300 us
    assert step_after(1, 0.0) == 400 * US             # all of it: capped at rank 0's 400 us wait


def test_three_ranks_the_slowest_is_on_the_path(load_trace):
    ranks = [read_rank(load_trace(rank_before_all_reduce(gemm)), rank) for rank, gemm in enumerate((200, 600, 400))]
    job = join(ranks)
    result = replay(job.graph)
    assert job.step_widths(result) == {1: 800 * US}
    on_path = {(s.rank, job.graph.tag[s.node]) for s in critical_path(job, result, 1)}
    assert (1, "gemm") in on_path and (0, "gemm") not in on_path and (2, "gemm") not in on_path
    # every rank's all-reduce waits for the arrivals of all three
    assert int((job.graph.tag == ARRIVE).sum()) == 3
    assert int((job.graph.edge_kind == "collective").sum()) == 9


# Replay drift of the joined job graph (|replayed - measured| / measured over the steady steps' job widths,
# a step's job width being its slowest rank's window) and the calls joined, per multi-rank capture. Every
# capture replays to 0.000% (measured on this table's writing). hta_sampled_2rank: 4 of its 10 matched
# calls are joined; in the other 6 a rank's kernel ends before the other rank arrives (a sampled capture
# whose calls of different, unnamed process groups interleave differently per rank), so they are not one
# call. The golden multi-rank jobs run gloo: a gloo collective is an op on gloo's thread, no graph node, and
# nothing is joined (each rank replays alone).
RANK_DIRS = {
    "corpus:hta_sampled_2rank": 4,
    "corpus:dlrm_8rank": 8,
    **{f"golden:{name}": 0 for name in (
        "ddp_allreduce_fixed", "ddp_allreduce_planted", "straggler_fixed", "straggler_planted",
        "varlen_gloo_fixed", "varlen_gloo_planted", "ddp_allreduce_fixed_torch215",
        "ddp_allreduce_planted_torch215", "straggler_fixed_torch215", "straggler_planted_torch215")},
}
RANK_DRIFT_TOLERANCE = 0.02


def _rank_dir(name: str):
    from tests.conftest import CORPUS, GOLDEN

    where, _, rest = name.partition(":")
    return (CORPUS / rest) if where == "corpus" else (GOLDEN / "traces" / rest)


@pytest.mark.parametrize("name", sorted(RANK_DIRS))
def test_the_joined_job_replays_every_multi_rank_capture(loaded, name):
    directory = _rank_dir(name)
    if not directory.is_dir():
        pytest.skip(f"needs {directory}")
    files = sorted(p for p in directory.iterdir() if p.name.endswith(".json.gz"))
    ranks = []
    for i, path in enumerate(files):
        tp = loaded(path)
        ranks.append(read_rank(tp, tp.rank if tp.rank is not None else i))
    job = join(ranks)
    result = replay(job.graph)
    assert result.cyclic == 0
    assert job.joined == RANK_DIRS[name]
    measured, replayed = job.step_widths(), job.step_widths(result)
    steady = [s for s in job.steady_steps() if s in measured]
    assert steady
    m, r = sum(measured[s] for s in steady), sum(replayed[s] for s in steady)
    assert abs(r - m) <= RANK_DRIFT_TOLERANCE * m, (name, r, m)


def test_dlrm_the_job_path_and_what_halving_each_ranks_host_work_buys(loaded):
    # dlrm_8rank, one steady step of 19.901 ms (rank 1's window, the widest): host-bound on every rank.
    # The job's path runs through rank 7 (13.5 ms: it reaches the step's collectives last) and rank 1
    # (6.4 ms, its own host work after the last collective). Halving the host compute between launches
    # saves 0.51 ms on rank 7 and 0.59 ms on rank 1; on any other rank it saves nothing: they wait at the
    # collectives either way.
    directory = _rank_dir("corpus:dlrm_8rank")
    if not directory.is_dir():
        pytest.skip(f"needs {directory}")
    ranks = []
    for path in sorted(directory.iterdir()):
        tp = loaded(path)
        ranks.append(read_rank(tp, tp.rank))
    job = join(ranks)
    result = replay(job.graph)
    base = job.median_step(result)
    assert base == job.median_step() == 19_901_000
    path = critical_path(job, result, 10)
    assert {r: round(ns / 1e6, 2) for r, ns in shares(job, path).items()} == {7: 13.51, 1: 6.40}
    assert sum(s.ns for s in path) == base
    savings = {}
    for rank in ranks:
        g = rank.graph
        edited = [r if r.rank != rank.rank else
                  type(r)(r.rank, shorten(g, (g.kind == "host") & (g.tag == "host"), 0.5), r.calls) for r in ranks]
        j = join(edited)
        savings[rank.rank] = base - j.median_step(replay(j.graph))
    assert savings == {0: 0, 1: 588_000, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 509_500}


def test_ranks_command_prints_the_job_critical_path(tmp_path):
    # `kineto-sql ranks DIR --critical-path` on the two builder ranks: the path per steady step by rank and
    # ledger bucket, in json (the same rows as the text table)
    import json

    from click.testing import CliRunner

    from kineto_sql.cli.main import cli

    result = CliRunner().invoke(cli, ["ranks", str(_two_builder_ranks(tmp_path)), "--critical-path", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["result"]["critical_path"]
    assert [(r["rank"], r["bucket"], r["ms"], r["pct"]) for r in rows] == JOB_PATH_ROWS
    assert {r["step"] for r in rows} == {1}


def _two_builder_ranks(tmp_path):
    for rank, gemm in enumerate((200, 600)):
        rank_before_all_reduce(gemm).write(tmp_path, f"rank{rank}.json.gz")
    return tmp_path


JOB_PATH_ROWS = [  # the two builder ranks' step 1 (800 us): rank, ledger bucket, ms, % of the step
    (1, "busy.gemm", 0.6, 75.0), (0, "busy.comm_exposed", 0.1, 12.5), (0, "idle.host_compute", 0.07, 8.8),
    (1, "idle.launch", 0.02, 2.5), (0, "idle.sync", 0.01, 1.2)]


def test_the_rank_task_reads_the_graph_diagnose_read(tmp_path, monkeypatch):
    # the `graph` part on the load that served the diagnosis: one graph load for both (the predictions, the
    # critical path line and the job's graph), and what the cross-rank join needs (the call, the buckets)
    from kineto_sql.fleet.task import GRAPH, rank_task
    from kineto_sql.whatif import graph as graph_module

    _two_builder_ranks(tmp_path)
    loads = []
    real = graph_module.load_graph
    monkeypatch.setattr(graph_module, "load_graph", lambda tp: loads.append(tp) or real(tp))
    out = rank_task(str(tmp_path / "rank1.json.gz"), 1, ("diagnose", GRAPH), keep_diagnosis=True)
    assert len(loads) == 1
    assert out.diagnosis.critical_path and out.graph.rank == 1
    assert len(out.graph.calls) == 1
    assert out.graph.buckets and out.graph.rebased_ns == 0
    assert "graph" not in out.tables  # in memory only: never a table of a dataset


def test_the_multi_rank_diagnosis_shows_the_job_critical_path(tmp_path):
    # diagnose RANK_DIR: the job's path per steady step by rank and ledger bucket, from the fleet's per-rank
    # tasks and clock offsets, in JSON (schema-valid), text and Markdown; the same rows as `ranks --critical-path`
    import importlib.resources
    import json

    import jsonschema

    from kineto_sql.diagnose.render_text import render_markdown, render_text
    from kineto_sql.fleet.run import diagnose_directory

    d = diagnose_directory(_two_builder_ranks(tmp_path))
    assert [(r["rank"], r["bucket"], r["ms"], r["pct"]) for r in d.job_critical_path] == JOB_PATH_ROWS
    assert {r["step"] for r in d.job_critical_path} == {1}
    doc = d.to_json()
    schema = json.loads(importlib.resources.files("kineto_sql").joinpath("diagnose/schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["job_critical_path"] == list(d.job_critical_path)
    line = ("step 1, 800 us: rank 1 78% (busy.gemm 75%, idle.launch 2%), "
            "rank 0 23% (busy.comm_exposed 12%, idle.host_compute 9%, idle.sync 1%)")
    text = render_text(d)
    assert f"job critical path across ranks (steady steps; each rank's dependency graph joined at its collectives): " \
           f"the rank and ledger bucket that hold each step:\n  {line}\n" in text
    assert f"- {line}" in render_markdown(d)
    # the HTML report: the same line in the section across ranks
    from kineto_sql.diagnose.render_html import render_html

    page = render_html(d)
    ranks = page[page.index("<section id='ranks'>"):]
    ranks = ranks[:ranks.index("</section>")]
    assert "<div class='job-path' id='job-critical-path'><p>Job critical path across ranks (steady steps; each " \
           "rank&#x27;s dependency graph joined at its collectives): the rank and ledger bucket that hold each " \
           f"step:</p><ul><li>{line}</li></ul></div>" in ranks
    # one trace: no job path, no key
    from kineto_sql.diagnose.model import Diagnosis

    assert "job_critical_path" not in Diagnosis("t", ()).to_json()


DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def rank_after_dataloader(wait_us: int) -> KinetoTrace:
    """One step of 1000 us: a DataLoader wait of `wait_us` from 0, then rank_before_all_reduce's work from
    there (a 200 us gemm, an all-reduce behind it that ends at 720 us on every rank, the host waiting for it
    at a stream sync), host work to the step's end."""
    t = wait_us
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp(DATALOADER, ts_us=0, dur_us=wait_us, cat="user_annotation"),
        CpuOp("aten::mm", ts_us=t, dur_us=15),
        Launch(1, ts_us=t + 5, dur_us=5),
        Kernel(1, ts_us=t + 20, dur_us=200, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=t + 30, dur_us=5),
        Kernel(2, ts_us=t + 220, dur_us=720 - t - 220, name=ALL_REDUCE),
        Launch(3, ts_us=t + 40, dur_us=730 - t - 40, name="cudaStreamSynchronize"),
        CpuOp("aten::add", ts_us=730, dur_us=270),
    ])


def test_a_fix_on_a_waiting_rank_buys_the_job_nothing_and_on_the_last_rank_the_others_wait(load_trace):
    # rank 0 waits 100 us for its batch, rank 1 400 us: rank 1 reaches the all-reduce 300 us after rank 0.
    # Removing rank 0's wait: rank 0 arrives earlier and waits longer; the job's step stays 1000 us. Removing
    # rank 1's: it arrives 100 us before rank 0, so the job saves rank 0's 300 us wait, not its own 400 us.
    # One window: the cautious edit (the shortest wait any window shows) keeps the wait, saving 0.
    from kineto_sql.whatif.ranks import job_prediction

    ranks = [read_rank(load_trace(rank_after_dataloader(wait)), rank) for rank, wait in enumerate((100, 400))]
    offsets = {0: 0, 1: 0}
    job = join(ranks, offsets)
    assert job.joined == 1 and job.median_step() == job.median_step(replay(job.graph)) == 1000 * US
    on_waiting = job_prediction(ranks, offsets, 0, ["catalog.input_bound"], job)
    on_last = job_prediction(ranks, offsets, 1, ["catalog.input_bound"], job)
    assert on_waiting == {"rank": 0, "ranks": [0], "measured_step_ns": 1000 * US, "predicted_step_ns": 1000 * US, "saving_ns": 0,
                          "saving_pct": 0.0, "saving_range_ns": [0, 0]}
    assert on_last == {"rank": 1, "ranks": [1], "measured_step_ns": 1000 * US, "predicted_step_ns": 700 * US,
                       "saving_ns": 300 * US, "saving_pct": 30.0, "saving_range_ns": [0, 300 * US]}
    # no edit for the rule, or nothing for it to act on: no job prediction
    assert job_prediction(ranks, offsets, 0, ["catalog.host_compute_gaps"], job) is None
    assert job_prediction(ranks, offsets, 0, ["catalog.gc_gil_stall"], job) is None


def test_the_multi_rank_diagnosis_says_what_each_ranks_fix_buys_the_job(tmp_path):
    # the same two ranks through diagnose RANK_DIR: the DataLoader finding (no worker processes here, the same
    # edit as input_bound's) says in its "fixing this" line on each rank its own step (-100 us on rank 0, -400 us
    # on rank 1) and the job's
    from kineto_sql.diagnose.narrate import block
    from kineto_sql.fleet.run import diagnose_directory

    for rank, wait in enumerate((100, 400)):
        rank_after_dataloader(wait).write(tmp_path, f"rank{rank}.json.gz")
    d = diagnose_directory(tmp_path)
    said = {}
    for t in d.traces:
        for f in t.findings:
            if f.query_id == "catalog.dataloader_workers_missing":
                assert f.saving_ns == (100 if t.rank == 0 else 400) * US
                said[t.rank] = (f.prediction["job"], dict(block(f).lines)["fixing this"])
    assert said[1][0]["saving_ns"] == 300 * US and said[1][1].endswith(
        "; across ranks the job's step 1.0 -> 0.7 ms (-30.0%, range 0.0-0.3 ms)")
    assert said[0][0]["saving_ns"] == 0 and said[0][1].endswith(
        "; across ranks the job's step stays 1.0 ms: this rank would wait at the collectives for another rank "
        "instead")


def rank_with_compute_after_all_reduce(gemm_us: int, next_us: int) -> KinetoTrace:
    """One step of 900 us on one stream: a gemm from 20 us, an all-reduce of its output queued behind it that
    ends at 720 us on every rank (the last rank arrives at 620, the transfer takes 100 us), a second gemm of
    `next_us` that does not read the all-reduce's output, queued behind it; the host waits for the stream at
    a sync (10 us tail) and works until the step ends."""
    end = 720 + next_us + 10
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=900),
        CpuOp("aten::mm", ts_us=0, dur_us=25),
        Launch(1, ts_us=5, dur_us=5),
        Kernel(1, ts_us=20, dur_us=gemm_us, name="volta_sgemm_128x64_nn"),
        Launch(2, ts_us=12, dur_us=5),
        Kernel(2, ts_us=20 + gemm_us, dur_us=700 - gemm_us, name=ALL_REDUCE),
        Launch(3, ts_us=19, dur_us=5),
        Kernel(3, ts_us=720, dur_us=next_us, name="volta_sgemm_128x64_nn"),
        Launch(4, ts_us=40, dur_us=end - 40, name="cudaStreamSynchronize"),
        CpuOp("aten::add", ts_us=end, dur_us=900 - end),
    ])


@pytest.mark.parametrize("next_us, saving_us, cautious_us", [(60, 60, 35), (150, 100, 100)])
def test_overlapping_a_collective_saves_the_job_only_what_compute_can_cover(load_trace, next_us, saving_us,
                                                                            cautious_us):
    # Two ranks: rank 0's gemm takes 200 us, rank 1's 600 us; the all-reduce's transfer runs 620..720 on both
    # (rank 0's kernel waited 400 us for rank 1 before it). Overlapping the all-reduce with the next gemm is a
    # change every rank makes (the same DDP / FSDP code): the edit goes on both ranks, whichever rank's finding
    # asked. A 60 us gemm hides entirely under the 100 us transfer: the job saves the gemm's 60 us; a 150 us
    # gemm covers the whole transfer: the job saves the transfer's 100 us, not the gemm's 150. The cautious end
    # (the transfer 25% slower under compute, 125 us; the 400 us rank 0 waited does not slow) saves 35 us with
    # the 60 us gemm and still 100 with the 150 us one (it ends after the slowed transfer).
    from kineto_sql.whatif.predict import predict
    from kineto_sql.whatif.ranks import job_prediction

    rule = "catalog.exposed_communication"
    ranks = [read_rank(load_trace(rank_with_compute_after_all_reduce(gemm, next_us)), rank)
             for rank, gemm in enumerate((200, 600))]
    offsets = {0: 0, 1: 0}
    job = join(ranks, offsets)
    assert job.joined == 1 and job.median_step() == job.median_step(replay(job.graph)) == 900 * US
    expected = {"ranks": [0, 1], "measured_step_ns": 900 * US, "predicted_step_ns": (900 - saving_us) * US,
                "saving_ns": saving_us * US, "saving_pct": round(100.0 * saving_us / 900, 1),
                "saving_range_ns": [cautious_us * US, saving_us * US]}
    for rank in (0, 1):
        assert job_prediction(ranks, offsets, rank, [rule], job) == {"rank": rank, **expected}
    # each rank read alone: rank 1 (the last to arrive) predicts what the job saves; rank 0 alone cannot see
    # that 400 us of its all-reduce waited for rank 1, and predicts its whole gemm under it (150 > 100 us)
    alone = [predict(r.graph, [rule], has_device=True).saving_ns for r in ranks]
    assert alone == [next_us * US, saving_us * US]


def test_a_fix_every_rank_makes_is_said_so_in_the_multi_rank_diagnosis(tmp_path):
    # diagnose RANK_DIR on the two ranks with the 60 us gemm: exposed_communication's "fixing this" line on
    # each rank says the job's step with the fix done on both (one replay of the job for both findings)
    from kineto_sql.diagnose.narrate import block
    from kineto_sql.fleet.run import diagnose_directory

    for rank, gemm in enumerate((200, 600)):
        rank_with_compute_after_all_reduce(gemm, 60).write(tmp_path, f"rank{rank}.json.gz")
    d = diagnose_directory(tmp_path)
    said = {t.rank: dict(block(f).lines)["fixing this"] for t in d.traces for f in t.findings
            if f.query_id == "catalog.exposed_communication"}
    assert sorted(said) == [0, 1]
    for line in said.values():
        assert line.endswith("; done on all 2 ranks, the job's step 0.9 -> 0.8 ms (-6.7%)"), line
