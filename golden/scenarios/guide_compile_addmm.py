"""Beginner guide pair: eager ``x @ w + b`` (aten::mm + aten::add) vs compiled (aten::addmm in a compiled region)."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="guide_compile_addmm",
    fault_id="guide.compile_addmm_fusion",
    title="torch.add(torch.matmul(x, w), b) called 20x per step",
    knob="torch.compile around f(x, w, b) = x @ w + b",
    planted="eager: aten::matmul -> aten::mm then aten::add per call",
    fixed="torch.compile(f): TorchDynamo Cache Lookup -> Torch-Compiled Region -> CompiledFxGraph -> aten::addmm",
    signal="aten::mm + aten::add pairs per call and no aten::addmm; the twin has aten::addmm inside a "
    "'Torch-Compiled Region' per call and no eager aten::add",
)

CALLS_PER_STEP = 20


def run(variant: str, ctx: Ctx) -> None:
    import torch

    seed_everything()
    dev = ctx.device

    def f(x, w, b):
        return x @ w + b

    fn = f if variant == "planted" else torch.compile(f)
    x = torch.randn(256, 256, device=dev)
    w = torch.randn(256, 256, device=dev)
    b = torch.randn(256, device=dev)
    fn(x, w, b)

    def step(i: int) -> None:
        for _ in range(CALLS_PER_STEP):
            fn(x, w, b)

    profiled_loop(ctx, step, extra_gt={"calls_per_step": CALLS_PER_STEP})
