"""Record every golden scenario (planted + fixed) and rebuild golden/MANIFEST.json.

Usage (from the repository root):
    python -m golden.record [--out golden/traces] [--only NAME[,NAME...]] [--list]
    python golden/record.py ...            (same)

Each scenario variant runs in its own fresh Python subprocess (clean GC, dynamo and dist state).
The manifest is rebuilt from whatever traces are on disk, so ``--only`` keeps the others.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `python golden/record.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from golden.common import FAULT_IDS, GROUND_TRUTH_KEY, PROPOSED, SCHEMA_VERSION, VARIANTS, Ctx  # noqa: E402

GOLDEN = Path(__file__).resolve().parent
REPO = GOLDEN.parent
DEFAULT_OUT = GOLDEN / "traces"
MANIFEST = GOLDEN / "MANIFEST.json"


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dist_entry(rank: int, world: int, port: int, name: str, variant: str, out: str) -> None:
    import torch.distributed as dist

    from golden import scenarios
    from golden.common import pick_device

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    sc = scenarios.load(name)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ctx = Ctx(sc, variant, Path(out), pick_device(), rank=rank, world_size=world)
        sc.run(variant, ctx)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run_child(name: str, variant: str, out: Path) -> None:
    """Record one variant in this process (called in a subprocess by main())."""
    from golden import scenarios
    from golden.common import pick_device

    sc = scenarios.load(name)
    out.mkdir(parents=True, exist_ok=True)
    if sc.world_size > 1:
        import torch.multiprocessing as mp

        port = _free_port()
        mp.spawn(_dist_entry, args=(sc.world_size, port, name, variant, str(out)), nprocs=sc.world_size, join=True)
    else:
        sc.run(variant, Ctx(sc, variant, out, pick_device()))


def _read_gt(trace: Path) -> dict | None:
    with gzip.open(trace, "rt") as f:
        doc = json.load(f)
    gt = doc.get(GROUND_TRUTH_KEY)
    if isinstance(gt, str):
        gt = json.loads(gt)
    return gt


def build_manifest(out: Path) -> dict:
    from golden import scenarios

    entries = []
    for trace in sorted(out.rglob("*.json.gz")):
        gt = _read_gt(trace)
        if gt is None:
            print(f"warning: {trace} has no {GROUND_TRUTH_KEY}; skipped in manifest", file=sys.stderr)
            continue
        csv_path = Path(str(trace)[: -len(".json.gz")] + ".ops.csv")
        entry = {
            "path": trace.relative_to(GOLDEN).as_posix(),
            "size": trace.stat().st_size,
            "sha256": _sha256(trace),
            "ops_csv": csv_path.relative_to(GOLDEN).as_posix() if csv_path.exists() else None,
            "ops_csv_size": csv_path.stat().st_size if csv_path.exists() else None,
            "ops_csv_sha256": _sha256(csv_path) if csv_path.exists() else None,
            "ground_truth": gt,
        }
        entries.append(entry)
    skipped = []
    import torch

    cuda = torch.cuda.is_available()
    for sc in scenarios.all_scenarios():
        if sc.needs_cuda and not cuda:
            skipped.append(
                {"scenario": sc.name, "fault_id": sc.fault_id, "variants": list(VARIANTS), "reason": sc.skip_reason_cpu}
            )
    return {
        "schema": SCHEMA_VERSION,
        "ground_truth_key": GROUND_TRUTH_KEY,
        "recorded_with": "python -m golden.record",
        "fault_ids": FAULT_IDS,
        "traces": entries,
        "skipped": skipped,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output directory (default golden/traces)")
    ap.add_argument("--only", default=None, help="comma-separated scenario names to (re)record")
    ap.add_argument("--variant", choices=VARIANTS + (PROPOSED,), default=None,
                    help=f"record only this variant ({PROPOSED!r}: the detector's own fix, where a scenario has one; "
                         "never recorded unless asked for)")
    ap.add_argument("--list", action="store_true", help="list scenarios and exit")
    ap.add_argument("--no-manifest", action="store_true", help="do not rewrite golden/MANIFEST.json")
    ap.add_argument("--_child", nargs=2, metavar=("NAME", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()

    if args._child:
        run_child(args._child[0], args._child[1], out)
        return 0

    from golden import scenarios

    if args.list:
        for sc in scenarios.all_scenarios():
            print(f"{sc.name:22s} {sc.fault_id:40s} {sc.title}")
        return 0

    names = scenarios.MODULES if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in scenarios.MODULES]
    if unknown:
        ap.error(f"unknown scenario(s): {', '.join(unknown)}")

    import torch

    cuda = torch.cuda.is_available()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    failures = []
    t_all = time.time()
    for name in names:
        sc = scenarios.load(name)
        if sc.needs_cuda and not cuda:
            print(f"[skip] {name}: {sc.skip_reason_cpu}")
            continue
        for variant in VARIANTS if args.variant is None else (args.variant,):
            if variant == PROPOSED and sc.proposed is None:
                ap.error(f"{name} has no {PROPOSED!r} variant")
            t0 = time.time()
            cmd = [sys.executable, "-m", "golden.record", "--out", str(out), "--_child", name, variant]
            r = subprocess.run(cmd, cwd=REPO, env=env)
            dt = time.time() - t0
            status = "ok" if r.returncode == 0 else f"FAILED rc={r.returncode}"
            print(f"[{status}] {name}/{variant} in {dt:.1f}s", flush=True)
            if r.returncode != 0:
                failures.append(f"{name}/{variant}")
    print(f"recorded in {time.time() - t_all:.1f}s")

    if not args.no_manifest and out == DEFAULT_OUT.resolve():
        manifest = build_manifest(out)
        MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
        total = sum(e["size"] for e in manifest["traces"])
        print(f"wrote {MANIFEST.relative_to(REPO)}: {len(manifest['traces'])} traces, {total / 1e6:.2f} MB gz")
    if failures:
        print("FAILED: " + ", ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
