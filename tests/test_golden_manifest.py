"""Golden traces: manifest integrity, embedded ground truth, and the raw fault signal in each pair.

Plain json/gzip only: torch is NOT imported (CI has no torch). The traces are recorded by
``python -m golden.record`` (see golden/README.md); this test only reads them.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import statistics
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
MANIFEST_PATH = GOLDEN / "MANIFEST.json"
GT_KEY = "kineto_sql_ground_truth"
MAX_TRACE_BYTES = 1_500_000
# 16 MB: the golden traces (11 MB), the 10-step what-if pairs (1.4 MB) and golden/reruns (3.3 MB: the same
# scenario recorded six times, four planted/fixed pairs three times a side, which diff and the what-if need)
MAX_GOLDEN_BYTES = 16_000_000
GT_FIELDS = (
    "schema",
    "scenario",
    "fault_id",
    "variant",
    "twin",
    "knob",
    "knob_setting",
    "expected_signal",
    "fault_present",
    "torch_version",
    "device",
    "profiler",
)
CSV_HEADER = [
    "key",
    "count",
    "self_cpu_time_total_us",
    "cpu_time_total_us",
    "self_device_time_total_us",
    "device_time_total_us",
]

if not MANIFEST_PATH.exists():  # pragma: no cover - the manifest is committed
    pytest.fail(f"{MANIFEST_PATH} missing: run `python -m golden.record`", pytrace=False)

MANIFEST = json.loads(MANIFEST_PATH.read_text())
ENTRIES = MANIFEST["traces"]


# ----------------------------------------------------------------------------- helpers


@lru_cache(maxsize=None)
def load(rel: str) -> dict:
    with gzip.open(GOLDEN / rel, "rt") as f:
        return json.load(f)


def gt_of(doc: dict) -> dict:
    gt = doc[GT_KEY]
    return json.loads(gt) if isinstance(gt, str) else gt


def entries_for(scenario: str, variant: str, tag: str | None = None) -> list[dict]:
    """The recording of a scenario twin: the primary one (tag None) or a second recording with another torch
    (ground truth `recording_tag`, e.g. `torch215`, see golden/README.md)."""
    es = [e for e in ENTRIES if e["ground_truth"]["scenario"] == scenario and e["ground_truth"]["variant"] == variant
          and e["ground_truth"].get("recording_tag") == tag]
    if not es:
        pytest.skip(f"{scenario}/{variant} not recorded (see MANIFEST skipped)")
    return sorted(es, key=lambda e: (e["ground_truth"].get("rank") or 0))


# signal test -> the scenario whose recordings (one per torch version) it checks
SIGNAL_SCENARIO = {
    "test_sync_item_signal": "sync_item",
    "test_input_bound_signal": "input_bound",
    "test_op_storm_signal": "op_storm",
    "test_dtype_casts_signal": "dtype_casts",
    "test_optimizer_signal": "optimizer_foreach",
    "test_gc_stall_signal": "gc_stall",
    "test_straggler_signal": "straggler",
    "test_ddp_allreduce_signal": "ddp_allreduce",
    "test_memory_churn_signal": "memory_churn",
    "test_schedule_cold_signal": "schedule_cold",
    "test_record_function_signal": "record_function",
    "test_with_stack_overhead_signal": "with_stack_overhead",
    "test_compile_graph_break_signal": "compile_graph_break",
    "test_guide_matmul_size_signal": "guide_matmul_size",
    "test_guide_compile_addmm_signal": "guide_compile_addmm",
    "test_no_schedule_item_signal": "no_schedule_item",
    "test_fp64_cast_leak_signal": "fp64_cast_leak",
    "test_compile_eager_island_signal": "compile_eager_island",
    "test_gc_not_cold_signal": "gc_not_cold",
    "test_with_stack_python_loop_signal": "with_stack_python_loop",
    "test_item_print_loop_signal": "item_print_loop",
    "test_autocast_excluded_attention_signal": "autocast_excluded_attention",
    "test_varlen_gloo_signal": "varlen_gloo",
    "test_foreach_off_many_params_signal": "foreach_off_many_params",
    "test_inference_requests_signal": "inference_requests",
    "test_collate_heavy_python_signal": "collate_heavy_python",
    "test_random_batch_memory_signal": "random_batch_memory",
    "test_matmul_tiny_vs_big_signal": "matmul_tiny_vs_big",
}


def recordings(scenario: str) -> list[str | None]:
    """Every recording of the scenario's planted twin: None (primary) first, then the tags of other torch versions."""
    tags = {e["ground_truth"].get("recording_tag") for e in ENTRIES if e["ground_truth"]["scenario"] == scenario}
    return sorted(tags, key=lambda t: (t is not None, t or ""))


def pytest_generate_tests(metafunc):
    """A signal test runs once per recording of its scenario (SIGNAL_SCENARIO; one per torch version)."""
    scenario = SIGNAL_SCENARIO.get(metafunc.function.__name__)
    if scenario is not None and "tag" in metafunc.fixturenames:
        tags = recordings(scenario)
        metafunc.parametrize("tag", tags, ids=[t or "primary" for t in tags])


def one(scenario: str, variant: str) -> dict:
    (e,) = entries_for(scenario, variant)
    return load(e["path"])


