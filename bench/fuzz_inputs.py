"""The input fuzzer's longer run: many more drawn file names, rank directories and command lines than the
seeded CI run (tests/test_fuzz_inputs.py), each held to the same rules (tests/input_fuzz.py): it ends, with
status 0, 1 or 2, in sentences and never a traceback, leaving no temporary file, naming every rank entry.

    nice python bench/fuzz_inputs.py [--examples 200] [--seed 1] [--timeout 120]

Prints, per command, how many runs ended with each status and the slowest run, the CPU seconds of all the
runs (children) next to the wall time, and every broken rule with its input; writes the same to
bench/results/fuzz_inputs.json. Exit status 1 when a rule broke.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests import input_fuzz  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120, help="seconds one run may take before it is a hang")
    args = parser.parse_args()
    statuses: dict[str, Counter] = defaultdict(Counter)
    slowest: dict[str, float] = defaultdict(float)
    broken: list[dict] = []
    runs = 0

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(layout=input_fuzz.layouts(), command=input_fuzz.commands())
    def one(layout, command):
        nonlocal runs
        root = input_fuzz.fresh_root()
        try:
            target = input_fuzz.build(layout, root)
            try:
                outcome = input_fuzz.run(command, target, timeout=args.timeout)
            except Exception as exc:  # noqa: BLE001 - a hang (TimeoutExpired) is a broken rule, recorded
                broken.append({"command": list(command), "layout": repr(layout), "error": repr(exc)})
                return
            runs += 1
            name = " ".join(outcome.command)
            statuses[name][outcome.status] += 1
            slowest[name] = max(slowest[name], outcome.seconds)
            try:
                input_fuzz.check(layout, outcome, root)
            except AssertionError as exc:
                broken.append({"command": list(outcome.command), "layout": repr(layout),
                               "error": str(exc)[:2000]})
        finally:
            input_fuzz.remove(root)

    wall0 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        one()
    except Exception:  # noqa: BLE001 - hypothesis itself failing is reported, not hidden
        traceback.print_exc()
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - wall0
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(f"{runs} runs, seed {args.seed}: {wall:.0f} s wall, {cpu:.0f} s CPU (children); "
          f"{len(broken)} broken rules")
    for name in sorted(statuses):
        counts = ", ".join(f"exit {k}: {v}" for k, v in sorted(statuses[name].items()))
        print(f"  {name:<40} {counts}; slowest {slowest[name]:.1f} s")
    for b in broken:
        print(f"BROKEN: {b['command']} {b['layout']}\n  {b['error']}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "fuzz_inputs.json").write_text(json.dumps({
        "seed": args.seed, "examples": args.examples, "runs": runs, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "statuses": {k: dict(v) for k, v in statuses.items()}, "slowest_s": {k: round(v, 1) for k, v in slowest.items()},
        "broken": broken}, indent=2))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
