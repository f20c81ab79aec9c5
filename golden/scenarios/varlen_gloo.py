"""Variable sequence length across 2 gloo ranks: each rank draws its own sequence length every step, so the
rank with the shorter batch waits in DDP's all-reduce; the twin gives both ranks the same length per step
(a length-grouped sampler)."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

WORLD = 2

SCENARIO = Scenario(
    name="varlen_gloo",
    fault_id="major.straggler_rank",
    title="DDP (gloo, 2 ranks) on variable-length batches drawn per rank vs the same length on both ranks",
    knob="how sequence lengths are assigned to ranks (independent per rank vs grouped by length across ranks)",
    planted="each rank samples its batch's sequence length independently (64..512 tokens): per step one rank "
    "computes up to 8x longer and the other waits in the gradient all-reduce",
    fixed="a length-grouped sampler: both ranks get the same sequence length at each step (same lengths "
    "overall, so the same total work)",
    signal="record_shapes: the ranks' aten::mm input dims differ within a step in the planted run (equal in the "
    "twin); the rank with the shorter sequence spends longer in gloo:all_reduce / c10d::allreduce_ of that step",
    world_size=WORLD,
)

D = 256
BATCH = 4
LENS = (64, 128, 192, 256, 320, 384, 448, 512)
WAIT, WARMUP, ACTIVE = 1, 1, 4


def seq_lens(variant: str, rank: int) -> list[int]:
    """The length each rank gets at each step (the ground truth records all of them)."""
    import random

    steps = WAIT + WARMUP + ACTIVE
    if variant == "planted":
        rng = random.Random(1000 + rank)  # independent per rank
        return [rng.choice(LENS) for _ in range(steps)]
    # grouped: both ranks see the same length at a step; over the run each rank gets the lengths the planted
    # run gave rank 0 and rank 1 (interleaved), so total work is comparable
    a, b = seq_lens("planted", 0), seq_lens("planted", 1)
    return [a[i] if i % 2 == 0 else b[i] for i in range(steps)]


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    seed_everything()
    dev = ctx.device
    if dev == "cuda":
        dev = f"cuda:{ctx.rank % torch.cuda.device_count()}"
        torch.cuda.set_device(dev)
    rank = dist.get_rank()
    model = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D), nn.GELU(), nn.Linear(D, D)).to(dev)
    ddp = DDP(model, device_ids=[dev] if dev.startswith("cuda") else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    lens = seq_lens(variant, rank)
    g = torch.Generator().manual_seed(100 + rank)

    def step(i: int) -> None:
        x = torch.randn(BATCH, lens[i], D, generator=g).to(dev)
        opt.zero_grad(set_to_none=True)
        ddp(x).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, wait=WAIT, warmup=WARMUP, active=ACTIVE,
                  extra_gt={"seq_lens_by_step": lens, "active_seq_lens": lens[WAIT + WARMUP:],
                            "seq_lens_all_ranks": [seq_lens(variant, r) for r in range(WORLD)]})
