"""record_function absence: unannotated phases vs record_function around each phase."""

import contextlib

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="record_function",
    fault_id="minor.record_function_absence",
    title="a training step with a custom router/experts block, phases unannotated",
    knob="torch.profiler.record_function around each phase",
    planted="no user annotations besides the profiler's own (ProfilerStep#, Optimizer.*)",
    fixed="with record_function('phase:<name>') around data, forward, router, backward, optimizer",
    signal="no user_annotation named phase:* in any ProfilerStep; the twin has phase:data/forward/router/"
    "backward/optimizer once per step",
)

PHASES = ("phase:data", "phase:forward", "phase:router", "phase:backward", "phase:optimizer")


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn
    from torch.profiler import record_function

    seed_everything()
    dev = ctx.device

    def rf(name):
        return record_function(name) if variant == "fixed" else contextlib.nullcontext()

    experts = nn.ModuleList(nn.Linear(128, 128) for _ in range(4)).to(dev)
    gate = nn.Linear(128, 4).to(dev)
    trunk = nn.Sequential(nn.Linear(128, 128), nn.GELU()).to(dev)
    params = list(experts.parameters()) + list(gate.parameters()) + list(trunk.parameters())
    opt = torch.optim.SGD(params, lr=1e-3)
    data = torch.randn(16, 64, 128, device=dev)

    def step(i: int) -> None:
        with rf("phase:data"):
            x = data[i % 16].clone()
        opt.zero_grad(set_to_none=True)
        with rf("phase:forward"):
            h = trunk(x)
            with rf("phase:router"):
                probs = gate(h).softmax(-1)
                top = probs.argmax(-1)
                out = torch.zeros_like(h)
                for e, ex in enumerate(experts):
                    mask = (top == e).unsqueeze(-1).to(h.dtype)
                    out = out + ex(h) * mask * probs[:, e : e + 1]
            loss = out.pow(2).mean()
        with rf("phase:backward"):
            loss.backward()
        with rf("phase:optimizer"):
            opt.step()

    profiled_loop(ctx, step, extra_gt={"phases": list(PHASES)})
