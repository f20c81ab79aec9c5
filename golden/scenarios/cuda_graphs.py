"""CUDA-graph region: a captured-and-replayed forward vs eager. GPU only (skipped on CPU)."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="cuda_graphs",
    fault_id="minor.cuda_graph_region",
    title="inference forward captured with torch.cuda.CUDAGraph and replayed each step",
    knob="torch.cuda.CUDAGraph capture/replay of the forward",
    planted="graph.replay() per step: one cudaGraphLaunch, kernels without per-op ATen attribution",
    fixed="the same forward in eager mode: per-op aten::* -> cudaLaunchKernel -> kernel chains",
    signal="cudaGraphLaunch in every ProfilerStep with GPU kernels not correlated to aten ops; the twin has "
    "cudaLaunchKernel per op and no cudaGraphLaunch",
    needs_cuda=True,
    skip_reason_cpu="CUDA graphs need a CUDA device (torch.cuda.CUDAGraph capture is unavailable on a CPU-only "
    "build); recorded only when `python -m golden.record` runs on a GPU machine",
)


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    if ctx.device != "cuda":
        raise RuntimeError(SCENARIO.skip_reason_cpu)
    seed_everything()
    model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(512, 512), nn.GELU())]).cuda().eval()
    static_x = torch.randn(64, 512, device="cuda")
    with torch.no_grad():
        if variant == "planted":
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(static_x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_y = model(static_x)

            def step(i: int) -> None:
                static_x.normal_()
                g.replay()
                static_y.sum()
        else:

            def step(i: int) -> None:
                static_x.normal_()
                model(static_x).sum()

        profiled_loop(ctx, step)
