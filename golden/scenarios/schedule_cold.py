"""Profiler schedule distortion: an active window that captures the cold first step vs one that waits past warmup."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="schedule_cold",
    fault_id="minor.profiler_schedule_distortion",
    title="schedule(wait=0, warmup=0, active=3) records step 0 (first optimizer step, first allocations)",
    knob="torch.profiler.schedule wait/warmup",
    planted="schedule(wait=0, warmup=0, active=3): steps 0-2, the first one cold",
    fixed="schedule(wait=2, warmup=2, active=3): steps 4-6, all warm",
    signal="the trace starts at ProfilerStep#0, whose width is well above the other steps and which alone holds "
    "one-time work (Adam state init: aten::zeros_like per parameter, first allocations); the twin starts at "
    "ProfilerStep#4 with even steps and no zeros_like",
)


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(256, 256), nn.ReLU())]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(64, 256, device=dev)

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()

    if variant == "planted":
        profiled_loop(ctx, step, wait=0, warmup=0, active=3)
    else:
        profiled_loop(ctx, step, wait=2, warmup=2, active=3)
