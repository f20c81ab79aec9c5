"""Predictions against real fixes: for every golden planted / fixed pair, diagnose the planted trace, take
the predicted median step after fixing its planted fault (the finding of the detector that owns the fault
id), and compare with the fixed twin's measured median steady step. Also the corpus pair ResNet-50
num_workers=0 -> 4 (input-bound fix). Prints one Markdown table.

    python bench/whatif_pairs.py [--golden DIR] [--corpus DIR]
    python bench/whatif_pairs.py --pairs DIR     (NAME_planted*.json.gz beside NAME_fixed*.json.gz, e.g. a
                                                  GOLDEN_ACTIVE=10 recording: the fault id is read from
                                                  each trace's ground truth)
    python bench/whatif_pairs.py --runs DIR      (several captures a side, NAME_planted_rN / NAME_fixed_rN, e.g.
                                                  GOLDEN_TAG=rN recordings, and NAME_planted_pN /
                                                  NAME_proposed_pN: the prediction is the median over
                                                  the planted captures, the measured change is the median of
                                                  the fixed captures' median steps minus the planted ones')
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from kineto_sql import open_trace
from kineto_sql.catalog import spec as catalog
from kineto_sql.diagnose.run import diagnose_trace
from kineto_sql.whatif import load_graph
from kineto_sql.whatif.predict import median_step, steady_windows

REPO = Path(__file__).resolve().parents[1]
RESNET = ("kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz",
          "kineto_tbp_resnet50_nw4_run1623212756351.pt.trace.json.gz", "catalog.input_bound")


def owners() -> dict[str, str]:
    return {row: spec.id for spec in catalog.load_catalog().by_kind("detector") for row in spec.catalog_rows}


def pairs(golden: Path) -> list[tuple[Path, Path, str]]:
    manifest = json.loads((golden / "MANIFEST.json").read_text())
    out = []
    for entry in manifest["traces"]:
        truth = entry["ground_truth"]
        path = golden / entry["path"]
        if truth.get("variant") != "planted" or path.parent.name.endswith("_planted"):
            continue  # rank directories are diagnosed rank by rank elsewhere
        fixed = path.with_name(path.name.replace("_planted", "_fixed"))
        if fixed.exists():
            out.append((path, fixed, truth.get("fault_id", "")))
    return out


def recorded_pairs(directory: Path, twin: str = "fixed") -> list[tuple[Path, Path, str]]:
    """Single-rank planted / twin recordings in one directory, with the fault id of their ground truth."""
    out = []
    for planted in sorted(directory.glob("*_planted*.json.gz")):
        fixed = planted.with_name(planted.name.replace("_planted", f"_{twin}"))
        if fixed.exists():
            out.append((planted, fixed, fault_id(planted)))
    return out


def fault_id(trace: Path) -> str:
    """The fault id of a recording's ground truth ('' without one)."""
    import gzip

    truth = json.loads(gzip.decompress(trace.read_bytes())).get("kineto_sql_ground_truth") or {}
    truth = json.loads(truth) if isinstance(truth, str) else truth
    return truth.get("fault_id", "")


def measured(path: Path) -> tuple[int, list[int]]:
    """The median steady step and the steady windows' widths."""
    tp = open_trace(path)
    try:
        graph = load_graph(tp)
        return median_step(graph), [graph.windows[w][1] for w in steady_windows(graph)]
    finally:
        tp.close()


def predicted(path: Path, rule: str | None):
    tp = open_trace(path)
    try:
        d = diagnose_trace(tp)
    finally:
        tp.close()
    finding = next((f for f in d.findings if f.query_id == rule), None)
    return finding, d


