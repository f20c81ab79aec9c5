"""What each of diagnose's queries costs, on many traces, and how it grows with the capture's length.

Every trace runs in a fresh process (bench/profile_diagnose.py: one load, then every module and query
diagnose runs, each timed on its own, the what-if part included). Per trace it prints the whole process
tree's wall and CPU seconds (os.wait4: the loader's children are in it), and per query its CPU seconds and
share of the queries' CPU. For every replicated trace (bench/replicate.py: the capture repeated N times
along time) it prints each query's CPU growth from 1x to Nx and flags the queries that grow faster than
GROWTH_FLAG x N / 4 (4.4x at 4x: linear plus 10%) among those above NOISE_S at 1x.

Traces: the corpus files over --min-mb (compressed size on disk), --golden adds the golden set, and
--replicate K adds N-times replications of the K largest corpus traces (written under --work).

    python bench/query_costs.py [--min-mb 1] [--golden] [--replicate 3] [--factor 4] [--only SUBSTR ...]
                                [--top 12] [--json OUT.json] [--work DIR]

CPU seconds are what a query costs when other work shares the machine; wall seconds on a shared machine
are not. Run it with `nice`: every trace is loaded once, the replications are 4x the largest traces.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import CORPUS, compile_checkout, run_process  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden" / "traces"
PROFILE = Path(__file__).resolve().parent / "profile_diagnose.py"
REPLICATE = Path(__file__).resolve().parent / "replicate.py"
GROWTH_FLAG = 4.4
# a query under this many CPU seconds at 1x is timer noise: its growth is printed, never flagged
NOISE_S = 0.05


def corpus_traces(min_mb: float) -> list[Path]:
    return sorted((p for p in CORPUS.rglob("*.json.gz") if p.stat().st_size > min_mb * 2**20),
                  key=lambda p: -p.stat().st_size)


def golden_traces() -> list[Path]:
    return sorted(GOLDEN.rglob("*.json.gz"), key=lambda p: -p.stat().st_size)


def replicas(traces: list[Path], factor: int, work: Path) -> dict[Path, Path]:
    """original -> its `factor`-times replication (made once, kept under `work`)."""
    out = {}
    for trace in traces:
        target = work / f"{trace.name.removesuffix('.json.gz')}_x{factor}.json.gz"
        if not target.exists():
            subprocess.run([sys.executable, str(REPLICATE), str(trace), str(factor), str(target)], check=True,
                           stdout=subprocess.DEVNULL)
        out[trace] = target
    return out


def measure(trace: Path, work: Path) -> dict:
    """One fresh process: profile_diagnose's stages plus the whole tree's wall and CPU."""
    out = work / "stages.json"
    figures, _ = run_process([sys.executable, str(PROFILE), str(trace), "--json", str(out)], timeout=3600,
                             sample_pss=False)
    doc = json.loads(out.read_text())
    doc.update(tree_wall_s=figures["wall_s"], tree_cpu_s=figures["cpu_s"], peak_rss_mb=figures["peak_rss_mb"],
               trace=str(trace), size_mb=trace.stat().st_size / 2**20)
    return doc


def diagnose_cpu(doc: dict) -> float:
    """The CPU of the stages diagnose runs on this trace (the what-if part only where it builds the graph)."""
    return sum(s["cpu_s"] for s in doc["stages"].values() if s["diagnose_runs_it"])


def print_trace(doc: dict, top: int) -> None:
    queries = diagnose_cpu(doc)
    print(f"\n{Path(doc['trace']).name} ({doc['size_mb']:.1f} MB gz): process tree {doc['tree_wall_s']:.2f} s wall, "
          f"{doc['tree_cpu_s']:.2f} s CPU, peak RSS {doc['peak_rss_mb']:.0f} MB; load {doc['load_s']:.2f} s wall; "
          f"queries diagnose runs {queries:.2f} s CPU (what-if graph "
          f"{'built' if doc['graph_needed'] else 'skipped'})")
    print(f"  {'cpu s':>7}  {'share':>6}  {'wall s':>7}  query / module")
    for name, s in sorted(doc["stages"].items(), key=lambda kv: -kv[1]["cpu_s"])[:top]:
        share = 100 * s["cpu_s"] / queries if queries and s["diagnose_runs_it"] else None
        print(f"  {s['cpu_s']:7.2f}  {'' if share is None else f'{share:5.1f}%':>6}  {s['wall_s']:7.2f}  {name}"
              f"{'' if s['diagnose_runs_it'] else '  (not run by diagnose here)'}")


def growth(one: dict, many: dict, factor: int, top: int) -> list[str]:
    """Prints each query's CPU 1x -> Nx, largest Nx first; returns the flagged ones."""
    limit = GROWTH_FLAG * factor / 4
    print(f"\n{Path(one['trace']).name}: 1x -> {factor}x (process tree CPU {one['tree_cpu_s']:.2f} -> "
          f"{many['tree_cpu_s']:.2f} s, x{many['tree_cpu_s'] / one['tree_cpu_s']:.2f}; wall {one['tree_wall_s']:.2f} -> "
          f"{many['tree_wall_s']:.2f} s)")
    print(f"  {'1x cpu':>7}  {f'{factor}x cpu':>7}  {'growth':>6}  query / module")
    flagged = []
    for name, s in sorted(many["stages"].items(), key=lambda kv: -kv[1]["cpu_s"]):
        base = one["stages"].get(name, {}).get("cpu_s")
        if base is None:
            continue
        g = s["cpu_s"] / base if base > 0 else float("inf")
        flag = base >= NOISE_S and g > limit
        if flag:
            flagged.append(f"{name} on {Path(one['trace']).name}: x{g:.1f} ({base:.2f} -> {s['cpu_s']:.2f} s)")
        if flag or top > 0:
            top -= 1
            print(f"  {base:7.2f}  {s['cpu_s']:7.2f}  {g:6.1f}  {name}{'  SUPERLINEAR' if flag else ''}"
                  f"{'' if base >= NOISE_S else '  (under noise floor)'}")
    return flagged


