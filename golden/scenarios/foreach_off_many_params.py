"""Optimizer step dominance: AdamW(foreach=False) over hundreds of parameters of a real-looking model (many
small LayerNorm / Linear layers) vs AdamW(fused=True)."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="foreach_off_many_params",
    fault_id="major.optimizer_step_dominance",
    title="AdamW(foreach=False) over 300 parameter tensors (75 residual blocks of LayerNorm + Linear)",
    knob="torch.optim.AdamW implementation flag (foreach=False vs fused=True)",
    planted="AdamW(foreach=False, weight_decay=0.01): a Python loop issuing ~10 tiny ops per parameter tensor",
    fixed="AdamW(fused=True): one aten::_fused_adamw_ for all tensors (on CPU foreach=True still dispatches one "
    "op per tensor under aten::_foreach_*, so fused is the fix that removes the per-tensor ops)",
    signal="inside Optimizer.step#AdamW.step, >= 5 per-parameter ops per tensor (mul_/lerp_/addcmul_/sqrt/div_/"
    "addcdiv_...) not under an aten::_foreach_*/_fused_* op; the twin has one aten::_fused_adamw_ per step",
)

N_BLOCKS = 75
WIDTH = 32


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(WIDTH)
            self.fc = nn.Linear(WIDTH, WIDTH)

        def forward(self, x):
            return x + self.fc(self.ln(x))

    model = nn.Sequential(*[Block() for _ in range(N_BLOCKS)]).to(dev)
    n_params = sum(1 for _ in model.parameters())
    planted = variant == "planted"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False, fused=not planted)
    x = torch.randn(16, WIDTH, device=dev)

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, with_stack=False, profile_memory=False,
                  extra_gt={"n_param_tensors": n_params, "foreach": False, "fused": not planted})
