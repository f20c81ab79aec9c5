"""torch.compile with a forced graph break vs without."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="compile_graph_break",
    fault_id="minor.torch_compile_graph_break",
    title="a compiled MLP forward with torch._dynamo.graph_break() in the middle",
    knob="graph break inside the compiled function",
    planted="torch._dynamo.graph_break() between the two halves: two compiled regions + an eager island per call",
    fixed="same function without the break: one compiled region per call",
    signal="two 'Torch-Compiled Region: N/0' events (two distinct frame ids, two CompiledFxGraph calls) per call "
    "in every ProfilerStep; the twin has exactly one per call",
)

CALLS_PER_STEP = 4


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    l1, l2, l3 = nn.Linear(128, 256).to(dev), nn.Linear(256, 256).to(dev), nn.Linear(256, 64).to(dev)

    def fwd(x):
        h = torch.relu(l1(x))
        h = torch.nn.functional.gelu(l2(h))
        if variant == "planted":
            torch._dynamo.graph_break()
        return torch.tanh(l3(h)) * 0.5 + 0.5

    cfn = torch.compile(fwd)
    x = torch.randn(64, 128, device=dev)
    with torch.no_grad():
        cfn(x)  # compile before profiling

        def step(i: int) -> None:
            for _ in range(CALLS_PER_STEP):
                cfn(x)

        profiled_loop(ctx, step, extra_gt={"compiled_calls_per_step": CALLS_PER_STEP})
