"""with_stack overhead: the same Python-heavy step captured with with_stack=True vs False."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="with_stack_overhead",
    fault_id="minor.with_stack_overhead",
    title="a timing capture of a Python-heavy step (per-step text featurization) taken with Python stack tracing on",
    knob="torch.profiler.profile(with_stack=...)",
    planted="with_stack=True (python_function events for every Python call; CPU-side slowdown)",
    fixed="with_stack=False (timing run; attribution comes from a separate with_stack capture)",
    signal="python_function events in every ProfilerStep and wider steps than the twin, which has no "
    "python_function events at all",
)


def _norm_token(tok: str) -> str:
    return tok.strip().lower()


def _hash_token(tok: str, buckets: int) -> int:
    h = 0
    for ch in _norm_token(tok):
        h = (h * 31 + ord(ch)) % buckets
    return h


def _featurize(words: list, buckets: int) -> list:
    return [_hash_token(w, buckets) for w in words]


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn

    seed_everything()
    dev = ctx.device
    buckets = 512
    # Python-heavy step: per-step text featurization through small helper functions (thousands of
    # Python calls), then a small embedding-bag model; tracing every Python call is what with_stack costs.
    vocab = [f"Word{i:04d} " for i in range(400)]
    docs = [[vocab[(d * 7 + k * 13) % 400] for k in range(48)] for d in range(16)]
    model = nn.Sequential(nn.EmbeddingBag(buckets, 64, mode="mean"), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(i: int) -> None:
        ids = torch.tensor([_featurize(d, buckets) for d in docs], device=dev)
        opt.zero_grad(set_to_none=True)
        model(ids).pow(2).mean().backward()
        opt.step()

    profiled_loop(ctx, step, with_stack=(variant == "planted"))