def summary(docs: list[dict], top: int) -> None:
    totals: dict[str, float] = {}
    for doc in docs:
        for name, s in doc["stages"].items():
            if s["diagnose_runs_it"]:
                totals[name] = totals.get(name, 0.0) + s["cpu_s"]
    whole = sum(totals.values())
    print(f"\nall {len(docs)} traces: queries diagnose runs {whole:.2f} s CPU; "
          f"process trees {sum(d['tree_cpu_s'] for d in docs):.2f} s CPU, {sum(d['tree_wall_s'] for d in docs):.2f} s wall")
    for name, cpu in sorted(totals.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {cpu:7.2f}  {100 * cpu / whole:5.1f}%  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-mb", type=float, default=1.0, help="corpus traces over this size (gz), default 1")
    ap.add_argument("--golden", action="store_true", help="add the golden set")
    ap.add_argument("--replicate", type=int, default=3, help="replicate the K largest corpus traces (default 3)")
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--only", nargs="*", help="keep the traces whose path holds one of these strings")
    ap.add_argument("--top", type=int, default=12, help="queries printed per trace")
    ap.add_argument("--graph-always", action="store_true",
                    help="count the what-if stages on every trace (diagnose before it built the graph only when needed)")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    ap.add_argument("--work", type=Path, help="where replications are written (default a temporary folder)")
    args = ap.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"{CORPUS}: no corpus here (it lives in ../shared/corpus beside the checkout)")
    compile_checkout()
    work = args.work or Path(tempfile.mkdtemp(prefix="kineto_sql_costs_"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = corpus_traces(args.min_mb)
    traces = corpus + (golden_traces() if args.golden else [])
    if args.only:
        traces = [t for t in traces if any(s in str(t) for s in args.only)]
    largest = [t for t in corpus if t in traces][:args.replicate]
    copies = replicas(largest, args.factor, work)
    docs: dict[Path, dict] = {}
    for trace in traces + list(copies.values()):
        docs[trace] = measure(trace, work)
        if args.graph_always:
            for stage in docs[trace]["stages"].values():
                stage["diagnose_runs_it"] = True
        print_trace(docs[trace], args.top)
        sys.stdout.flush()
    flagged = []
    for original, copy in copies.items():
        flagged += growth(docs[original], docs[copy], args.factor, args.top)
    summary(list(docs.values()), 2 * args.top)
    print(f"\nsuperlinear (growth > {GROWTH_FLAG * args.factor / 4:.1f}x from 1x to {args.factor}x, "
          f"above {NOISE_S} s at 1x): " + ("; ".join(flagged) if flagged else "none"))
    if args.json:
        args.json.write_text(json.dumps({"factor": args.factor, "flagged": flagged,
                                         "traces": list(docs.values()),
                                         "replicas": {str(o): str(c) for o, c in copies.items()}}, indent=1))


if __name__ == "__main__":
    main()
