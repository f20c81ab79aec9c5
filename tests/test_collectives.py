"""Collectives across ranks: per-rank calls (reading.collective_calls on builder traces), then the fleet's
DuckDB SQL (queries/fleet/: call matching, clock alignment, NCCL's bandwidth formulas, skew, the two rules)
over hand-made rank tables, with hand-computed numbers."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from kineto_sql.fleet import collective_text as T
from kineto_sql.fleet.analysis import analyse, connect_tables
from kineto_sql.run.runner import run_query
from tests.conftest import CORPUS
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)

MIB = 1 << 20
COLS = ["step", "pg", "collective", "seq", "ts", "dur", "in_bytes", "out_bytes", "group_size", "in_split", "link_gbps"]


def fleet(ranks: dict[int, tuple[int, list[tuple]]], thresholds=T.Thresholds()):
    """The fleet reading (collectives only) of {rank: (ts_offset_ns, rows in COLS order)}, as the rank tasks
    would hand it over: start_ns is the rank's ts plus the loader's offset."""
    frames = []
    for rank, (offset, rows) in ranks.items():
        df = pd.DataFrame(rows, columns=COLS)
        df.insert(0, "rank", rank)
        df["start_ns"] = df["ts"] + offset
        frames.append(df)
    calls = pd.concat(frames, ignore_index=True).astype({"in_split": "string", "pg": "string"})
    load = pa.table({"rank": list(ranks), "ts_offset_ns": [o for o, _ in ranks.values()]})
    return analyse(connect_tables({"collectives": [pa.Table.from_pandas(calls, preserve_index=False)],
                                   "load": [load]}), hta=False, thresholds=thresholds)


def bus_factor(collective: str, n: int):
    report = fleet({r: (0, [(1, "", collective, 1, 0, 1000, 1000, None, n, None, None)]) for r in range(2)})
    row = report.collective_skew.iloc[0]
    return None if pd.isna(row.busbw_gbps) else round(row.busbw_gbps / row.algbw_gbps, 6)


@pytest.mark.parametrize(("collective", "n", "factor"), [
    ("all_reduce", 8, 1.75), ("all_reduce", 2, 1.0), ("all_gather", 8, 0.875), ("reduce_scatter", 4, 0.75),
    ("all_to_all", 8, 0.875), ("broadcast", 8, 1.0), ("send_recv", 2, 1.0), ("barrier", 8, None),
])
def test_bus_factor_is_nccls(collective, n, factor):
    assert bus_factor(collective, n) == factor


@pytest.mark.parametrize(("collective", "in_bytes", "out_bytes", "n", "size"), [
    ("all_reduce", 1000, None, 8, 1000),
    ("all_gather", 100, 800, 8, 800),        # the gathered output
    ("all_gather", 100, None, 8, 800),       # n x the input when only it is known
    ("reduce_scatter", None, 100, 4, 400),
    ("all_to_all", 6144, None, 8, 6144),     # one rank's whole send buffer
])
def test_algo_size_follows_nccl_tests(collective, in_bytes, out_bytes, n, size):
    report = fleet({r: (0, [(1, "", collective, 1, 0, 1000, in_bytes, out_bytes, n, None, None)]) for r in range(2)})
    assert report.collective_skew.size_bytes.iloc[0] == size


def test_split_imbalance():
    def imbalance(split):
        report = fleet({r: (0, [(1, "", "all_to_all", 1, 0, 1000, 6, None, 2, split, None)]) for r in range(2)})
        return report.collective_skew.imbalance.iloc[0]

    assert imbalance("[1, 1, 2]") == pytest.approx(1.5)
    assert imbalance("[]") == 1.0 and imbalance(None) == 1.0      # no splits: equal messages, balanced


def three_ranks():
    """Call 1: all_reduce of 64 MiB; ranks start at 0 / 4 / 6 ms and all end at 10 ms.
    Call 2: all_to_allv of 1 MiB; ranks start at 20 / 20.05 / 21 ms and all end at 21.2 ms (rank 2, the
    last, takes 0.2 ms); rank 2 sends splits [1, 1, 4]."""
    link = 150.0
    out = {}
    for rank, (s1, s2, split) in enumerate([(0, 20_000, "[2, 2, 2]"), (4_000, 20_050, "[2, 2, 2]"),
                                            (6_000, 21_000, "[1, 1, 4]")]):
        # ts on each rank's own (rebased) clock: the offset of rank r is r us, added back as start_ns
        out[rank] = (1_000 * rank, [
            (1, "0", "all_reduce", 1, s1 * 1000 - 1_000 * rank, 10_000_000 - s1 * 1000, 64 * MIB, None, 3, None,
             link),
            (1, "0", "all_to_all", 1, s2 * 1000 - 1_000 * rank, 21_200_000 - s2 * 1000, 1 * MIB, None, 3, split,
             link),
        ])
    return out


def test_match_calls_latency_bandwidth_skew_by_hand():
    report = fleet(three_ranks())
    # the ends coincide on every call: the clocks agree (offsets 0), within the band of 2 calls
    assert report.clock.applied_offset_ns.tolist() == [0, 0, 0]
    calls = report.collective_skew.set_index("collective")
    ar = calls.loc["all_reduce"]
    assert ar.ranks == 3 and ar.size_bytes == 64 * MIB and ar.status == "ok"
    assert ar.latency_us == 4_000                               # the last rank's 4 ms: the transfer itself
    assert ar.algbw_gbps == pytest.approx(64 * MIB / 4e6)      # 16.777 GB/s
    assert ar.busbw_gbps == pytest.approx(64 * MIB / 4e6 * 4 / 3)   # x 2(n-1)/n = 22.37 GB/s
    assert ar.pct_of_link == pytest.approx(100 * 64 * MIB / 4e6 * 4 / 3 / 150)   # 14.9%
    assert (ar.start_skew_us, ar.end_skew_us) == (6_000, 0)
    assert ar.wait_us == 6_000 + 2_000                         # rank 0 waited 6 ms, rank 1 2 ms
    assert (ar.first_rank, ar.last_rank) == (0, 2)
    assert ar.slow and not ar.skewed                           # 6 ms skew < 2 x 4 ms latency
    a2a = calls.loc["all_to_all"]
    assert a2a.latency_us == 200 and a2a.start_skew_us == 1_000 and a2a.end_skew_us == 0
    assert a2a.imbalance == pytest.approx(2.0)                 # 4 / mean(1, 1, 4)
    assert a2a.skewed and not a2a.slow                         # 1 MiB: latency-bound, not judged on the link
    assert list(calls.index) == ["all_reduce", "all_to_all"]   # in time order


def test_findings_name_the_late_rank_and_the_slow_call():
    found = T.findings(fleet(three_ranks()).collective_skew)
    # ranked by impact: the slow all_reduce could save 4 ms x (1 - 14.9%) = 3.4 ms, the skew cost 1.95 ms
    assert [f["rule"] for f in found] == ["collective_slow", "collective_skew"]
    assert found[0]["impact_us"] == pytest.approx(4_000 * (1 - 64 * MIB / 4e6 * 4 / 3 / 150))
    skew = next(f for f in found if f["rule"] == "collective_skew")
    assert skew["evidence"].startswith("rank 2 arrived last at 1 of 2 collective calls")
    assert skew["impact_us"] == 1_000 + 950                    # ranks 0 and 1 waited in the all_to_all
    slow = next(f for f in found if f["rule"] == "collective_slow")
    assert "22.4 GB/s, 15% of the 150 GB/s link" in slow["evidence"]


def test_skew_at_and_just_under_the_thresholds():
    """skewed: start skew >= 100 us and >= 2 x the latency, and wider than the clock band."""
    def skewed(last_start_us, latency_us, calls=3):
        end = last_start_us + latency_us
        rows = {0: (0, []), 1: (0, [])}
        for seq in range(1, calls + 1):  # the same call `calls` times, 1 s apart: the ends agree exactly
            t = seq * 1_000_000_000
            rows[0][1].append((1, "", "all_reduce", seq, t, end * 1000, 8, None, 2, None, None))
            rows[1][1].append((1, "", "all_reduce", seq, t + last_start_us * 1000, latency_us * 1000, 8, None, 2,
                               None, None))
        calls_df = fleet(rows).collective_skew
        assert calls_df.band_us.iloc[0] == (4.0 if calls > 1 else 2 * latency_us)
        return bool(calls_df.skewed.iloc[0])

    assert skewed(100, 50) and not skewed(99, 40)              # the 100 us floor
    assert skewed(200, 100) and not skewed(199, 100)           # 2 x the latency
    # one call: nothing says how far its ends may disagree but its own 50 us duration, so the band is 2 x 50 us
    # and a 100 us skew sits inside it; 101 us does not
    assert not skewed(100, 50, calls=1) and skewed(101, 50, calls=1)


def test_balanced_job_is_silent():
    ranks = {i: (0, [(1, "", "all_reduce", 1, 1_000, 5_000_000, 256 * MIB, None, 8, None, 150.0)]) for i in range(8)}
    calls = fleet(ranks).collective_skew
    # 256 MiB in 5 ms: algbw 53.7 GB/s, busbw 93.9 GB/s = 63% of the link; no skew
    assert calls.busbw_gbps[0] == pytest.approx(256 * MIB / 5e6 * 1.75)
    assert T.findings(calls) == []


def test_clock_offsets_from_the_ends_and_skew_inside_them():
    """Rank 1's clock runs 300 us ahead: its calls read 300 us later. Three all_reduces end together; the
    offset is recovered exactly, the skew is read on the aligned clocks, and the headline says so."""
    rows = {0: (0, []), 1: (300_000, [])}
    for seq, (s0, s1) in enumerate([(0, 500), (10_000, 10_050), (20_000, 20_900)], start=1):
        rows[0][1].append((1, "", "all_reduce", seq, s0 * 1000, (s0 + 1_000 - s0) * 1000 + 0, 8, None, 2, None, None))
        rows[1][1].append((1, "", "all_reduce", seq, s1 * 1000, (s0 + 1_000 - s1) * 1000, 8, None, 2, None, None))
    report = fleet(rows)
    clock = report.clock.set_index("rank")
    assert clock.loc[1, "offset_us"] == 300.0 and clock.loc[1, "applied_offset_ns"] == 300_000
    assert clock.loc[1, "band_us"] == 2.0                      # the ends agree exactly: the 1 us resolution x 2
    assert report.collective_skew.start_skew_us.tolist() == [500.0, 50.0, 900.0]
    assert report.collective_skew.last_rank.tolist() == [1, 1, 1]
    assert "clocks aligned within 2 us" in T.headline(report.collective_skew, report.ranks, report.clock)


def test_mismatched_calls_are_named_not_measured():
    """One rank missed an all_reduce (a sampled capture): its counts differ, so nothing is skewed."""
    rows = {0: (0, [(1, "", "all_reduce", s, s * 10_000_000, 1_000_000, 8, None, 2, None, None) for s in (1, 2, 3)]),
            1: (0, [(1, "", "all_reduce", s, s * 10_000_000, 1_000_000, 8, None, 2, None, None) for s in (1, 2)])}
    report = fleet(rows)
    assert set(report.collective_skew.status) == {"call counts differ across ranks"}
    assert report.collective_skew.start_skew_us.isna().all() and not report.collective_skew.skewed.any()
    assert report.clock.applied_offset_ns.tolist() == [0, 0]
    assert T.headline(report.collective_skew, report.ranks, report.clock).startswith(
        "2 ranks, 3 collective calls, but 3 matched call(s) are not one call on every rank (call counts differ "
        "across ranks)")


def test_collective_calls_query_on_nccl_and_gloo(load_trace):
    trace = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        # old style: the size is on the nccl: annotation
        CpuOp("record_param_comms", ts_us=10, dur_us=50),
        CpuOp("nccl:all_reduce", ts_us=12, dur_us=40, cat="user_annotation",
              args={"Input Dims": [[1024]], "Input type": ["float"]}),
        Launch(correlation=1, ts_us=20, dur_us=5),
        Kernel(correlation=1, ts_us=100, dur_us=30, name="ncclKernel_AllReduce_RING_LL_Sum_float", stream=9),
        # new style: the kernel carries the sizes
        CpuOp("record_param_comms", ts_us=200, dur_us=50),
        Launch(correlation=2, ts_us=210, dur_us=5),
        Kernel(correlation=2, ts_us=300, dur_us=10, name="ncclDevKernel_AllGather_RING_LL", stream=9,
               args={"Collective name": "_allgather_base", "In msg nelems": 100, "Out msg nelems": 800,
                     "dtype": "BFloat16", "Group size": 8, "Process Group Name": "3"}),
        # a second all_reduce in the step: seq 2
        CpuOp("nccl:all_reduce", ts_us=400, dur_us=40, cat="user_annotation",
              args={"Input Dims": [[16, 4]], "Input type": ["c10::BFloat16"]}),
        Launch(correlation=3, ts_us=410, dur_us=5),
        Kernel(correlation=3, ts_us=500, dur_us=20, name="ncclKernel_AllReduce_RING_LL_Sum_bf16", stream=9),
    ], metadata={"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]})
    df = run_query(load_trace(trace), "reading.collective_calls").df
    got = [tuple(r) for r in df[["step", "pg", "collective", "seq", "dur", "in_bytes", "out_bytes", "group_size",
                                 "source", "link_gbps"]].astype(object).where(df.notna(), None)
           .itertuples(index=False)]
    assert got == [
        (1, "", "all_reduce", 1, 30_000, 4096, None, None, "kernel", 300.0),     # 1024 floats
        (1, "3", "all_gather", 1, 10_000, 200, 1600, 8, "kernel", 300.0),        # 100 / 800 bf16
        (1, "", "all_reduce", 2, 20_000, 128, None, None, "kernel", 300.0),      # 16 x 4 bf16
    ]


def test_collective_calls_on_gloo(load_trace):
    trace = KinetoTrace([
        ProfilerStep(3, ts_us=0, dur_us=1000),
        CpuOp("c10d::allreduce_", ts_us=10, dur_us=20),
        CpuOp("gloo:all_reduce", ts_us=50, dur_us=400, tid=2, cat="user_annotation",
              args={"Input Dims": [[1575936]], "Input type": ["float"]}),
    ])
    df = run_query(load_trace(trace), "reading.collective_calls").df
    assert [tuple(r) for r in df[["step", "collective", "seq", "dur", "in_bytes", "source"]].itertuples(index=False)] \
        == [(3, "all_reduce", 1, 400_000, 1575936 * 4, "cpu")]
    assert df.link_gbps.isna().all()                             # no GPU: no link to judge against


CORPUS_DLRM = CORPUS / "dlrm_8rank"


@pytest.mark.skipif(not CORPUS_DLRM.is_dir(), reason="needs ../shared/corpus/dlrm_8rank")
def test_dlrm_8rank_calls_match_and_rank7_arrives_last():
    """MANIFEST: ranks start up to 7.5 ms apart (rank 7 last), the collectives re-synchronise them."""
    from kineto_sql.fleet.executors import LocalExecutor
    from kineto_sql.fleet.run import run_fleet

    report = run_fleet(CORPUS_DLRM, ("collectives",), LocalExecutor(1)).report
    calls = report.collective_skew
    assert report.ranks == list(range(8)) and len(calls) == 8 and (calls.ranks == 8).all()
    assert list(zip(calls.collective, calls.seq)) == [
        ("all_to_all", 1), ("all_to_all", 2), ("all_to_all", 3), ("all_to_all", 4), ("all_reduce", 1),
        ("all_to_all", 5), ("all_reduce", 2), ("all_reduce", 3)]
    first = calls.iloc[0]
    assert (first.collective, first.seq, first.last_rank) == ("all_to_all", 1, 7)
    # 7624.0 us on the raw clocks; rank 1's clock reads 0.5 us behind rank 7's (band 2.2 / 4.4 us)
    assert first.size_bytes == 6144 * 4 and first.start_skew_us == pytest.approx(7624.5)
    assert first.latency_us == pytest.approx(10.0)
    ar = calls[(calls.collective == "all_reduce") & (calls.seq == 1)].iloc[0]
    # 394241 floats; n = 8 ranks: busbw = S / latency x 2 * 7 / 8
    assert ar.size_bytes == 394241 * 4
    assert ar.busbw_gbps == pytest.approx(394241 * 4 / (ar.latency_us * 1e3) * 1.75)
    assert ar.link_gbps == 150.0 and not calls.slow.any()          # 1.5 MiB: latency-bound, not judged
    skew = [f for f in T.findings(calls) if f["rule"] == "collective_skew"]
    assert skew[0]["evidence"].startswith("rank 7 arrived last at 5 of 8 collective calls")


GOLDEN_DDP = __import__("pathlib").Path(__file__).resolve().parents[1] / "golden/traces/ddp_allreduce_planted"


def test_cli_on_the_gloo_ddp_pair_names_the_late_rank(tmp_path):
    from click.testing import CliRunner

    from kineto_sql.cli.main import cli

    result = CliRunner().invoke(cli, ["collectives", str(GOLDEN_DDP)])
    assert result.exit_code == 0, result.output
    # rank 0 runs the flattened all_reduce after its own backward, 24-32 ms after rank 1 (gloo, 6 MiB)
    assert result.output.startswith("2 ranks, 3 collective calls matched")
    assert "[collective_skew] rank 0 arrived last at 3 of 3 collective calls" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = CliRunner().invoke(cli, ["collectives", str(empty)])
    assert bad.exit_code == 2 and "holds no trace files" in bad.output


def test_rccl_kernel_without_launch_finds_its_annotation_on_the_stream(load_trace):
    """ROCm: the RCCL kernel has no launch; Kineto's on-stream copy of nccl:all_reduce (External id 5)
    holds it, and the host annotation with External id 5 carries the size."""
    trace = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("nccl:all_reduce", ts_us=10, dur_us=40, cat="user_annotation", external_id=5,
              args={"Input Dims": [[2873320]], "Input type": ["c10::BFloat16"]}),
        CpuOp("nccl:all_reduce", ts_us=100, dur_us=300, pid=0, tid=9, cat="gpu_user_annotation", external_id=5),
        Kernel(correlation=77, ts_us=110, dur_us=200, name="ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
               stream=9),
    ])
    df = run_query(load_trace(trace), "reading.collective_calls").df
    assert [tuple(r) for r in df[["collective", "dur", "in_bytes", "dtype"]].itertuples(index=False)] == [
        ("all_reduce", 200_000, 2873320 * 2, "c10::BFloat16")]


def test_lib_names_an_rccl_generic_kernel_by_its_stream_annotation(load_trace):
    """kineto.lib.collectives names the collective once for every reader: RCCL's ncclDevKernel_Generic says
    nothing, the nccl:all_reduce copied onto its stream does (as on tl_mi300_resnet_act_checkpoint); a
    generic kernel no annotation holds (launched before the capture) stays unnamed, and exposed
    communication's evidence reads the same names (all_reduce, not `other collective`)."""
    generic = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"
    trace = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("nccl:all_reduce", ts_us=10, dur_us=40, cat="user_annotation", external_id=5,
              args={"Input Dims": [[2873320]], "Input type": ["c10::BFloat16"]}),
        CpuOp("nccl:all_reduce", ts_us=100, dur_us=300, pid=0, tid=9, cat="gpu_user_annotation", external_id=5),
        Kernel(correlation=77, ts_us=110, dur_us=200, name=generic, stream=9),
        Kernel(correlation=78, ts_us=500, dur_us=50, name=generic, stream=9),  # outside the annotation
    ])
    tp = load_trace(trace)
    rows = tp.df("INCLUDE PERFETTO MODULE kineto.lib.collectives; "
                 "SELECT ts, dur, collective FROM kineto_collectives ORDER BY ts")
    assert [(r.ts, r.dur, r.collective if isinstance(r.collective, str) else None)
            for r in rows.itertuples(index=False)] == [(110_000, 200_000, "all_reduce"), (500_000, 50_000, None)]
    kinds = tp.df("INCLUDE PERFETTO MODULE kineto.catalog.exposed_communication; "
                  "SELECT kinds FROM _kineto_catalog_exposed_communication_kinds")
    assert kinds["kinds"].tolist() == ["all_reduce 0.200 ms, other collective 0.050 ms"]