def row(name, planted, fixed, rule):
    finding, d = predicted(planted, rule)
    after, widths = measured(fixed)
    _, before_widths = measured(planted)
    spread = (f"{', '.join(f'{w / 1e6:.1f}' for w in before_widths)} / "
              f"{', '.join(f'{w / 1e6:.1f}' for w in widths)}")
    if finding is None or finding.prediction is None:
        return f"| {name} | {rule or '-'} | not fired / no prediction | | | | {spread} |"
    p = finding.prediction
    before = p["measured_step_ns"]
    pred_change = -p["saving_ns"]
    real_change = after - before
    err = "" if real_change == 0 else f"{100.0 * (pred_change - real_change) / abs(real_change):+.0f}%"
    low, high = (x / 1e6 for x in p["saving_range_ns"])
    return (f"| {name} | {rule} | {p['basis']} | {before / 1e6:.2f} -> {p['predicted_step_ns'] / 1e6:.2f} "
            f"({pred_change / 1e6:+.2f}; range -{low:.2f}..-{high:.2f}) | {after / 1e6:.2f} ({real_change / 1e6:+.2f}) "
            f"| {err} | {spread} |")


def runs(directory: Path, rules: dict[str, str]) -> None:
    """NAME_planted_rN against NAME_fixed_rN (the golden twin), and NAME_planted_pN against NAME_proposed_pN
    (the detector's own fix, golden.common.PROPOSED), each set recorded in turn."""
    import re
    import statistics

    groups: dict[tuple[str, str], list[Path]] = {}
    for planted in sorted(directory.glob("*_planted_*.json.gz")):
        m = re.match(r"(.+)_planted_([rp])\d+\.json\.gz$", planted.name)
        if m:
            groups.setdefault((m[1], m[2]), []).append(planted)
    print("| scenario | twin | rule | captures | predicted change, ms (median; per capture) | measured change, ms "
          "(median steps planted -> twin) | error |")
    print("|---|---|---|---|---|---|---|")
    for (name, letter), planted in groups.items():
        twin = "proposed" if letter == "p" else "fixed"
        fixed = [p.with_name(p.name.replace("_planted_", f"_{twin}_")) for p in planted]
        fixed = [f for f in fixed if f.exists()]
        if not fixed:
            continue  # repeated recordings of one variant (a same-scenario set), no pair
        rule = rules.get(fault_id(planted[0]))
        changes = []
        for path in planted:
            finding, _ = predicted(path, rule)
            if finding is not None and finding.prediction is not None:
                changes.append(-finding.prediction["saving_ns"])
        before = statistics.median(measured(p)[0] for p in planted)
        after = statistics.median(measured(f)[0] for f in fixed)
        real = after - before
        if not changes:
            print(f"| {name} | {twin} | {rule} | {len(planted)} / {len(fixed)} | not fired | {real / 1e6:+.2f} | |")
            continue
        pred = statistics.median(changes)
        err = "" if real == 0 else f"{100.0 * (pred - real) / abs(real):+.0f}%"
        print(f"| {name} | {twin} | {rule} | {len(planted)} / {len(fixed)} | {pred / 1e6:+.2f} "
              f"({', '.join(f'{c / 1e6:+.2f}' for c in changes)}) | {real / 1e6:+.2f} ({before / 1e6:.2f} -> "
              f"{after / 1e6:.2f}) | {err} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--golden", type=Path, default=REPO / "golden")
    parser.add_argument("--corpus", type=Path, default=REPO / ".." / "shared" / "corpus")
    parser.add_argument("--pairs", type=Path, default=None)
    parser.add_argument("--runs", type=Path, default=None)
    args = parser.parse_args()
    rules = owners()
    if args.runs:
        return runs(args.runs, rules)
    print("| pair | rule | basis | planted: median step -> predicted, ms (change; saving range) "
          "| fixed twin measured, ms (change) | prediction error vs measured change "
          "| steady windows planted / fixed, ms |")
    print("|---|---|---|---|---|---|---|")
    if args.pairs:
        for planted, fixed, fault in recorded_pairs(args.pairs):
            print(row(planted.name.split("_planted")[0], planted, fixed, rules.get(fault)), flush=True)
        return
    for planted, fixed, fault in pairs(args.golden):
        print(row(planted.name.replace("_planted.json.gz", ""), planted, fixed, rules.get(fault)), flush=True)
    nw0, nw4, rule = RESNET
    if (args.corpus / nw0).exists():
        print(row("resnet50 nw0 -> nw4", args.corpus / nw0, args.corpus / nw4, rule), flush=True)


if __name__ == "__main__":
    main()
