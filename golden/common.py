"""Shared recording harness for the golden scenarios.

Every scenario variant runs its training-ish loop through :func:`profiled_loop`, which

* profiles CPU (+ CUDA when available) with a ``torch.profiler.schedule``,
* puts the ground truth into the trace itself (top-level key ``kineto_sql_ground_truth``),
* writes the trace gzipped and torch's own ``key_averages()`` table as CSV from the *same*
  ``on_trace_ready`` callback, so both describe exactly the same active window.

Only this module and the scenario modules import torch; the manifest test does not.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

GROUND_TRUTH_KEY = "kineto_sql_ground_truth"
SCHEMA_VERSION = 1
SEED = 1234

# Stable fault ids (slugs of the fault catalog rows; see golden/README.md).
FAULT_IDS: dict[str, str] = {
    "major.sync_forcing_op": "Sync-forcing op in hot loop (aten::item/_local_scalar_dense per step)",
    "major.input_bound_step": "Input-bound step (wide DataLoader __next__ at step start)",
    "major.eager_small_op_storm": "Eager small-op storm (hundreds of tiny ATen ops per step)",
    "major.unoverlapped_allreduce": "Unoverlapped DDP all-reduce (gradient comm serialized after backward)",
    "major.straggler_rank": "Straggler rank (one rank computes longer, the others wait in the collective)",
    "major.implicit_dtype_casts": "Implicit dtype casts (aten::to/_to_copy around an fp32 GEMM in a bf16 run)",
    "major.optimizer_step_dominance": "Optimizer step dominance (per-parameter aten::add_/mul_ after backward)",
    "major.activation_checkpointing_surprise": "Activation-checkpointing surprise (forward recompute inside backward)",
    "major.memory_churn": "Memory churn (varying large allocations/frees every step)",
    "major.gc_stall": "GC / GIL stall (Python GC pauses inside steps)",
    "minor.profiler_schedule_distortion": "Profiler schedule distortion (active window catches the cold first step)",
    "minor.record_function_absence": "record_function absence (phases unannotated)",
    "minor.with_stack_overhead": "with_stack overhead (timing run captured with Python stacks on)",
    "minor.torch_compile_graph_break": "torch.compile graph break (eager island between compiled regions)",
    "minor.cuda_graph_region": "CUDA-graph region (opaque graph launch instead of per-op kernels)",
    "guide.overhead_bound_small_matmul": "Beginner guide: 64x64 matmul loop is overhead-bound; large matmuls are compute-bound",
    "guide.compile_addmm_fusion": "Beginner guide: eager x @ w + b (mm + add) vs compiled (addmm in a compiled region)",
}

VARIANTS = ("planted", "fixed")
# A third variant some scenarios have: the fix the detector's own advice proposes, where the fixed twin made
# a different one (golden/reruns holds its recordings; the golden set and its manifest never include it).
PROPOSED = "proposed"


@dataclass
class Scenario:
    name: str
    fault_id: str
    title: str
    knob: str  # the one thing that differs between the twins
    planted: str  # what the planted variant does
    fixed: str  # what the fixed twin does
    signal: str  # the raw signal the planted trace carries and the twin lacks
    proposed: str | None = None  # what the `proposed` variant does (the detector's own fix), where it has one
    world_size: int = 1
    needs_cuda: bool = False
    skip_reason_cpu: str | None = None
    run: Callable[..., None] | None = field(default=None, repr=False)


@dataclass
class Ctx:
    scenario: Scenario
    variant: str
    out_dir: Path
    device: str
    rank: int | None = None
    world_size: int | None = None

    @property
    def stem(self) -> Path:
        base = f"{self.scenario.name}_{self.variant}" + (f"_{recording_tag()}" if recording_tag() else "")
        if self.scenario.world_size > 1:
            d = self.out_dir / base
            d.mkdir(parents=True, exist_ok=True)
            return d / f"rank{self.rank}"
        return self.out_dir / base


def recording_tag() -> str | None:
    """``GOLDEN_TAG`` (e.g. ``torch215``): a second recording of the same scenarios with another torch. Its
    files get the tag as a suffix and its ground truth a ``recording_tag`` field, so they sit beside the
    primary recording without being mistaken for it."""
    tag = os.environ.get("GOLDEN_TAG", "").strip()
    return tag or None


def active_steps(default: int) -> int:
    """``GOLDEN_ACTIVE=N`` records N active steps instead of the scenario's own count (before/after pairs for
    step-time medians need more steady steps than a snapshot does); unset, the scenario's own count."""
    value = os.environ.get("GOLDEN_ACTIVE", "").strip()
    return int(value) if value else default


