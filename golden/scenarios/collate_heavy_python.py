"""Input-bound step from the collate_fn: token lists padded, masked and bucketed in pure Python in the main
process, vs a vectorized collate (torch tensors + pad_sequence)."""

from golden.common import Ctx, Scenario, active_steps, profiled_loop, seed_everything

SCENARIO = Scenario(
    name="collate_heavy_python",
    fault_id="major.input_bound_step",
    title="DataLoader(num_workers=0) whose collate_fn pads, masks and truncates token lists in pure Python",
    knob="the DataLoader's collate_fn (pure-Python loops vs tensor ops)",
    planted="collate_fn remaps token ids through a dict and builds padded id lists, attention masks and position "
    "ids element by element in Python lists (num_workers=0, so it runs inside the step)",
    fixed="collate_fn turns each sample into a tensor, remaps ids with a lookup tensor built once, and uses "
    "pad_sequence + a length comparison for the mask",
    proposed="the same pure-Python collate_fn in two DataLoader worker processes (num_workers=2), which "
    "prepare the next batches while the step runs: the fix catalog.input_bound names first",
    signal="each ProfilerStep opens with a wide enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ that "
    "is mostly time without ATen ops under it (Python); the twin's __next__ is a small share of the step",
)

BATCH = 32
MAX_LEN = 256
VOCAB = 1000
D = 64
STEPS = 4 + active_steps(3)  # wait 2 + warmup 2 + active


class TokenDataset:
    """Variable-length token id lists (Python lists, as a tokenizer returns them)."""

    def __init__(self) -> None:
        import random

        rng = random.Random(11)
        self.samples = [[rng.randrange(1, VOCAB) for _ in range(rng.randint(MAX_LEN // 4, MAX_LEN + 64))]
                        for _ in range(BATCH * STEPS)]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, idx: int):
        return self.samples[idx]


REMAP = {t: (t * 7919) % VOCAB or 1 for t in range(VOCAB)}  # e.g. a tokenizer -> model vocabulary id map
UNK = 1


def python_collate(batch):
    import torch

    ids, mask, pos = [], [], []
    for sample in batch:
        row = [int(REMAP.get(t, UNK)) for t in sample[:MAX_LEN]]
        m = [1 for _ in row]
        while len(row) < MAX_LEN:
            row.append(0)
            m.append(0)
        ids.append(row)
        mask.append(m)
        pos.append([i if m[i] else 0 for i in range(MAX_LEN)])
    return torch.tensor(ids), torch.tensor(mask), torch.tensor(pos)


def _lut():
    import torch

    return torch.tensor([REMAP.get(t, UNK) for t in range(VOCAB)])


def tensor_collate(batch, lut):
    import torch
    from torch.nn.utils.rnn import pad_sequence

    seqs = [lut[torch.as_tensor(s[:MAX_LEN])] for s in batch]
    lengths = torch.tensor([len(s) for s in seqs])
    ids = pad_sequence(seqs, batch_first=True)
    ids = torch.nn.functional.pad(ids, (0, MAX_LEN - ids.shape[1]))
    ar = torch.arange(MAX_LEN)
    mask = (ar < lengths[:, None]).long()
    return ids, mask, ar * mask


def run(variant: str, ctx: Ctx) -> None:
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    seed_everything()
    dev = ctx.device
    import functools

    # fixed: the same id map as a lookup tensor, built once
    collate = python_collate if variant != "fixed" else functools.partial(tensor_collate, lut=_lut())
    workers = 2 if variant == "proposed" else 0
    dl = DataLoader(TokenDataset(), batch_size=BATCH, shuffle=False, num_workers=workers, collate_fn=collate)
    emb, pemb = nn.Embedding(VOCAB, D).to(dev), nn.Embedding(MAX_LEN, D).to(dev)
    head = nn.Sequential(nn.Linear(D, 256), nn.GELU(), nn.Linear(256, 2)).to(dev)
    params = list(emb.parameters()) + list(pemb.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=1e-2)
    it = iter(dl)

    def step(i: int) -> None:
        ids, mask, pos = (t.to(dev) for t in next(it))
        opt.zero_grad(set_to_none=True)
        h = (emb(ids) + pemb(pos)) * mask[..., None]
        logits = head(h.sum(1) / mask.sum(1, keepdim=True))
        nn.functional.cross_entropy(logits, ids[:, 0] % 2).backward()
        opt.step()

    profiled_loop(ctx, step, with_stack=False, extra_gt={"batch": BATCH, "max_len": MAX_LEN, "num_workers": workers})
