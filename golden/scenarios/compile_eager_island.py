"""torch.compile with a @torch._dynamo.disable helper in the middle: its ops run eagerly inside the compiled region."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="compile_eager_island",
    fault_id="minor.torch_compile_graph_break",
    title="a compiled forward calls a @torch._dynamo.disable helper (a graph break that runs real ATen ops)",
    knob="@torch._dynamo.disable on the middle helper",
    planted="the helper is disabled for dynamo: graph break; its gelu/mul/add run eagerly between two compiled graphs",
    fixed="the same helper without the decorator: one compiled graph per call, no eager ops",
    signal="per call, eager ATen ops (aten::gelu, aten::mul, aten::add) nested in a 'Torch-Compiled Region' but "
    "outside any '## Call CompiledFxGraph ... ##' range; the twin has none (all compute inside CompiledFxGraph)",
)

CALLS_PER_STEP = 4
ISLAND_BLOCKS = 4  # gelu, mul, add per block


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    l1, l2 = nn.Linear(128, 256).to(dev), nn.Linear(256, 64).to(dev)

    def middle(h):
        for _ in range(ISLAND_BLOCKS):
            h = torch.nn.functional.gelu(h) * 1.01 + 0.001
        return h

    helper = torch._dynamo.disable(middle) if variant == "planted" else middle

    def fwd(x):
        h = torch.relu(l1(x))
        h = helper(h)
        return torch.tanh(l2(h))

    cfn = torch.compile(fwd)
    x = torch.randn(64, 128, device=dev)
    with torch.no_grad():
        cfn(x)  # compile before profiling

        def step(i: int) -> None:
            for _ in range(CALLS_PER_STEP):
                cfn(x)

        profiled_loop(ctx, step, extra_gt={"compiled_calls_per_step": CALLS_PER_STEP,
                                           "eager_island_ops_per_call": 3 * ISLAND_BLOCKS if variant == "planted" else 0})
