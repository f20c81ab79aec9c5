"""Input-bound step: DataLoader with real per-sample work and num_workers=0 vs workers + prefetch."""

import time

from golden.common import Ctx, Scenario, active_steps, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="input_bound",
    fault_id="major.input_bound_step",
    title="DataLoader does per-sample work in the main process",
    knob="DataLoader num_workers / prefetch_factor",
    planted="num_workers=0 (per-sample decode runs inside the step, in the main process)",
    fixed="num_workers=2, prefetch_factor=4 (8 batches in flight >= the 7 steps; prefetched before the loop starts)",
    signal="each ProfilerStep opens with a wide enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ "
    "(large share of the step, dataset ops nested inside); the twin's _MultiProcessingDataLoaderIter.__next__ is narrow",
)

BATCH = 8
STEPS = 4 + active_steps(3)  # wait 2 + warmup 2 + active
N_SAMPLES = STEPS * BATCH  # one epoch = the profiled run, so workers are idle once prefetched


class DecodeDataset:
    """Synthetic 'decode + augment': a few convolutions and an FFT per sample, deterministic by index."""

    def __init__(self) -> None:
        import torch

        g = torch.Generator().manual_seed(0)
        self.kernels = torch.randn(8, 1, 5, 5, generator=g)

    def __len__(self) -> int:
        return N_SAMPLES

    def __getitem__(self, idx: int):
        import torch
        import torch.nn.functional as F

        g = torch.Generator().manual_seed(idx)
        img = torch.rand(1, 1, 96, 96, generator=g)
        for _ in range(3):
            img = F.conv2d(img, self.kernels, padding=2).mean(dim=1, keepdim=True)
            img = torch.fft.irfft2(torch.fft.rfft2(img) * 0.5, s=img.shape[-2:])
        feat = F.adaptive_avg_pool2d(img, 16).flatten()
        return feat, torch.tensor(idx % 10)


def _worker_init(_):
    import torch

    torch.set_num_threads(1)


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    seed_everything()
    dev = ctx.device
    ds = DecodeDataset()
    if variant == "planted":
        dl = DataLoader(ds, batch_size=BATCH, shuffle=False, num_workers=0)
    else:
        dl = DataLoader(
            ds,
            batch_size=BATCH,
            shuffle=False,
            num_workers=2,
            prefetch_factor=4,
            worker_init_fn=_worker_init,
        )
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    it = iter(dl)
    if variant == "fixed":
        time.sleep(3.0)  # let the workers fill their prefetch queues before the loop

    def step(i: int) -> None:
        xb, yb = next(it)
        xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        for _ in range(2):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()

    profiled_loop(ctx, step)
    del it
