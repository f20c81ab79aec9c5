"""A capture taken without a profiler schedule (no ProfilerStep#N): the sync-forcing .item() must still be found."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="no_schedule_item",
    fault_id="major.sync_forcing_op",
    title="`with profile():` around 5 iterations, no schedule and no prof.step(); the loop reads loss.item() every iteration",
    knob="loss.item() host read in the loop (both twins captured without a schedule)",
    planted="`if loss.item() > 100: print(...)` every iteration",
    fixed="the check stays on the device (torch.where on the loss); no host read",
    signal="no ProfilerStep#N in either twin; iterations are the repeating `Optimizer.step#SGD.step` and "
    "`## forward ##` markers (5 each); the planted twin has aten::item + aten::_local_scalar_dense once per "
    "iteration, the fixed twin none",
)

ITERATIONS = 5


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn
    from torch.profiler import record_function

    seed_everything()
    dev = ctx.device
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(128, 256, device=dev)
    flag = torch.zeros((), device=dev)

    def step(i: int) -> None:
        nonlocal flag
        opt.zero_grad(set_to_none=True)
        with record_function("## forward ##"):
            loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if variant == "planted":
            if loss.item() > 100:
                print("loss exploded")
        else:
            flag = torch.where(loss > 100, torch.ones_like(flag), flag)

    profiled_loop(ctx, step, wait=1, warmup=1, active=ITERATIONS, use_schedule=False,
                  extra_gt={"iterations": ITERATIONS, "iteration_markers": ["Optimizer.step#SGD.step", "## forward ##"],
                            "item_per_iteration": 1 if variant == "planted" else 0})
