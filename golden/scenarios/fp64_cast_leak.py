"""A float64 constant leaks into a pure fp32 model: every step promotes to double and casts back to float."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="fp64_cast_leak",
    fault_id="major.implicit_dtype_casts",
    title="pure fp32 training; a per-feature scale built with torch.from_numpy (float64) multiplies the activations",
    knob="dtype of the numpy-built scale tensor",
    planted="scale = torch.from_numpy(np.linspace(...)) (float64): h * scale runs in double, then .float() casts back",
    fixed="scale = torch.from_numpy(...).float() once, before the loop: everything stays float32",
    signal="every ProfilerStep has aten::mul on a 'double' tensor of shape [128, 512] and an aten::to/_to_copy of it "
    "back to float (record_shapes 'Input type' + 'Input Dims'); there is no bf16/fp16 anywhere; the twin's only "
    "'double' inputs are 0-dim wrapped Python scalars (autograd's PowBackward `grad * 2`), which are no leak",
)


def run(variant: str, ctx: Ctx) -> None:
    import numpy as np
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    scale = torch.from_numpy(np.linspace(0.5, 1.5, 512)).to(dev)  # float64, as numpy makes it
    if variant == "fixed":
        scale = scale.float()
    l1, l2 = nn.Linear(256, 512).to(dev), nn.Linear(512, 64).to(dev)
    opt = torch.optim.SGD(list(l1.parameters()) + list(l2.parameters()), lr=1e-3)
    x = torch.randn(128, 256, device=dev)
    y = torch.randn(128, 64, device=dev)

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        h = torch.relu(l1(x)) * scale  # planted: float32 * float64 -> float64
        out = l2(h.float())  # the cast back the author added when Linear complained
        loss = (out - y).pow(2).mean()
        loss.backward()
        opt.step()

    profiled_loop(ctx, step, extra_gt={"leaked_dtype": "float64" if variant == "planted" else None,
                                       "run_dtype": "float32"})
