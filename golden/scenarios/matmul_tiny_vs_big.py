"""Beginner guide (overhead- vs compute-bound) in a loop with Python around it: 400 tiny matmuls per step,
each with Python bookkeeping, vs a loop of a few big matmuls."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="matmul_tiny_vs_big",
    fault_id="guide.overhead_bound_small_matmul",
    title="400 x (16x16 @ 16x16) with Python bookkeeping per step vs 4 x (768x768 @ 768x768)",
    knob="work per matmul (tiny 16x16 vs big 768x768)",
    planted="a Python loop of 400 16x16 matmuls + relu, with per-iteration Python bookkeeping (a running "
    "dict of statistics): the step is Python and dispatch overhead",
    fixed="a loop of 4 768x768 matmuls + relu: the step is ATen compute",
    signal="planted: 400 aten::mm per step, median < 20 us, ATen ops cover < 60% of the step (the rest is "
    "Python between ops); fixed: 4 aten::mm per step, each >= 1 ms, ATen ops cover >= 90% of the step",
)


def run(variant: str, ctx: Ctx) -> None:
    import torch

    seed_everything()
    dev = ctx.device
    n, reps = (16, 400) if variant == "planted" else (768, 4)
    ws = [torch.randn(n, n, device=dev) / n**0.5 for _ in range(4)]
    x0 = torch.randn(n, n, device=dev)

    def step(i: int) -> None:
        h = x0
        stats: dict[str, float] = {}
        for k in range(reps):
            h = torch.relu(h @ ws[k % 4])
            if variant == "planted":  # typical toy-loop bookkeeping in Python
                key = f"layer{k % 8}"
                stats[key] = stats.get(key, 0.0) + sum(j * 0.5 for j in range(150)) / (k + 1)

    profiled_loop(ctx, step, with_stack=False, extra_gt={"matrix_size": n, "matmuls_per_step": reps})
