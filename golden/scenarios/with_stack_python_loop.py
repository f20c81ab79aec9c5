"""with_stack on a Python-heavy loop, with the unprofiled step time and the Python call count in the ground truth."""

import time

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="with_stack_python_loop",
    fault_id="minor.with_stack_overhead",
    title="a step that is mostly a pure-Python loop of small method calls (rule-based reward scoring), timed with with_stack on",
    knob="torch.profiler.profile(with_stack=...)",
    planted="with_stack=True: every Python call becomes a python_function event",
    fixed="with_stack=False",
    signal="thousands of python_function events per ProfilerStep (python_calls_per_step in the ground truth is the "
    "exact count of scorer calls), steps wider than unprofiled_step_ms by the tracing cost; the twin has no "
    "python_function events and steps close to unprofiled_step_ms",
)

ITEMS = 400
RULES = 6


class Scorer:
    def __init__(self, rules: int) -> None:
        self.weights = [0.5 + 0.1 * r for r in range(rules)]

    def rule(self, r: int, v: float) -> float:
        return self.weights[r] * v if v > 0 else 0.0

    def score(self, v: float) -> float:
        s = 0.0
        for r in range(len(self.weights)):
            s += self.rule(r, v)
        return s


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    scorer = Scorer(RULES)
    values = [((k * 37) % 101 - 50) / 10.0 for k in range(ITEMS)]
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64, device=dev)

    def step(i: int) -> None:
        rewards = [scorer.score(v) for v in values]  # ITEMS * (1 + RULES) Python calls
        r = torch.tensor(rewards[:32], device=dev).unsqueeze(1)
        opt.zero_grad(set_to_none=True)
        (model(x) * r).mean().backward()
        opt.step()

    times = []
    for i in range(7):  # the step without any profiler: the baseline the overhead is measured against
        t0 = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - t0)
    unprofiled_ms = sorted(times[2:])[len(times[2:]) // 2] * 1e3
    profiled_loop(ctx, step, with_stack=(variant == "planted"),
                  extra_gt={"python_calls_per_step": ITEMS * (1 + RULES),
                            "unprofiled_step_ms": round(unprofiled_ms, 3)})
