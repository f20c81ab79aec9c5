"""Memory churn from random batch sizes (profile_memory on): every step allocates activations of a new size;
the twin keeps one batch size, so each step allocates the same sizes."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="random_batch_memory",
    fault_id="major.memory_churn",
    title="MLP trained on batches of a random size each step (32..224 rows) vs a fixed 128 rows",
    knob="batch size per step (random vs fixed)",
    planted="a batch size drawn at random each step from 32..224, a different one every step (the dynamic-batching pattern)",
    fixed="every batch has 128 rows (drop_last / fixed-size batches)",
    signal="[memory] allocations >= 64 KB inside each step whose sizes change from step to step in the planted "
    "run (activations are batch x 2048 x 4 bytes); the twin allocates the same set of sizes in every step",
)

D_IN, D_HID = 512, 2048
SIZES = (32, 64, 96, 128, 160, 192, 224)


def batch_sizes(variant: str, steps: int) -> list[int]:
    import random

    if variant == "fixed":
        return [128] * steps
    sizes = list(SIZES)  # a different size at every step (7 steps, 7 sizes)
    random.Random(3).shuffle(sizes)
    return sizes[:steps]


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    model = nn.Sequential(nn.Linear(D_IN, D_HID), nn.GELU(), nn.Linear(D_HID, D_HID), nn.GELU(),
                          nn.Linear(D_HID, D_IN)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    sizes = batch_sizes(variant, 7)

    def step(i: int) -> None:
        x = torch.randn(sizes[i], D_IN, device=dev)
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, with_stack=False, extra_gt={"batch_sizes_by_step": sizes, "active_batch_sizes": sizes[4:]})
