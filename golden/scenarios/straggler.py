"""Straggler rank: 4 gloo ranks, one does extra compute every step vs all equal."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

STRAGGLER_RANK = 2
WORLD = 4

SCENARIO = Scenario(
    name="straggler",
    fault_id="major.straggler_rank",
    title="4-rank gloo job where rank 2 gets 6x the compute per step (data imbalance)",
    knob="per-rank work per step (rank 2 processes a 6x longer batch)",
    planted=f"rank {STRAGGLER_RANK} runs 6x the matmul work each step; the others wait in the all_reduce",
    fixed="all 4 ranks run the same work per step",
    signal=f"per step, rank {STRAGGLER_RANK}'s compute (aten::mm) time is several times the others' while the other ranks' "
    "all_reduce (c10d::allreduce_ / gloo:all_reduce) wait is longer than the straggler's; the twin's ranks are even",
    world_size=WORLD,
)


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.distributed as dist

    seed_everything()  # same seed on all ranks; 1 intra-op thread each (4 ranks share the CPU)
    dev = ctx.device
    if dev == "cuda":
        dev = f"cuda:{ctx.rank % torch.cuda.device_count()}"
        torch.cuda.set_device(dev)
    rank = dist.get_rank()
    w = torch.randn(384, 384, device=dev) / 384**0.5
    grad = torch.randn(64 * 1024, device=dev)  # 256 KB "gradient"
    # Small base work (4 ranks share few CPU cores) and a large, deterministic extra for the straggler.
    reps = 3
    if variant == "planted" and rank == STRAGGLER_RANK:
        reps *= 6

    def step(i: int) -> None:
        h = torch.randn(256, 384, device=dev)
        for _ in range(reps):
            h = torch.tanh(h @ w)
        grad.mul_(0.5).add_(h.mean())
        dist.all_reduce(grad)

    profiled_loop(
        ctx,
        step,
        wait=1,
        warmup=1,
        active=8,
        extra_gt={"straggler_rank": STRAGGLER_RANK if variant == "planted" else None, "matmuls_per_step": reps},
    )