class Trace:
    """Tiny in-memory view of one Kineto trace: complete events, ProfilerSteps, instants."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        evs = doc["traceEvents"]
        self.x = [e for e in evs if e.get("ph") == "X"]
        self.instants = [e for e in evs if e.get("ph") == "i"]
        self.steps = sorted((e for e in self.x if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
        scheduled = gt_of(doc)["profiler"].get("schedule") is not None if GT_KEY in doc else True
        assert bool(self.steps) is scheduled, "ProfilerStep# events if and only if the capture had a schedule"

    @staticmethod
    def _inside(e: dict, s: dict) -> bool:
        return s["ts"] <= e["ts"] < s["ts"] + s["dur"]

    def in_step(self, s: dict, name: str | None = None, cat: str | None = None, pred=None) -> list[dict]:
        out = []
        for e in self.x:
            if e is s or not self._inside(e, s):
                continue
            if name is not None and e.get("name") != name:
                continue
            if cat is not None and e.get("cat") != cat:
                continue
            if pred is not None and not pred(e):
                continue
            out.append(e)
        return out

    def per_step(self, **kw) -> list[list[dict]]:
        return [self.in_step(s, **kw) for s in self.steps]

    def count(self, name: str) -> int:
        return sum(1 for e in self.x if e.get("name") == name)

    def step_durs(self) -> list[float]:
        return [s["dur"] for s in self.steps]


@lru_cache(maxsize=None)
def trace(scenario: str, variant: str, rank: int | None = None, tag: str | None = None) -> Trace:
    es = entries_for(scenario, variant, tag)
    if rank is not None:
        es = [e for e in es if e["ground_truth"]["rank"] == rank]
    assert len(es) == 1, (scenario, variant, rank, tag)
    return Trace(load(es[0]["path"]))


def ranks(scenario: str, variant: str, tag: str | None = None) -> list[Trace]:
    return [Trace(load(e["path"])) for e in entries_for(scenario, variant, tag)]


def contained(inner: dict, outer: dict) -> bool:
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"] + 0.001


# ----------------------------------------------------------------------------- manifest integrity


def test_manifest_top_level():
    assert MANIFEST["schema"] == 1
    assert MANIFEST["ground_truth_key"] == GT_KEY
    assert isinstance(MANIFEST["fault_ids"], dict) and MANIFEST["fault_ids"]
    assert ENTRIES, "manifest lists no traces"
    paths = [e["path"] for e in ENTRIES]
    assert len(paths) == len(set(paths)), "duplicate trace paths"
    on_disk = sorted(p.relative_to(GOLDEN).as_posix() for p in (GOLDEN / "traces").rglob("*.json.gz"))
    assert on_disk == sorted(paths), "manifest and golden/traces disagree"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["path"] for e in ENTRIES])
def test_file_matches_manifest(entry):
    p = GOLDEN / entry["path"]
    data = p.read_bytes()
    assert len(data) == entry["size"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    assert entry["size"] <= MAX_TRACE_BYTES, f"{entry['path']} is {entry['size']} bytes (> 1.5 MB)"
    doc = load(entry["path"])
    assert GT_KEY in doc, "ground truth missing from the trace itself"
    gt = gt_of(doc)
    assert gt == entry["ground_truth"], "ground truth inside the trace differs from the manifest"
    for f in GT_FIELDS:
        assert f in gt, f"ground truth lacks {f}"
    assert gt["fault_id"] in MANIFEST["fault_ids"]
    assert gt["variant"] in ("planted", "fixed")
    assert gt["fault_present"] is (gt["variant"] == "planted")
    assert gt["twin"] == f"{gt['scenario']}/{'fixed' if gt['variant'] == 'planted' else 'planted'}"
    # the profiler flags recorded in the ground truth agree with torch's own trace metadata
    prof = gt["profiler"]
    for flag in ("with_stack", "profile_memory", "record_shapes"):
        assert (str(doc.get(flag)) == "1") is bool(prof[flag]), flag
    if gt.get("world_size"):
        di = doc["distributedInfo"]
        assert di["rank"] == gt["rank"] and di["world_size"] == gt["world_size"] and di["backend"] == "gloo"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["path"] for e in ENTRIES])
def test_ops_csv_is_same_window(entry):
    assert entry["ops_csv"], "key_averages CSV missing"
    p = GOLDEN / entry["ops_csv"]
    data = p.read_bytes()
    assert len(data) == entry["ops_csv_size"]
    assert hashlib.sha256(data).hexdigest() == entry["ops_csv_sha256"]
    rows = list(csv.reader(data.decode().splitlines()))
    assert rows[0] == CSV_HEADER
    body = {r[0]: r for r in rows[1:]}
    assert len(body) == len(rows) - 1, "duplicate keys in key_averages CSV"
    for r in rows[1:]:
        int(r[1]), float(r[2]), float(r[3]), float(r[4]), float(r[5])
    t = Trace(load(entry["path"]))
    # key_averages folds ProfilerStep#N into "ProfilerStep*": same number of steps as the trace
    if t.steps:
        assert int(body["ProfilerStep*"][1]) == len(t.steps)
    else:
        assert "ProfilerStep*" not in body
    # every cpu_op name has the same count in the table and in the trace (after torch's duplicate-node
    # folding, see key_averages_counts): the CSV describes exactly the trace's active window
    expected = key_averages_counts(t)
    mismatched = {n: (expected[n], int(body[n][1]) if n in body else None) for n in expected
                  if n in body and int(body[n][1]) != expected[n] or n not in body}
    assert not mismatched, f"trace vs key_averages counts differ: {dict(list(mismatched.items())[:5])}"


def key_averages_counts(t: Trace) -> Counter:
    """cpu_op counts as torch's key_averages() reports them.

    torch (EventList._remove_dup_nodes) drops an event whose CPU parent has the same name and no
    other child (e.g. aten::add_ redispatching to aten::add_); the parent keeps the name.
    """
    by_thread = defaultdict(list)
    for e in t.x:
        if e.get("cat") in ("cpu_op", "user_annotation", "python_function"):
            by_thread[(e["pid"], e["tid"])].append(e)
    dropped = set()
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        parent = {}
        children = defaultdict(list)
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < e["ts"] + e["dur"] - 0.001:
                stack.pop()
            if stack:
                parent[id(e)] = stack[-1]
                children[id(stack[-1])].append(e)
            stack.append(e)
        for e in evs:
            p = parent.get(id(e))
            if p is not None and p["name"] == e["name"] and len(children[id(p)]) == 1:
                dropped.add(id(e))
    return Counter(e["name"] for e in t.x if e.get("cat") == "cpu_op" and id(e) not in dropped)


def test_every_fault_has_planted_and_fixed():
    by_fault = defaultdict(lambda: defaultdict(set))
    for e in ENTRIES:
        gt = e["ground_truth"]
        by_fault[gt["fault_id"]][gt["scenario"]].add(gt["variant"])
    skipped = {s["fault_id"]: s for s in MANIFEST["skipped"]}
    for fid in MANIFEST["fault_ids"]:
        if fid in by_fault:
            for scenario, variants in by_fault[fid].items():
                assert variants == {"planted", "fixed"}, (fid, scenario, variants)
        else:
            assert fid in skipped and skipped[fid]["reason"], f"{fid} neither recorded nor skipped with a reason"
    # multi-rank jobs: both twins have the same set of ranks
    for scenario in {e["ground_truth"]["scenario"] for e in ENTRIES if e["ground_truth"].get("world_size")}:
        rk = {v: sorted(e["ground_truth"]["rank"] for e in entries_for(scenario, v)) for v in ("planted", "fixed")}
        ws = entries_for(scenario, "planted")[0]["ground_truth"]["world_size"]
        assert rk["planted"] == rk["fixed"] == list(range(ws))


def test_size_budget():
    total = sum(p.stat().st_size for p in GOLDEN.rglob("*") if p.is_file())
    assert total <= MAX_GOLDEN_BYTES, f"golden/ is {total} bytes"
    for e in ENTRIES:
        assert e["size"] <= MAX_TRACE_BYTES


# ----------------------------------------------------------------------------- fault signals


def test_sync_item_signal(tag):
    planted, fixed = trace("sync_item", "planted", tag=tag), trace("sync_item", "fixed", tag=tag)
    for name in ("aten::item", "aten::_local_scalar_dense"):
        assert all(len(s) >= 1 for s in planted.per_step(name=name)), f"{name} missing from a planted step"
        assert fixed.count(name) == 0, f"fixed twin still has {name}"


def test_input_bound_signal(tag):
    planted, fixed = trace("input_bound", "planted", tag=tag), trace("input_bound", "fixed", tag=tag)

    def shares(t: Trace, name: str) -> list[float]:
        out = []
        for s in t.steps:
            nxt = t.in_step(s, name=name)
            assert len(nxt) == 1, f"expected one {name} per step"
            out.append(nxt[0]["dur"] / s["dur"])
        return out

    p = shares(planted, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    f = shares(fixed, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
    assert min(p) >= 0.4, f"planted DataLoader share per step {p}"
    assert statistics.median(f) <= statistics.median(p) / 2, (p, f)
    # the per-sample decode runs inside the planted __next__ and not at all in the fixed main process
    for s in planted.steps:
        (nxt,) = planted.in_step(s, name="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
        assert any(contained(c, nxt) for c in planted.in_step(s, name="aten::conv2d"))
    assert fixed.count("aten::conv2d") == 0


def test_op_storm_signal(tag):
    planted, fixed = trace("op_storm", "planted", tag=tag), trace("op_storm", "fixed", tag=tag)
    p_ops = [len(s) for s in planted.per_step(cat="cpu_op")]
    f_ops = [len(s) for s in fixed.per_step(cat="cpu_op")]
    assert min(p_ops) >= 500, p_ops
    assert min(p_ops) >= 10 * max(f_ops), (p_ops, f_ops)
    durs = [e["dur"] for s in planted.per_step(cat="cpu_op") for e in s]
    assert statistics.median(durs) < 50, "planted ops are not tiny"
    assert all(s for s in fixed.per_step(pred=lambda e: e["name"].startswith("Torch-Compiled Region")))


def _addmm_dtypes(t: Trace, s: dict) -> list[str]:
    return [e["args"]["Input type"][1] for e in t.in_step(s, name="aten::addmm")]


def test_dtype_casts_signal(tag):
    planted, fixed = trace("dtype_casts", "planted", tag=tag), trace("dtype_casts", "fixed", tag=tag)
    for s in planted.steps:
        d = _addmm_dtypes(planted, s)
        assert "float" in d and "c10::BFloat16" in d, f"planted step lacks fp32 GEMM next to bf16: {d}"
        # an up-cast bf16 -> fp32 (dtype code 6) feeds the excluded submodule
        ups = planted.in_step(
            s,
            name="aten::_to_copy",
            pred=lambda e: e["args"]["Input type"][0] == "c10::BFloat16" and e["args"]["Concrete Inputs"][1] == "6",
        )
        assert ups, "no bf16->fp32 aten::_to_copy in planted step"
    for s in fixed.steps:
        d = _addmm_dtypes(fixed, s)
        assert d and set(d) == {"c10::BFloat16"}, f"fixed twin has non-bf16 GEMM: {d}"


PER_PARAM_OPS = {"aten::add_", "aten::mul_", "aten::lerp_", "aten::addcmul_", "aten::sqrt", "aten::div_", "aten::addcdiv_", "aten::add", "aten::div"}


def _optimizer_per_param_ops(t: Trace, step_name: str = "Optimizer.step#Adam.step") -> list[int]:
    out = []
    for s in t.steps:
        (opt,) = t.in_step(s, name=step_name)
        batched = [e for e in t.in_step(s) if e["name"].startswith(("aten::_foreach_", "aten::_fused_"))]
        n = 0
        for e in t.in_step(s, cat="cpu_op"):
            if e["name"] in PER_PARAM_OPS and contained(e, opt) and not any(contained(e, b) for b in batched):
                n += 1
        out.append(n)
    return out


def test_optimizer_signal(tag):
    planted, fixed = trace("optimizer_foreach", "planted", tag=tag), trace("optimizer_foreach", "fixed", tag=tag)
    n_params = entries_for("optimizer_foreach", "planted", tag)[0]["ground_truth"]["n_param_tensors"]
    p, f = _optimizer_per_param_ops(planted), _optimizer_per_param_ops(fixed)
    assert min(p) >= 5 * n_params, f"planted per-param optimizer ops per step {p} (params {n_params})"
    assert max(f) <= 10, f"fixed twin still has per-param optimizer ops {f}"
    assert all(len(s) == 1 for s in fixed.per_step(name="aten::_fused_adam_"))
    assert planted.count("aten::_fused_adam_") == 0


def _recompute_in_backward(t: Trace) -> list[int]:
    out = []
    for s in t.steps:
        bw = t.in_step(s, pred=lambda e: e["name"].startswith("autograd::engine::evaluate_function"))
        assert bw, "no backward in step"
        fwd = t.in_step(s, name="aten::addmm") + t.in_step(s, name="aten::gelu")
        out.append(sum(1 for e in fwd if any(contained(e, b) for b in bw)))
    return out


@pytest.mark.parametrize("scenario", ["checkpoint", "checkpoint_nostack"])
def test_checkpoint_signal(scenario):
    planted, fixed = trace(scenario, "planted"), trace(scenario, "fixed")
    n_blocks = entries_for(scenario, "planted")[0]["ground_truth"]["n_blocks"]
    p, f = _recompute_in_backward(planted), _recompute_in_backward(fixed)
    assert min(p) >= 3 * n_blocks, f"planted: forward ops (2 addmm + gelu per block) inside backward {p}"
    assert max(f) == 0, f"fixed twin recomputes forward in backward {f}"
    with_stack = scenario == "checkpoint"
    for t in (planted, fixed):
        has_py = any(e.get("cat") == "python_function" for e in t.x)
        assert has_py is with_stack
    if with_stack:
        assert any("utils/checkpoint.py" in e["name"] for e in planted.x if e.get("cat") == "python_function")
        assert not any("utils/checkpoint.py" in e["name"] for e in fixed.x if e.get("cat") == "python_function")


def test_gc_stall_signal(tag):
    planted, fixed = trace("gc_stall", "planted", tag=tag), trace("gc_stall", "fixed", tag=tag)
    for e in entries_for("gc_stall", "planted", tag) + entries_for("gc_stall", "fixed", tag):
        assert e["ground_truth"]["profiler"]["record_python_gc_info"] is True  # absence in the twin is meaningful
    per_step = planted.per_step(name="Python GC")
    assert all(per_step), "a planted step has no Python GC event"
    gc_total = sum(e["dur"] for s in per_step for e in s)
    assert gc_total >= 0.10 * sum(planted.step_durs()), "GC is not a visible share of the planted steps"
    assert max(e["dur"] for s in per_step for e in s) >= 20_000, "no full-collection stall (>= 20 ms)"
    assert fixed.count("Python GC") == 0


def _per_step_sums(t: Trace, name: str) -> list[float]:
    return [sum(e["dur"] for e in s) for s in t.per_step(name=name)]


def test_straggler_signal(tag):
    # 4 ranks share 2 CPU cores here, so wall-clock op times are inflated by contention at random;
    # the per-rank *minimum* per-step compute time is the contention-free estimate of each rank's work.
    planted, fixed = ranks("straggler", "planted", tag=tag), ranks("straggler", "fixed", tag=tag)
    gt = entries_for("straggler", "planted", tag)[0]["ground_truth"]
    sr = gt["straggler_rank"]
    assert len(planted) == len(fixed) == 4
    for t in planted + fixed:
        assert len(t.steps) >= 8
    # structure: the straggler issues more compute ops per step (the planted data imbalance)
    mm_counts = [{len(s) for s in t.per_step(name="aten::mm")} for t in planted]
    assert all(len(c) == 1 for c in mm_counts)
    assert min(mm_counts[sr]) >= 3 * max(max(c) for r, c in enumerate(mm_counts) if r != sr)
    assert len({len(s) for t in fixed for s in t.per_step(name="aten::mm")}) == 1
    # timing: the straggler's compute is longest, and the other ranks wait longer in the collective
    p_mm = [min(_per_step_sums(t, "aten::mm")) for t in planted]
    assert p_mm[sr] >= 3 * max(v for r, v in enumerate(p_mm) if r != sr), p_mm
    p_wait = [statistics.median(_per_step_sums(t, "gloo:all_reduce")) for t in planted]
    assert all(p_wait[r] > p_wait[sr] for r in range(len(planted)) if r != sr), p_wait
    f_mm = [min(_per_step_sums(t, "aten::mm")) for t in fixed]
    assert max(f_mm) < 1.5 * min(f_mm), f_mm


def test_ddp_allreduce_signal(tag):
    for variant in ("planted", "fixed"):
        for t in ranks("ddp_allreduce", variant, tag=tag):
            for s in t.steps:
                bw = t.in_step(s, pred=lambda e: e["name"].startswith("autograd::engine::evaluate_function"))
                bw_end = max(e["ts"] + e["dur"] for e in bw)
                ar = t.in_step(s, name="c10d::allreduce_")
                assert ar, "no all-reduce in step"
                before = [e for e in ar if e["ts"] < bw_end]
                if variant == "planted":
                    assert not before and len(ar) == 1, "planted all-reduce overlaps backward"
                else:
                    assert len(before) >= 2, "fixed twin's buckets are not reduced during backward"


MB = 1 << 20


def _big_allocs(t: Trace, s: dict, at_least: int = MB) -> list[int]:
    return [
        e["args"]["Bytes"]
        for e in t.instants
        if e.get("name") == "[memory]" and Trace._inside(e, s) and e["args"]["Bytes"] >= at_least
    ]


def test_memory_churn_signal(tag):
    planted, fixed = trace("memory_churn", "planted", tag=tag), trace("memory_churn", "fixed", tag=tag)
    sizes = set()
    for s in planted.steps:
        b = _big_allocs(planted, s)
        assert len(b) >= 8, f"planted step has only {len(b)} allocations >= 1 MB"
        sizes |= set(b)
    assert len(sizes) >= 5, f"planted allocation sizes do not vary: {sorted(sizes)}"
    for s in fixed.steps:
        assert _big_allocs(fixed, s) == [], "fixed twin allocates >= 1 MB inside a step"


def test_schedule_cold_signal(tag):
    planted, fixed = trace("schedule_cold", "planted", tag=tag), trace("schedule_cold", "fixed", tag=tag)
    assert planted.steps[0]["name"] == "ProfilerStep#0"
    assert fixed.steps[0]["name"] == "ProfilerStep#4"
    zl = [len(s) for s in planted.per_step(name="aten::zeros_like")]
    assert zl[0] >= 12 and all(n == 0 for n in zl[1:]), f"one-time optimizer state init not only in step 0: {zl}"
    d = planted.step_durs()
    assert d[0] >= 1.3 * min(d[1:]), f"cold first step not wider: {d}"
    assert fixed.count("aten::zeros_like") == 0


def test_record_function_signal(tag):
    planted, fixed = trace("record_function", "planted", tag=tag), trace("record_function", "fixed", tag=tag)
    phases = entries_for("record_function", "fixed", tag)[0]["ground_truth"]["phases"]
    for s in fixed.steps:
        names = {e["name"] for e in fixed.in_step(s, cat="user_annotation")}
        assert set(phases) <= names, f"fixed step missing phases: {set(phases) - names}"
    assert not any(e["name"].startswith("phase:") for e in planted.x)


def test_with_stack_overhead_signal(tag):
    planted, fixed = trace("with_stack_overhead", "planted", tag=tag), trace("with_stack_overhead", "fixed", tag=tag)
    assert all(len(s) >= 1000 for s in planted.per_step(cat="python_function"))
    assert not any(e.get("cat") == "python_function" for e in fixed.x)
    # min over steps: the least contention-disturbed estimate of the step cost on a shared machine
    assert min(planted.step_durs()) >= 1.5 * min(fixed.step_durs())


def _regions(t: Trace, s: dict) -> list[str]:
    return [e["name"] for e in t.in_step(s, pred=lambda e: e["name"].startswith("Torch-Compiled Region"))]


def test_compile_graph_break_signal(tag):
    planted, fixed = trace("compile_graph_break", "planted", tag=tag), trace("compile_graph_break", "fixed", tag=tag)
    calls = entries_for("compile_graph_break", "planted", tag)[0]["ground_truth"]["compiled_calls_per_step"]
    for s in planted.steps:
        r = _regions(planted, s)
        assert len(r) == 2 * calls and len(set(r)) == 2, r
    for s in fixed.steps:
        r = _regions(fixed, s)
        assert len(r) == calls and len(set(r)) == 1, r


def test_guide_matmul_size_signal(tag):
    planted, fixed = trace("guide_matmul_size", "planted", tag=tag), trace("guide_matmul_size", "fixed", tag=tag)
    for s in planted.steps:
        mm = planted.in_step(s, name="aten::mm")
        assert len(mm) == 200 and statistics.median(e["dur"] for e in mm) < 50
    for s in fixed.steps:
        mm = fixed.in_step(s, name="aten::mm")
        assert len(mm) == 3 and statistics.median(e["dur"] for e in mm) >= 1000


def test_guide_compile_addmm_signal(tag):
    planted, fixed = trace("guide_compile_addmm", "planted", tag=tag), trace("guide_compile_addmm", "fixed", tag=tag)
    calls = entries_for("guide_compile_addmm", "planted", tag)[0]["ground_truth"]["calls_per_step"]
    for s in planted.steps:
        assert len(planted.in_step(s, name="aten::mm")) == calls
        assert len(planted.in_step(s, name="aten::add")) == calls
        assert not planted.in_step(s, name="aten::addmm")
    for s in fixed.steps:
        regions = fixed.in_step(s, pred=lambda e: e["name"].startswith("Torch-Compiled Region"))
        addmm = fixed.in_step(s, name="aten::addmm")
        assert len(regions) == len(addmm) == calls
        assert all(any(contained(a, r) for r in regions) for a in addmm)
        assert not fixed.in_step(s, name="aten::add")


def _inside_any(e: dict, ranges: list[dict]) -> bool:
    return any(contained(e, r) for r in ranges)


def test_no_schedule_item_signal(tag):
    planted, fixed = trace("no_schedule_item", "planted", tag=tag), trace("no_schedule_item", "fixed", tag=tag)
    gt = entries_for("no_schedule_item", "planted", tag)[0]["ground_truth"]
    n = gt["iterations"]
    for t in (planted, fixed):
        assert t.steps == [] and gt_of(t.doc)["profiler"]["schedule"] is None
        # the iterations are visible only as repeating markers
        for marker in gt["iteration_markers"]:
            assert t.count(marker) == n, (marker, t.count(marker))
    # one host read per iteration: exactly one aten::item between consecutive `## forward ##` starts
    fwd = sorted(e["ts"] for e in planted.x if e["name"] == "## forward ##")
    bounds = fwd + [float("inf")]
    items = [e["ts"] for e in planted.x if e["name"] == "aten::item"]
    assert [sum(lo <= ts < hi for ts in items) for lo, hi in zip(bounds, bounds[1:])] == [1] * n
    assert planted.count("aten::_local_scalar_dense") == n
    assert fixed.count("aten::item") == fixed.count("aten::_local_scalar_dense") == 0


def _tensor_inputs_of_dtype(e: dict, dtype: str) -> list:
    """Input dims of the inputs of `dtype` that are real tensors (>= 1 dim): 0-dim ones are wrapped Python scalars."""
    args = e.get("args") or {}
    types, dims = args.get("Input type") or [], args.get("Input Dims") or []
    return [d for t, d in zip(types, dims) if t == dtype and d]


def test_fp64_cast_leak_signal(tag):
    planted, fixed = trace("fp64_cast_leak", "planted", tag=tag), trace("fp64_cast_leak", "fixed", tag=tag)
    for s in planted.steps:
        leaked = [e for e in planted.in_step(s, cat="cpu_op") if _tensor_inputs_of_dtype(e, "double")]
        names = {e["name"] for e in leaked}
        assert {"aten::mul", "aten::_to_copy"} <= names, f"planted step lacks the double mul + cast back: {names}"
        assert [128, 512] in [d for e in leaked for d in _tensor_inputs_of_dtype(e, "double")]
    for t in (planted, fixed):  # a pure fp32 run: no low precision anywhere, so it is not an autocast mix
        types = {ty for e in t.x for ty in (e.get("args") or {}).get("Input type") or []}
        assert not types & {"c10::BFloat16", "c10::Half"}, types
    assert not [e for e in fixed.x if e.get("cat") == "cpu_op" and _tensor_inputs_of_dtype(e, "double")]
    # the twin's only double inputs are 0-dim wrapped scalars: a detector must not count those
    assert any("double" in ((e.get("args") or {}).get("Input type") or []) for e in fixed.x)


def _eager_island_ops(t: Trace, s: dict) -> list[dict]:
    regions = t.in_step(s, pred=lambda e: e["name"].startswith("Torch-Compiled Region"))
    graphs = t.in_step(s, pred=lambda e: e["name"].startswith("## Call CompiledFxGraph"))
    return [e for e in t.in_step(s, cat="cpu_op") if e["name"] in ("aten::gelu", "aten::mul", "aten::add")
            and _inside_any(e, regions) and not _inside_any(e, graphs)]


def test_compile_eager_island_signal(tag):
    planted, fixed = trace("compile_eager_island", "planted", tag=tag), trace("compile_eager_island", "fixed", tag=tag)
    gt = entries_for("compile_eager_island", "planted", tag)[0]["ground_truth"]
    calls, per_call = gt["compiled_calls_per_step"], gt["eager_island_ops_per_call"]
    for s in planted.steps:
        assert len(_eager_island_ops(planted, s)) == calls * per_call
        assert len(planted.in_step(s, pred=lambda e: e["name"].startswith("## Call CompiledFxGraph"))) == 2 * calls
    for s in fixed.steps:
        assert _eager_island_ops(fixed, s) == []
        assert len(fixed.in_step(s, pred=lambda e: e["name"].startswith("## Call CompiledFxGraph"))) == calls
        assert not fixed.in_step(s, name="aten::gelu")  # all compute is inside the compiled graph


def test_gc_not_cold_signal(tag):
    planted, fixed = trace("gc_not_cold", "planted", tag=tag), trace("gc_not_cold", "fixed", tag=tag)
    for variant in ("planted", "fixed"):
        gt = entries_for("gc_not_cold", variant, tag)[0]["ground_truth"]
        assert gt["profiler"]["record_python_gc_info"] is True and gt["cold_step"] is False
        assert gt["profiler"]["schedule"]["wait"] + gt["profiler"]["schedule"]["warmup"] >= 4  # warm before step 4
    assert planted.steps[0]["name"] == f"ProfilerStep#{entries_for('gc_not_cold', 'planted', tag)[0]['ground_truth']['gc_step']}"
    d = planted.step_durs()
    assert d[0] >= 5 * max(d[1:]), f"the GC step is not the wide one: {d}"
    gc_per_step = planted.per_step(name="Python GC")
    assert len(gc_per_step[0]) >= 1 and all(not g for g in gc_per_step[1:]), "GC not only in the first step"
    # the excess of the wide step is the collection itself, not first-iteration work
    assert max(e["dur"] for e in gc_per_step[0]) >= 0.8 * (d[0] - statistics.median(d[1:]))
    assert fixed.count("Python GC") == 0
    f = fixed.step_durs()
    assert max(f) < 2 * min(f), f"the twin's steps are not even: {f}"


def test_with_stack_python_loop_signal(tag):
    planted, fixed = trace("with_stack_python_loop", "planted", tag=tag), trace("with_stack_python_loop", "fixed", tag=tag)
    gt = entries_for("with_stack_python_loop", "planted", tag)[0]["ground_truth"]
    calls = gt["python_calls_per_step"]
    for s in planted.steps:
        frames = planted.in_step(s, cat="python_function")
        scorer = [e for e in frames if "with_stack_python_loop.py" in e["name"] and e["name"].endswith((": score", ": rule"))]
        assert len(scorer) == calls, (len(scorer), calls)
    assert not any(e.get("cat") == "python_function" for e in fixed.x)
    assert min(planted.step_durs()) >= 1.5 * min(fixed.step_durs())
    # the recorded cost per traced Python call: the (least contended) step difference over the frame count
    frames = len(planted.in_step(planted.steps[0], cat="python_function"))
    per_frame_us = (min(planted.step_durs()) - min(fixed.step_durs())) / frames
    assert 0.3 <= per_frame_us <= 20, per_frame_us
    for variant in ("planted", "fixed"):
        assert entries_for("with_stack_python_loop", variant, tag)[0]["ground_truth"]["unprofiled_step_ms"] > 0



def _outside(e: dict, ranges: list[dict]) -> bool:
    return not any(contained(e, r) for r in ranges)


def test_item_print_loop_signal(tag):
    planted, fixed = trace("item_print_loop", "planted", tag=tag), trace("item_print_loop", "fixed", tag=tag)
    for t, want in ((planted, 1), (fixed, 0)):
        for s in t.steps:
            # AdamW(foreach=False) reads its CPU step counters with .item() inside the optimizer in both twins
            # (no device sync on any device: the counters live on the host); the planted read is the one outside
            opt = t.in_step(s, name="Optimizer.step#AdamW.step")
            assert len(opt) == 1
            items = [e for e in t.in_step(s, name="aten::item") if _outside(e, opt)]
            assert len(items) == want, (s["name"], len(items))
            assert all(e["ts"] >= opt[0]["ts"] + opt[0]["dur"] for e in items), "the loss read follows the step"
    # the same loop otherwise: clip_grad_norm_ and the DataLoader are in every step of both twins
    for t in (planted, fixed):
        assert all(t.per_step(name="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"))
        assert all(t.per_step(pred=lambda e: e["name"].startswith("aten::linalg_vector_norm")))


def test_autocast_excluded_attention_signal(tag):
    planted, fixed = trace("autocast_excluded_attention", "planted", tag=tag), trace("autocast_excluded_attention", "fixed", tag=tag)
    n_blocks = entries_for("autocast_excluded_attention", "planted", tag)[0]["ground_truth"]["n_blocks"]
    for s in planted.steps:
        d = _addmm_dtypes(planted, s)
        # forward: qkv + out projection per block in fp32, the 2 MLP linears in bf16
        assert d.count("float") == 2 * n_blocks and d.count("c10::BFloat16") == 2 * n_blocks, d
        ups = planted.in_step(s, name="aten::_to_copy", pred=lambda e: e["args"]["Input type"][0] == "c10::BFloat16"
                              and e["args"]["Concrete Inputs"][1] == "6")
        assert len(ups) >= n_blocks, "no bf16->fp32 cast into each excluded attention"
        bmm = [e["args"]["Input type"][0] for e in planted.in_step(s, name="aten::bmm")]
        assert bmm and "c10::BFloat16" not in bmm, bmm
    for s in fixed.steps:
        d = _addmm_dtypes(fixed, s)
        assert len(d) == 4 * n_blocks and set(d) == {"c10::BFloat16"}, d
        assert {e["args"]["Input type"][0] for e in fixed.in_step(s, name="aten::bmm")} == {"c10::BFloat16"}


def _first_linear_len(t: Trace, s: dict) -> int:
    """The sequence length of the step's batch: the first aten::linear's input is [batch, length, d]."""
    first = min(t.in_step(s, name="aten::linear"), key=lambda e: e["ts"])
    return first["args"]["Input Dims"][0][1]


def test_varlen_gloo_signal(tag):
    planted, fixed = ranks("varlen_gloo", "planted", tag=tag), ranks("varlen_gloo", "fixed", tag=tag)
    for variant, traces in (("planted", planted), ("fixed", fixed)):
        gts = [e["ground_truth"] for e in entries_for("varlen_gloo", variant, tag)]
        assert len(traces) == 2
        for t, gt in zip(traces, gts):
            assert [_first_linear_len(t, s) for s in t.steps] == gt["active_seq_lens"]  # record_shapes shows it
        a, b = (gt["active_seq_lens"] for gt in gts)
        if variant == "fixed":
            assert a == b
            continue
        assert sum(x != y for x, y in zip(a, b)) >= len(a) - 1, (a, b)
        # the rank with the shorter sequence waits in the gradient all-reduce: summed over the steps where
        # the lengths differ at least 2x, the shorter rank's all-reduce time exceeds the longer rank's
        waits = [_per_step_sums(t, "c10d::allreduce_") for t in traces]
        short_minus_long = 0.0
        for i, (x, y) in enumerate(zip(a, b)):
            if max(x, y) >= 2 * min(x, y):
                short, long_ = (0, 1) if x < y else (1, 0)
                short_minus_long += waits[short][i] - waits[long_][i]
        assert short_minus_long > 0, (a, b, waits)


def test_foreach_off_many_params_signal(tag):
    planted, fixed = trace("foreach_off_many_params", "planted", tag=tag), trace("foreach_off_many_params", "fixed", tag=tag)
    n_params = entries_for("foreach_off_many_params", "planted", tag)[0]["ground_truth"]["n_param_tensors"]
    assert n_params >= 200
    p = _optimizer_per_param_ops(planted, "Optimizer.step#AdamW.step")
    f = _optimizer_per_param_ops(fixed, "Optimizer.step#AdamW.step")
    assert min(p) >= 5 * n_params, f"planted per-param optimizer ops per step {p} (params {n_params})"
    assert max(f) <= 10, f"fixed twin still has per-param optimizer ops {f}"
    assert all(len(s) == 1 for s in fixed.per_step(name="aten::_fused_adamw_"))
    assert planted.count("aten::_fused_adamw_") == 0


def test_inference_requests_signal(tag):
    planted, fixed = trace("inference_requests", "planted", tag=tag), trace("inference_requests", "fixed", tag=tag)
    gt = entries_for("inference_requests", "planted", tag)[0]["ground_truth"]
    (marker,) = gt["iteration_markers"]
    ops = {}
    for variant, t in (("planted", planted), ("fixed", fixed)):
        assert t.steps == [] and gt_of(t.doc)["profiler"]["schedule"] is None
        requests = [e for e in t.x if e["name"] == marker]
        assert len(requests) == gt["iterations"] and all(e["cat"] == "user_annotation" for e in requests)
        ops[variant] = [len(_top_level_ops(t, r)) for r in requests]
    assert min(ops["planted"]) >= 3 * max(ops["fixed"]), ops  # ops the model issues (their callees not counted)
    durs = [e["dur"] for e in planted.x if e.get("cat") == "cpu_op"]
    assert statistics.median(durs) < 50, "planted ops are not tiny"


_NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _union_us(evs: list[dict]) -> float:
    total, end = 0.0, float("-inf")
    for e in sorted(evs, key=lambda e: e["ts"]):
        lo, hi = max(e["ts"], end), e["ts"] + e["dur"]
        if hi > lo:
            total += hi - lo
        end = max(end, hi)
    return total


def test_collate_heavy_python_signal(tag):
    planted, fixed = trace("collate_heavy_python", "planted", tag=tag), trace("collate_heavy_python", "fixed", tag=tag)
    shares = {}
    for variant, t in (("planted", planted), ("fixed", fixed)):
        shares[variant] = []
        for s in t.steps:
            (nxt,) = t.in_step(s, name=_NEXT)
            shares[variant].append(nxt["dur"] / s["dur"])
            if variant == "planted":  # the collate is Python: ATen ops cover little of the __next__
                aten = [e for e in t.in_step(s, cat="cpu_op") if contained(e, nxt)]
                assert _union_us(aten) < 0.3 * nxt["dur"], (_union_us(aten), nxt["dur"])
    # medians: one step of three can be stretched by another process on a shared machine
    assert statistics.median(shares["planted"]) >= 0.25, shares
    assert statistics.median(shares["fixed"]) <= statistics.median(shares["planted"]) / 4, shares


def test_random_batch_memory_signal(tag):
    planted, fixed = trace("random_batch_memory", "planted", tag=tag), trace("random_batch_memory", "fixed", tag=tag)
    gt = entries_for("random_batch_memory", "planted", tag)[0]["ground_truth"]
    p = [sorted(_big_allocs(planted, s, 64 << 10)) for s in planted.steps]
    f = [sorted(_big_allocs(fixed, s, 64 << 10)) for s in fixed.steps]
    assert all(p) and all(f), "a step allocates nothing >= 64 KB"
    sizes = gt["active_batch_sizes"]
    assert len(set(sizes)) == len(sizes)
    assert all(a != b for a, b in zip(p, p[1:])), "planted steps allocate the same sizes"
    # activations of batch x 2048 and batch x 512 floats: two new sizes per new batch size
    assert len({x for s in p for x in s}) >= len(set(f[0])) + 2 * (len(sizes) - 1), "planted sizes do not vary"
    assert all(s == f[0] for s in f), "the fixed twin's allocation sizes change between steps"


def _top_level_ops(t: Trace, s: dict) -> list[dict]:
    ops = t.in_step(s, cat="cpu_op")
    return [e for e in ops if not any(o is not e and contained(e, o) for o in ops)]


def test_matmul_tiny_vs_big_signal(tag):
    planted, fixed = trace("matmul_tiny_vs_big", "planted", tag=tag), trace("matmul_tiny_vs_big", "fixed", tag=tag)
    reps = {v: entries_for("matmul_tiny_vs_big", v, tag)[0]["ground_truth"]["matmuls_per_step"] for v in ("planted", "fixed")}
    aten_share = []
    for s in planted.steps:
        mm = planted.in_step(s, name="aten::mm")
        assert len(mm) == reps["planted"] and statistics.median(e["dur"] for e in mm) < 20
        aten_share.append(_union_us(_top_level_ops(planted, s)) / s["dur"])
    # median: one step of three can be stretched by another process on a shared machine
    assert statistics.median(aten_share) < 0.6, f"planted steps are not mostly outside ATen: {aten_share}"
    for s in fixed.steps:
        mm = fixed.in_step(s, name="aten::mm")
        assert len(mm) == reps["fixed"] and min(e["dur"] for e in mm) >= 1000
        assert _union_us(_top_level_ops(fixed, s)) >= 0.9 * s["dur"], "fixed step is not ATen compute"


def test_cuda_only_scenarios_are_skipped_with_reason_on_cpu():
    cpu_only = all(e["ground_truth"]["device"] == "cpu" for e in ENTRIES)
    names = {s["scenario"] for s in MANIFEST["skipped"]}
    if cpu_only:
        assert "cuda_graphs" in names
    for s in MANIFEST["skipped"]:
        assert s["reason"] and s["fault_id"] in MANIFEST["fault_ids"]
