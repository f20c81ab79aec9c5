"""Implicit dtype casts in a transformer block: bf16 autocast with the attention submodule excluded
(``autocast(enabled=False)`` + ``.float()`` "for stability") vs the whole block under autocast."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="autocast_excluded_attention",
    fault_id="major.implicit_dtype_casts",
    title="bf16 autocast transformer blocks whose attention runs in fp32 (autocast disabled inside it)",
    knob="autocast scope around the attention submodule",
    planted="each block's attention: `with torch.autocast(device_type, enabled=False): x = x.float()` then q/k/v, "
    "scores and output projection in fp32; the MLP stays bf16",
    fixed="the attention inside the same bf16 autocast region as the rest of the block",
    signal="per step and block: bf16 -> fp32 aten::_to_copy feeding fp32 aten::addmm/bmm of the attention next to "
    "bf16 addmm of the MLP (record_shapes 'Input type'); the twin's addmm/bmm are all BFloat16",
)

N_BLOCKS = 3
D = 256
HEADS = 4
SEQ = 64
BATCH = 8


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(D, 3 * D)
            self.out = nn.Linear(D, D)

        def _attend(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4).unbind(0)
            scores = torch.softmax(q @ k.transpose(-1, -2) / (D // HEADS) ** 0.5, dim=-1)
            return self.out((scores @ v).transpose(1, 2).reshape(b, s, D))

        def forward(self, x):
            if variant == "planted":  # "attention in fp32 for stability"
                with torch.autocast(device_type=dev, enabled=False):
                    return self._attend(x.float())
            return self._attend(x)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.attn = Attention()
            self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    model = nn.Sequential(*[Block() for _ in range(N_BLOCKS)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, SEQ, D, device=dev)

    def step(i: int) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev, dtype=torch.bfloat16):
            out = model(x)
        out.float().pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, extra_gt={"n_blocks": N_BLOCKS, "excluded_submodule": "attention",
                                       "amp_dtype": "bfloat16"})
