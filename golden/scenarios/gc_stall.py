"""GC stall: allocation-heavy Python (cyclic garbage over a large live heap) with gc on vs gc.disable()."""

import gc

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="gc_stall",
    fault_id="major.gc_stall",
    title="per-step Python bookkeeping creates cyclic garbage; automatic GC runs inside the steps",
    knob="automatic Python GC during the loop",
    planted="gc enabled: thousands of cyclic dicts per step over a ~300k-object live heap -> gen0/1/2 collections mid-step",
    fixed="gc.disable() for the loop (gc.collect() once before and after, outside the profiled steps)",
    proposed="gc.disable() for the loop, as the fixed twin, and the per-step records made without the reference "
    "cycle, so reference counting frees them at the end of the step (the detector's advice: GC off around "
    "the loop, fewer cyclic temporaries); nothing leaks",
    signal="'Python GC' python_function events (record_python_gc_info=True) inside every ProfilerStep, with "
    "wide pauses from full collections; the twin has none",
)

LIVE_OBJECTS = 300_000
GARBAGE_PER_STEP = 20_000


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    # A large, long-lived heap makes every full (gen2) collection expensive.
    live = [{"i": i, "tags": [i, i + 1]} for i in range(LIVE_OBJECTS)]
    history = []  # survivors that push objects into gen1/gen2
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(32, 128, device=dev)
    gc.collect()
    if variant in ("fixed", "proposed"):
        gc.disable()
    else:
        gc.enable()
        gc.set_threshold(700, 10, 10)

    cyclic = variant != "proposed"

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()
        # per-step "metrics bookkeeping": cyclic records, no function calls (keeps with_stack small)
        recs = [None] * GARBAGE_PER_STEP  # no per-item method calls: keeps the with_stack trace small
        for k in range(GARBAGE_PER_STEP):
            r = {"step": i, "k": k, "vals": [k, k * 2, k * 3]}
            # planted and fixed: a reference cycle, which only the cyclic GC can free; proposed: the same
            # dict without the cycle (an int in its place), freed by reference counting
            r["self"] = r if cyclic else k
            recs[k] = r
        history.append(recs[: GARBAGE_PER_STEP // 10])  # some survive -> older generations fill up
        del recs

    profiled_loop(ctx, step, gc_info=True, extra_gt={"gc_enabled_in_loop": variant == "planted",
                                                       "cyclic_records": cyclic,
                                                       "live_objects": LIVE_OBJECTS,
                                                       "cyclic_garbage_per_step": GARBAGE_PER_STEP})
    gc.enable()
    gc.collect()
    del live, history
