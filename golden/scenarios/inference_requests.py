"""An inference server loop captured without a schedule: each request is marked only by
``record_function("serve_request")``. Planted: the model is hand-written eager math (a small-op storm per
request); fixed: the same model with PyTorch's fused built-ins (F.layer_norm, F.gelu, F.scaled_dot_product_attention)."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="inference_requests",
    fault_id="major.eager_small_op_storm",
    title="serving loop (no ProfilerStep, one record_function per request): hand-written eager blocks vs built-ins",
    knob="how each block's norm / activation / attention is written (hand-written eager math vs fused built-ins)",
    planted="per request (batch 1, 32 tokens) 8 blocks of hand-written layernorm (mean/var/rsqrt...), tanh-GELU "
    "and softmax attention: ~40 tiny ATen ops per block",
    fixed="the same blocks with F.layer_norm, F.gelu(approximate='tanh') and F.scaled_dot_product_attention",
    signal="no ProfilerStep in either twin; REQUESTS `serve_request` user annotations; the planted requests each "
    "issue >= 3x the twin's top-level cpu_ops (ops not nested in another op), median op < 50 us",
)

N_BLOCKS = 8
D = 128
TOKENS = 32
REQUESTS = 12
MARKER = "serve_request"


def run(variant: str, ctx: Ctx) -> None:
    import math

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.profiler import record_function

    seed_everything()
    dev = ctx.device
    planted = variant == "planted"

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1, self.b1 = nn.Parameter(torch.ones(D)), nn.Parameter(torch.zeros(D))
            self.w2, self.b2 = nn.Parameter(torch.ones(D)), nn.Parameter(torch.zeros(D))
            self.qkv = nn.Linear(D, 3 * D)
            self.up, self.down = nn.Linear(D, 2 * D), nn.Linear(2 * D, D)

        def norm(self, x, w, b):
            if not planted:
                return F.layer_norm(x, (D,), w, b)
            mu = x.mean(-1, keepdim=True)
            var = (x - mu).pow(2).mean(-1, keepdim=True)
            return (x - mu) * torch.rsqrt(var + 1e-5) * w + b

        def act(self, x):
            if not planted:
                return F.gelu(x, approximate="tanh")
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))

        def attend(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            if not planted:
                return F.scaled_dot_product_attention(q, k, v)
            s = q @ k.transpose(-1, -2) / math.sqrt(D)
            s = (s - s.amax(-1, keepdim=True)).exp()
            return (s / s.sum(-1, keepdim=True)) @ v

        def forward(self, x):
            x = x + self.attend(self.norm(x, self.w1, self.b1))
            return x + self.down(self.act(self.up(self.norm(x, self.w2, self.b2))))

    model = nn.Sequential(*[Block() for _ in range(N_BLOCKS)]).to(dev).eval()
    g = torch.Generator().manual_seed(5)
    requests = [torch.randn(1, TOKENS, D, generator=g).to(dev) for _ in range(REQUESTS + 4)]
    replies = []

    def serve(i: int) -> None:
        with record_function(MARKER), torch.inference_mode():
            replies.append(model(requests[i]).argmax(-1))

    profiled_loop(ctx, serve, wait=2, warmup=2, active=REQUESTS, use_schedule=False, with_stack=False,
                  extra_gt={"iterations": REQUESTS, "iteration_markers": [MARKER], "n_blocks": N_BLOCKS,
                            "tokens_per_request": TOKENS})