def pick_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def seed_everything(seed: int = SEED, threads: int | None = 1) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if threads is not None:
        torch.set_num_threads(threads)


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def ground_truth(ctx: Ctx, *, profiler: dict[str, Any], extra: dict[str, Any] | None = None) -> dict:
    import torch

    sc = ctx.scenario
    gt: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "scenario": sc.name,
        "fault_id": sc.fault_id,
        "fault": FAULT_IDS[sc.fault_id],
        "variant": ctx.variant,
        "twin": f"{sc.name}/{'fixed' if ctx.variant == 'planted' else 'planted'}",
        "knob": sc.knob,
        "knob_setting": {"planted": sc.planted, PROPOSED: sc.proposed}.get(ctx.variant, sc.fixed),
        "expected_signal": sc.signal,
        "fault_present": ctx.variant == "planted",
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": ctx.device,
        "cuda_device_name": torch.cuda.get_device_name(0) if ctx.device == "cuda" else None,
        "num_threads": torch.get_num_threads(),
        "seed": SEED,
        "profiler": profiler,
        "rank": ctx.rank,
        "world_size": ctx.world_size,
    }
    if recording_tag():
        gt["recording_tag"] = recording_tag()
    if extra:
        gt.update(extra)
    return gt


def write_key_averages_csv(prof, path: Path) -> None:
    rows = []
    for e in prof.key_averages():
        self_dev = getattr(e, "self_device_time_total", None)
        if self_dev is None:
            self_dev = getattr(e, "self_cuda_time_total", 0.0)
        dev = getattr(e, "device_time_total", None)
        if dev is None:
            dev = getattr(e, "cuda_time_total", 0.0)
        rows.append(
            (
                e.key,
                int(e.count),
                float(e.self_cpu_time_total),
                float(e.cpu_time_total),
                float(self_dev),
                float(dev),
            )
        )
    rows.sort(key=lambda r: (-r[2], r[0]))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "key",
                "count",
                "self_cpu_time_total_us",
                "cpu_time_total_us",
                "self_device_time_total_us",
                "device_time_total_us",
            ]
        )
        for r in rows:
            w.writerow([r[0], r[1], f"{r[2]:.3f}", f"{r[3]:.3f}", f"{r[4]:.3f}", f"{r[5]:.3f}"])


def profiled_loop(
    ctx: Ctx,
    step_fn: Callable[[int], None],
    *,
    wait: int = 2,
    warmup: int = 2,
    active: int = 3,
    with_stack: bool = True,
    record_shapes: bool = True,
    profile_memory: bool = True,
    gc_info: bool = False,
    extra_gt: dict[str, Any] | None = None,
    before_step: Callable[[int], None] | None = None,
    use_schedule: bool = True,
) -> Path:
    """Run ``wait + warmup + active`` steps of ``step_fn`` under torch.profiler.

    ``step_fn(i)`` is called for step i, followed by ``prof.step()``. The trace is written to
    ``<stem>.json.gz`` and the key_averages table to ``<stem>.ops.csv`` from on_trace_ready.
    ``use_schedule=False`` is the capture people take without a schedule: ``with profile():`` around
    ``active`` iterations (``wait``/``warmup`` iterations run before it, unprofiled), no ``prof.step()``,
    hence no ProfilerStep#N in the trace.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    active = active_steps(active)
    activities = [ProfilerActivity.CPU]
    if ctx.device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    exp_cfg = None
    if gc_info:
        exp_cfg = torch._C._profiler._ExperimentalConfig(record_python_gc_info=True)

    stem = ctx.stem
    trace_path = Path(str(stem) + ".json.gz")
    csv_path = Path(str(stem) + ".ops.csv")
    for p in (trace_path, csv_path):
        if p.exists():
            p.unlink()

    prof_cfg = {
        "activities": [a.name for a in activities],
        "schedule": {"wait": wait, "warmup": warmup, "active": active, "repeat": 1} if use_schedule else None,
        "record_shapes": record_shapes,
        "profile_memory": profile_memory,
        "with_stack": with_stack,
        "record_python_gc_info": gc_info,
    }
    gt = ground_truth(ctx, profiler=prof_cfg, extra=extra_gt)
    written = []

    def on_ready(p) -> None:
        p.export_chrome_trace(str(trace_path))
        write_key_averages_csv(p, csv_path)
        written.append(trace_path)

    if not use_schedule:
        for i in range(wait + warmup):  # the unprofiled warm-up a schedule would have skipped
            step_fn(i)
            sync(ctx.device)
    prof = profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1) if use_schedule else None,
        on_trace_ready=on_ready,
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        experimental_config=exp_cfg,
    )
    # The ground truth must reach Kineto while a trace is being collected: preset metadata is
    # handed to prof.add_metadata_json() by the profiler itself as soon as tracing starts
    # (warmup), so it lands as a top-level key of the exported trace JSON.
    prof.preset_metadata_json(GROUND_TRUTH_KEY, json.dumps(gt, sort_keys=True))
    n = wait + warmup + active
    with prof:
        for i in range(n) if use_schedule else range(wait + warmup, n):
            if before_step is not None:
                before_step(i)
            step_fn(i)
            sync(ctx.device)
            if use_schedule:
                prof.step()
    if not written:
        raise RuntimeError(f"on_trace_ready never fired for {stem}")
    return trace_path


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")
