"""Activation checkpointing surprise: torch.utils.checkpoint on every block (recompute) vs none.

Recorded twice: ``checkpoint`` (with_stack=True) and ``checkpoint_nostack`` (with_stack=False).
"""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

WITH_STACK = True

SCENARIO = Scenario(
    name="checkpoint",
    fault_id="major.activation_checkpointing_surprise",
    title="every MLP block wrapped in torch.utils.checkpoint where no recompute was intended (with_stack=True)",
    knob="torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) around each block",
    planted="4 blocks, each run through checkpoint(): forward is recomputed inside backward",
    fixed="the same 4 blocks called directly (no recompute)",
    signal="forward-shaped ops (aten::linear -> aten::addmm, aten::gelu) inside the backward pass "
    "(nested in autograd::engine::evaluate_function: CheckpointFunctionBackward/recompute); none in the twin",
)

N_BLOCKS = 4


def make_run(with_stack: bool):
    def run(variant: str, ctx: Ctx) -> None:
        import torch
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        seed_everything()
        dev = ctx.device
        blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256)) for _ in range(N_BLOCKS)
        ).to(dev)
        opt = torch.optim.SGD(blocks.parameters(), lr=1e-3)
        x = torch.randn(64, 256, device=dev)

        def forward(h):
            for blk in blocks:
                if variant == "planted":
                    h = h + checkpoint(blk, h, use_reentrant=False)
                else:
                    h = h + blk(h)
            return h

        def step(i: int) -> None:
            opt.zero_grad(set_to_none=True)
            forward(x).pow(2).mean().backward()
            opt.step()

        profiled_loop(ctx, step, with_stack=with_stack, extra_gt={"n_blocks": N_BLOCKS})

    return run


run = make_run(WITH_STACK)
