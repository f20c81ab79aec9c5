"""Beginner guide pair: 64x64 matmul loop (overhead-bound) vs large matmuls (compute-bound)."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="guide_matmul_size",
    fault_id="guide.overhead_bound_small_matmul",
    title="200 chained 64x64 matmuls per step vs 3 chained 1024x1024 matmuls per step",
    knob="matrix size (work per op)",
    planted="64x64 @ 64x64, 200 per step: per-op dispatch overhead dominates each aten::mm",
    fixed="1024x1024 @ 1024x1024, 3 per step: each aten::mm is milliseconds of real compute",
    signal="hundreds of aten::matmul->aten::mm per step with tiny (< 50 us) durations; the twin has a few "
    "aten::mm of >= 1 ms each (on GPU: Self CPU >> Self CUDA vs comparable)",
)


def run(variant: str, ctx: Ctx) -> None:
    import torch

    seed_everything()
    dev = ctx.device
    n, reps = (64, 200) if variant == "planted" else (1024, 3)
    a = torch.randn(n, n, device=dev) / n**0.5
    w = torch.randn(n, n, device=dev) / n**0.5

    def step(i: int) -> None:
        h = a
        for _ in range(reps):
            h = torch.matmul(h, w)

    profiled_loop(ctx, step, extra_gt={"matrix_size": n, "matmuls_per_step": reps})
