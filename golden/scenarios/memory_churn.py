"""Memory churn: per-step allocation of varying large tensors (+ empty_cache on GPU) vs static preallocated buffers."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="memory_churn",
    fault_id="major.memory_churn",
    title="every step allocates differently sized multi-MB temporaries (and empties the CUDA cache on GPU)",
    knob="dynamic vs static/preallocated temporaries",
    planted="per-step buffers with step-dependent sizes (1-9 MB each), freed at step end; torch.cuda.empty_cache() each step on GPU",
    fixed="same math on one fixed shape, written with out= into buffers preallocated before the loop",
    signal="allocator [memory] instant events of >= 1 MB with many distinct sizes inside every ProfilerStep (alloc/free "
    "sawtooth of Total Allocated); the twin has no >= 1 MB allocation inside its steps",
)

ROWS = 256


def run(variant: str, ctx: Ctx) -> None:
    import torch

    seed_everything()
    dev = ctx.device
    w = torch.randn(512, 512, device=dev)
    max_cols = 9 * 1024  # 256 x 9216 fp32 = 9 MB
    if variant == "fixed":
        a = torch.empty(ROWS, max_cols, device=dev)
        b = torch.empty(ROWS, max_cols, device=dev)
        c = torch.empty(ROWS, 512, device=dev)
        d = torch.empty(ROWS, 512, device=dev)
        src = torch.randn(ROWS, max_cols, device=dev)

    def step(i: int) -> None:
        if variant == "planted":
            for j in range(4):
                cols = 1024 * (1 + (3 * i + 5 * j) % 9)  # 1..9 MB, varies per step and per buffer
                a_ = torch.randn(ROWS, cols, device=dev)
                b_ = a_ * 2.0 + 1.0
                c_ = b_[:, :512] @ w
                d_ = torch.relu(c_)
                del a_, b_, c_, d_
            if dev == "cuda":
                torch.cuda.empty_cache()
        else:
            for j in range(4):
                torch.mul(src, 2.0, out=a)
                torch.add(a, 1.0, out=b)
                torch.mm(b[:, :512], w, out=c)
                torch.clamp(c, min=0.0, out=d)

    profiled_loop(ctx, step, extra_gt={"empty_cache_each_step": variant == "planted" and dev == "cuda"})
