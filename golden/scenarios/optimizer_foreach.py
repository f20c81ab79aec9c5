"""Optimizer step dominance: Adam over many small parameters, foreach=False vs fused=True."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="optimizer_foreach",
    fault_id="major.optimizer_step_dominance",
    title="Adam(foreach=False) over 252 small parameter tensors",
    knob="torch.optim.Adam implementation flag (foreach=False vs fused=True)",
    planted="Adam(foreach=False): the per-parameter loop issues ~10 tiny ops per tensor",
    fixed="Adam(fused=True): one aten::_fused_adam_ op for all tensors (foreach=True is not used as the fix on CPU: its CPU fallback still dispatches one aten::add_/mul_ per tensor, nested under aten::_foreach_*)",
    signal="after backward, thousands of tiny aten::add_/mul_/lerp_/addcmul_/sqrt/div_ per step inside "
    "Optimizer.step#Adam.step; the twin has a single aten::_fused_adam_ instead",
)

N_PARAMS = 250  # small parameter tensors (64 floats each); sized so the trace stays < 1.5 MB gz


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device

    class Many(nn.Module):
        """Many small parameters, cheap forward/backward (one stack op), so the optimizer dominates."""

        def __init__(self) -> None:
            super().__init__()
            self.params = nn.ParameterList(nn.Parameter(torch.randn(64) * 0.1) for _ in range(N_PARAMS))
            self.proj = nn.Linear(64, 8)

        def forward(self, x):
            w = torch.stack(self._plist)  # (N, 64)
            return self.proj(x @ w.t() @ w)

    model = Many().to(dev)
    model._plist = list(model.params)  # plain list: avoid ParameterList.__getitem__ per step
    planted = variant == "planted"
    foreach = False
    fused = not planted
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach, fused=fused)
    x = torch.randn(8, 64, device=dev)

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, extra_gt={"n_param_tensors": N_PARAMS + 2, "foreach": foreach, "fused": fused})
