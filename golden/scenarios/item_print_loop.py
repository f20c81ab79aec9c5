"""Sync-forcing op in a realistic training loop: DataLoader batches, AdamW, grad clipping, a LR schedule and
``if loss.item() > X: print(...)`` every step, vs the same loop keeping the check on the device."""

from golden.common import Ctx, Scenario, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="item_print_loop",
    fault_id="major.sync_forcing_op",
    title="realistic loop (DataLoader, AdamW, clip_grad_norm_, LR schedule) reading loss.item() every step",
    knob="host read of the loss for a divergence check",
    planted="`if loss.item() > LOSS_ALARM: print(...)` after every optimizer step",
    fixed="the check stays on the device (a running max of the loss), read once after the loop",
    signal="one aten::item -> aten::_local_scalar_dense per ProfilerStep after Optimizer.step#AdamW.step "
    "(a device sync on a GPU); the twin has none; everything else (clip_grad_norm_, the scheduler, the DataLoader) "
    "is the same in both",
)

LOSS_ALARM = 50.0
BATCH = 32
FEATURES = 128


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    seed_everything()
    dev = ctx.device
    g = torch.Generator().manual_seed(7)
    data = TensorDataset(torch.randn(BATCH * 16, FEATURES, generator=g), torch.randint(0, 10, (BATCH * 16,), generator=g))
    loader = DataLoader(data, batch_size=BATCH, shuffle=True, generator=g, num_workers=0)
    model = nn.Sequential(nn.Linear(FEATURES, 512), nn.LayerNorm(512), nn.GELU(), nn.Dropout(0.1),
                          nn.Linear(512, 512), nn.LayerNorm(512), nn.GELU(), nn.Linear(512, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, foreach=False, fused=False)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    worst = torch.zeros((), device=dev)
    it = iter(loader)

    def step(i: int) -> None:
        nonlocal worst
        xb, yb = next(it)
        xb, yb = xb.to(dev), yb.to(dev)
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if variant == "planted":
            if loss.item() > LOSS_ALARM:  # the planted host read (a sync on a GPU)
                print(f"step {i}: loss {loss.item():.3f} above {LOSS_ALARM}")
        else:
            worst = torch.maximum(worst, loss.detach())

    profiled_loop(ctx, step, extra_gt={"loss_alarm": LOSS_ALARM, "item_per_step": 1 if variant == "planted" else 0})
    if variant == "fixed" and float(worst) > LOSS_ALARM:  # one read after the loop
        print("loss went above the alarm at some step")
