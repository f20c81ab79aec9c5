"""A full GC pause in the first profiled step of a warm loop: a GC finding, not a cold step."""

import gc

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="gc_not_cold",
    fault_id="major.gc_stall",
    title="warm loop (schedule wait=2, warmup=2) whose first active step runs a full gc.collect() over a large heap",
    knob="where the periodic full collection runs",
    planted="gc.collect() inside step 4 (the first profiled step; every 8 steps in the real loop) over ~600k live objects",
    fixed="the same gc.collect() in step 1 (the profiler's wait phase, not recorded); none inside the profiled steps",
    signal="the first ProfilerStep is several times wider than the others and almost all of the excess is one "
    "'Python GC' python_function event; the steps before it were warm (wait=2, warmup=2), so it is not a cold "
    "step; the twin's steps are even and have no Python GC event",
)

LIVE_OBJECTS = 600_000
GC_STEP = 4


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    live = [{"i": i, "tags": [i, i + 1]} for i in range(LIVE_OBJECTS)]  # what a full collection must traverse
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device=dev)
    gc.collect()
    gc.disable()  # automatic collections off in both twins: the only collection is the periodic explicit one

    def step(i: int) -> None:
        if i == (GC_STEP if variant == "planted" else 1):
            gc.collect()
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, gc_info=True,
                  extra_gt={"gc_step": GC_STEP if variant == "planted" else None, "cold_step": False,
                            "live_objects": LIVE_OBJECTS})
    gc.enable()
    del live
