"""Sync-forcing op in the hot loop: ``if loss.item() > 100: print(...)`` vs keeping it on device."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="sync_item",
    fault_id="major.sync_forcing_op",
    title="loss.item() host read in every step",
    knob="host read of the loss inside the training loop",
    planted="if loss.item() > 100: print(...) every step",
    fixed="the check stays on device (torch.where into a device flag, read once after the loop)",
    signal="aten::item -> aten::_local_scalar_dense inside every ProfilerStep (cudaStreamSynchronize beneath it on GPU); none in the twin",
)


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device=dev)
    y = torch.randn(64, 1, device=dev)
    flag = torch.zeros((), dtype=torch.bool, device=dev)

    def step(i: int) -> None:
        nonlocal flag
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if variant == "planted":
            if loss.item() > 100:  # the planted host sync
                print("loss exploded", i)
        else:
            flag = flag | (loss.detach() > 100)  # stays on device

    profiled_loop(ctx, step)
    if variant == "fixed" and bool(flag):  # one read after the loop, outside the profiled steps
        print("loss exploded at some step")
