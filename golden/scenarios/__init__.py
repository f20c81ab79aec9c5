"""Scenario registry: module names in recording order."""

import importlib

MODULES = [
    "sync_item",
    "input_bound",
    "op_storm",
    "dtype_casts",
    "optimizer_foreach",
    "checkpoint",
    "checkpoint_nostack",
    "gc_stall",
    "straggler",
    "ddp_allreduce",
    "memory_churn",
    "schedule_cold",
    "record_function",
    "with_stack_overhead",
    "compile_graph_break",
    "cuda_graphs",
    "guide_matmul_size",
    "guide_compile_addmm",
    "no_schedule_item",
    "fp64_cast_leak",
    "compile_eager_island",
    "gc_not_cold",
    "with_stack_python_loop",
    "item_print_loop",
    "autocast_excluded_attention",
    "varlen_gloo",
    "foreach_off_many_params",
    "inference_requests",
    "collate_heavy_python",
    "random_batch_memory",
    "matmul_tiny_vs_big",
]


def load(name: str):
    mod = importlib.import_module(f"golden.scenarios.{name}")
    sc = mod.SCENARIO
    sc.run = mod.run
    return sc


def all_scenarios():
    return [load(m) for m in MODULES]
