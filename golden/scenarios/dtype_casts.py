"""Implicit dtype casts (the seed's "cast hunt"): autocast with one submodule excluded vs all in scope."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="dtype_casts",
    fault_id="major.implicit_dtype_casts",
    title="bf16 autocast run with one block forced back to fp32",
    knob="autocast scope around the 'head' submodule",
    planted="model under torch.autocast(bf16) but head runs inside autocast(enabled=False) on .float() inputs",
    fixed="the whole model (head included) inside the same autocast region",
    signal="aten::to/_to_copy up-casts (BFloat16 -> float) feeding an fp32 aten::addmm next to bf16 addmm ops "
    "(record_shapes 'Input type'); the twin's addmm are all BFloat16",
)


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    amp_dtype = torch.bfloat16  # CPU autocast is bf16; keep bf16 on GPU too

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(512, 512)
            self.fc2 = nn.Linear(512, 64)

        def forward(self, h):
            if variant == "planted":
                with torch.autocast(device_type=dev, enabled=False):
                    h = h.float()
                    return self.fc2(torch.relu(self.fc1(h)))
            return self.fc2(torch.relu(self.fc1(h)))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU())
            self.head = Head()

        def forward(self, x):
            return self.head(self.body(x))

    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(128, 256, device=dev)
    y = torch.randn(128, 64, device=dev)

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev, dtype=amp_dtype):
            out = model(x)
        loss = (out.float() - y).pow(2).mean()
        loss.backward()
        opt.step()

    profiled_loop(ctx, step)
