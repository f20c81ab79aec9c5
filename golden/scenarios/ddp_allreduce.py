"""Unoverlapped all-reduce: DDP (gloo, 2 ranks) with all gradient comm after backward vs bucketed overlap."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

WORLD = 2

SCENARIO = Scenario(
    name="ddp_allreduce",
    fault_id="major.unoverlapped_allreduce",
    title="DDP gradients reduced in one flat all_reduce after backward (no_sync + manual) vs bucketed during backward",
    knob="DDP gradient communication (model.no_sync() + manual all_reduce after backward vs bucket_cap_mb=1)",
    planted="with model.no_sync(): loss.backward(); then one all_reduce of all flattened grads after backward returns",
    fixed="plain DDP with bucket_cap_mb=1: ~6 buckets all-reduced from autograd hooks while backward still runs",
    signal="every c10d::allreduce_ in a step starts after the step's last autograd::engine::evaluate_function ends "
    "(serialized after backward); in the twin several allreduce_ ops start inside the backward pass",
    world_size=WORLD,
)

N_LAYERS = 6
WIDTH = 512  # 1 MB fp32 weight per layer


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
    layers = []
    for _ in range(N_LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers).to(dev)
    ddp = DDP(model, bucket_cap_mb=1, device_ids=[dev] if dev.startswith("cuda") else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    g = torch.Generator(device="cpu").manual_seed(100 + dist.get_rank())
    x = torch.randn(64, WIDTH, generator=g).to(dev)
    world = dist.get_world_size()

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        if variant == "planted":
            with ddp.no_sync():
                ddp(x).pow(2).mean().backward()
            grads = [p.grad for p in ddp.parameters()]
            flat = torch.cat([t.reshape(-1) for t in grads])
            dist.all_reduce(flat)
            flat.div_(world)
            off = 0
            for t in grads:
                n = t.numel()
                t.copy_(flat[off : off + n].view_as(t))
                off += n
        else:
            ddp(x).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, extra_gt={"bucket_cap_mb": 1, "n_layers": N_LAYERS, "manual_allreduce_after_backward": variant == "planted"})
