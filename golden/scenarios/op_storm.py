"""Eager small-op storm: a long chain of small elementwise ops vs the same math compiled/fused."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="op_storm",
    fault_id="major.eager_small_op_storm",
    title="hand-written norm/GELU/residual chains run op by op in eager mode",
    knob="torch.compile around the elementwise chain",
    planted="eager: ~20 tiny elementwise ATen ops per block, 8 blocks, forward + backward",
    fixed="the same function under torch.compile (inductor fuses the chain into a few kernels)",
    signal="hundreds of sub-50us ATen ops per ProfilerStep; the twin has a few 'Torch-Compiled Region' / "
    "CompiledFxGraph calls and an order of magnitude fewer cpu_ops per step",
)

N_BLOCKS = 8


def chain(x, w, b):
    # layer norm by hand
    for _ in range(N_BLOCKS):
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdim=True)
        h = xc * torch_rsqrt(var + 1e-5) * w + b
        # tanh-GELU by hand
        inner = (h + 0.044715 * h * h * h) * 0.7978845608
        g = 0.5 * h * (1.0 + inner.tanh())
        x = x + g * 0.1
    return x


def torch_rsqrt(t):
    return t.rsqrt()


def run(variant: str, ctx: Ctx) -> None:
    import torch

    seed_everything()
    dev = ctx.device
    x = torch.randn(32, 64, device=dev)
    w = torch.randn(64, device=dev, requires_grad=True)
    b = torch.randn(64, device=dev, requires_grad=True)
    fn = chain if variant == "planted" else torch.compile(chain)
    # compile (or first-run) before the profiler starts
    fn(x, w, b).sum().backward()

    def step(i: int) -> None:
        w.grad = None
        b.grad = None
        fn(x, w, b).sum().backward()

    profiled_loop(ctx, step)
