"""The numbers behind the expert readings of the public corpus, computed from the raw Kineto JSON.

Deliberately independent of kineto-sql (no Perfetto, no project SQL): gzip + orjson + numpy, so a
reading cannot inherit a bug of the thing it checks. Every figure is a share of the analysis
windows (the ProfilerStep#N windows, else the whole capture), on the busiest device.

    python tests/readings/compute_readings.py [TRACE ...]          # table of every figure
    python tests/readings/compute_readings.py --toml TRACE          # the [numbers] block for a reading file

Definitions (an expert's, applicable to any trace):
- GPU busy: union of kernel, memcpy and memset intervals of one device (streams merged), clipped to the
  windows; the device with the most busy time is "the" device.
- Host waits: runtime calls that block the host until the device catches up: stream/device/event
  synchronize, synchronous cudaMemcpy / hipMemcpy / hipMemcpyWithStream, and cudaMemcpyAsync /
  hipMemcpyAsync whose copy touches pageable host memory (the driver stages it synchronously).
  `sync_wait_pct` is the union of those calls; `idle_in_sync_pct` is GPU idle inside them.
- `idle_after_sync_pct`: the drain a sync causes: GPU idle from the end of a host wait until the next
  device activity starts (the queue was emptied by the wait and must be refilled by the host).
- DataLoader: `enumerate(DataLoader)#...__next__` ranges; `idle_in_dataloader_pct` is GPU idle inside them.
- Communication: kernels whose name says nccl / rccl or names a collective (all_reduce, all_gather,
  reduce_scatter, all_to_all, sendrecv: custom all-reduce kernels); `exposed_comm_pct` is communication time on the
  device not covered by any other (compute or copy) activity of the same device.
- Launch-to-start delay: kernel start minus the start of the runtime call with the same correlation id
  (a short delay means an empty queue: the GPU waits for each launch).
- `optimizer_pct`: union of `Optimizer.step#...` ranges; `launches`: kernel launch calls in the windows.
- `malloc_pct`: union of device malloc/free runtime calls (cudaMalloc/cudaFree/hipMalloc/hipFree...).
- No kernels at all (a CPU trainer): `host_comm_pct` is the union of `gloo:` / `nccl:` / `hccl:` collectives
  on threads other than the stepping one, `host_comm_exposed_pct` the part of it not covered by the stepping
  thread's own ATen ops (what the step waits for); the regime is then communication-bound at >= 30%.
- `rule_regime` (see rule_regime()): the regime the numbers give by one fixed rule.
"""
from __future__ import annotations

import gzip
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
KERNEL_CATS = {"kernel", "Kernel"}
COPY_CATS = {"gpu_memcpy", "Memcpy"}
RUNTIME_CATS = {"cuda_runtime", "Runtime", "cuda_driver"}
HOST_RANGE_CATS = {"cpu_op", "user_annotation", "Operator"}
SYNC_CALLS = {
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
    "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize",
}
BLOCKING_COPY_CALLS = {"cudaMemcpy", "hipMemcpy", "hipMemcpyWithStream", "cudaMemcpy2D", "hipMemcpy2D"}
ASYNC_COPY_CALLS = {"cudaMemcpyAsync", "hipMemcpyAsync"}
MALLOC_CALLS = {"cudaMalloc", "cudaFree", "hipMalloc", "hipFree", "cudaMallocAsync", "cudaFreeAsync",
                "hipMallocAsync", "hipFreeAsync", "cudaHostAlloc", "hipHostMalloc", "cudaFreeHost",
                "hipHostFree"}
LAUNCH_CALLS = re.compile(r"(cuda|hip)(Ext)?(Module)?LaunchKernel|cuLaunchKernel")
# NCCL / RCCL kernels, and collectives written outside NCCL (symmetric-memory / custom all-reduce kernels)
COMM_KERNEL = re.compile(r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv", re.IGNORECASE)
STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
DATALOADER = re.compile(r"DataLoader.*__next__")
HOST_COLLECTIVE = re.compile(r"^(gloo|nccl|hccl):")


def _ns(us) -> int:
    return int(round(float(us) * 1000.0))


def merge(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Union of intervals as an (n, 2) int64 array of disjoint, sorted [start, end)."""
    if len(starts) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    order = np.lexsort((ends, starts))
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    group = np.cumsum(new) - 1
    out_s = s[new]
    out_e = np.zeros(len(out_s), dtype=np.int64)
    np.maximum.at(out_e, group, e)
    return np.stack([out_s, out_e], axis=1)


def from_list(pairs) -> np.ndarray:
    if not pairs:
        return np.zeros((0, 2), dtype=np.int64)
    a = np.asarray(pairs, dtype=np.int64)
    return merge(a[:, 0], a[:, 1])


def total(iv: np.ndarray) -> int:
    return int((iv[:, 1] - iv[:, 0]).sum()) if len(iv) else 0


def intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection of two unions (sorted sweep, linear)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i, 0], b[j, 0]), min(a[i, 1], b[j, 1])
        if lo < hi:
            out.append((lo, hi))
        if a[i, 1] < b[j, 1]:
            i += 1
        else:
            j += 1
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


def subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a minus b, both unions."""
    out, j = [], 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j, 1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k, 0] < e:
            if b[k, 0] > cur:
                out.append((cur, b[k, 0]))
            cur = max(cur, b[k, 1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


@dataclass
class Trace:
    path: Path
    events: list

    @classmethod
    def load(cls, path: Path) -> "Trace":
        raw = gzip.open(path).read() if str(path).endswith(".gz") else Path(path).read_bytes()
        doc = orjson.loads(raw)
        events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
        return cls(Path(path), [e for e in events if e.get("ph") == "X" and "ts" in e])


def _inside(windows: np.ndarray, ts: int) -> bool:
    k = int(np.searchsorted(windows[:, 0], ts, side="right")) - 1
    return k >= 0 and ts < windows[k, 1]


def _device(e) -> object:
    args = e.get("args") or {}
    return args.get("device", e.get("pid"))


def readings(trace: Trace) -> dict:
    ev = trace.events
    xs = [(e, _ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))) for e in ev]
    steps = sorted((s, t) for e, s, t in xs
                   if e.get("cat") in HOST_RANGE_CATS and STEP_NAME.match(str(e.get("name", ""))))
    span_events = [(s, t) for e, s, t in xs if e.get("cat") != "Trace"]
    if steps:
        windows, source = from_list(steps), "ProfilerStep"
    else:
        windows = from_list([(min(s for s, _ in span_events), max(t for _, t in span_events))]) \
            if span_events else np.zeros((0, 2), dtype=np.int64)
        source = "capture"
    window_ns = total(windows)

    gpu = [(e, s, t) for e, s, t in xs if e.get("cat") in GPU_CATS]
    by_device: dict = {}
    for e, s, t in gpu:
        by_device.setdefault(_device(e), []).append((e, s, t))
    busy_dev = {d: intersect(from_list([(s, t) for _, s, t in rows]), windows) for d, rows in by_device.items()}
    device = max(busy_dev, key=lambda d: (total(busy_dev[d]), str(d))) if busy_dev else None
    busy = busy_dev.get(device, np.zeros((0, 2), dtype=np.int64))
    idle = subtract(windows, busy)
    dev_rows = by_device.get(device, [])
    comm = from_list([(s, t) for e, s, t in dev_rows
                      if e.get("cat") in KERNEL_CATS and COMM_KERNEL.search(e.get("name", ""))])
    other = from_list([(s, t) for e, s, t in dev_rows
                       if not (e.get("cat") in KERNEL_CATS and COMM_KERNEL.search(e.get("name", "")))])
    comm_w = intersect(comm, windows)
    exposed = subtract(comm_w, other)

    copies_by_corr = {(e.get("args") or {}).get("correlation"): e.get("name", "") for e, _, _ in gpu
                      if e.get("cat") in COPY_CATS}
    waits, mallocs, launch_start, launches = [], [], {}, 0
    for e, s, t in xs:
        if e.get("cat") not in RUNTIME_CATS:
            continue
        name = e.get("name", "")
        corr = (e.get("args") or {}).get("correlation")
        if name in SYNC_CALLS or name in BLOCKING_COPY_CALLS:
            waits.append((s, t))
        elif name in ASYNC_COPY_CALLS and "Pageable" in copies_by_corr.get(corr, ""):
            waits.append((s, t))
        elif name in MALLOC_CALLS:
            mallocs.append((s, t))
        if LAUNCH_CALLS.search(name) and _inside(windows, s):
            launches += 1
        if corr is not None and (LAUNCH_CALLS.search(name) or name in ASYNC_COPY_CALLS):
            launch_start[corr] = s
    waits_iv = intersect(from_list(waits), windows)
    mallocs_iv = intersect(from_list(mallocs), windows)
    idle_in_sync = intersect(idle, waits_iv)
    after = []
    busy_starts = busy[:, 0] if len(busy) else np.zeros(0, dtype=np.int64)
    for _, t in waits_iv:
        k = np.searchsorted(busy_starts, t, side="left")
        nxt = busy_starts[k] if k < len(busy_starts) else None
        inside = len(busy) and k > 0 and busy[k - 1, 1] > t
        if nxt is not None and not inside:
            after.append((t, int(nxt)))
    idle_after_sync = intersect(intersect(from_list(after), idle), windows)

    optimizer = intersect(from_list([(s, t) for e, s, t in xs if e.get("cat") in HOST_RANGE_CATS
                                     and str(e.get("name", "")).startswith("Optimizer.step#")]), windows)
    loader = intersect(from_list([(s, t) for e, s, t in xs if e.get("cat") in HOST_RANGE_CATS
                                  and DATALOADER.search(str(e.get("name", "")))]), windows)
    idle_in_loader = intersect(idle, loader)

    kern = [(e, s, t) for e, s, t in dev_rows if e.get("cat") in KERNEL_CATS]
    in_win = [(e, s, t) for e, s, t in kern if _inside(windows, s)]
    durs = np.array([t - s for _, s, t in in_win], dtype=np.int64)
    delays = np.array([s - launch_start[(e.get("args") or {}).get("correlation")] for e, s, _ in in_win
                       if (e.get("args") or {}).get("correlation") in launch_start], dtype=np.int64)

    step_durs = [t - s for s, t in steps]

    # No device kernels at all (CPU trainer): collectives run on gloo's own threads; the part of them
    # the stepping thread does not cover with its own ATen work is what the step waits for.
    host_comm = host_exposed = None
    if not kern:
        step_tids = {e.get("tid") for e, _, _ in xs if e.get("cat") in HOST_RANGE_CATS
                     and STEP_NAME.match(str(e.get("name", "")))}
        coll = intersect(from_list([(s, t) for e, s, t in xs if HOST_COLLECTIVE.match(str(e.get("name", "")))
                                    and e.get("tid") not in step_tids]), windows)
        main_busy = from_list([(s, t) for e, s, t in xs if e.get("cat") in ("cpu_op", "Operator")
                               and e.get("tid") in step_tids and not STEP_NAME.match(str(e.get("name", "")))])
        host_comm, host_exposed = total(coll), total(subtract(coll, main_busy))

    def pct(n: int) -> float:
        return round(100.0 * n / window_ns, 1) if window_ns else 0.0

    busy_pct, idle_pct, exposed_pct = pct(total(busy)), pct(window_ns - total(busy)), pct(total(exposed))
    if host_exposed is not None:
        regime = "communication-bound" if pct(host_exposed) >= 30.0 else "host-bound"
    else:
        regime = rule_regime(busy_pct, idle_pct, exposed_pct)
    out = {
        "rule_regime": regime,
        "window_source": source,
        "windows": len(steps) if steps else 1,
        "window_ms": round(window_ns / 1e6, 3),
        "step_ms_median": round(float(np.median(step_durs)) / 1e6, 3) if step_durs else None,
        "first_step_ratio": round(step_durs[0] / float(np.median(step_durs[1:])), 2) if len(step_durs) > 2 else None,
        "gpu_busy_pct": busy_pct,
        "gpu_idle_pct": idle_pct,
        "sync_wait_pct": pct(total(waits_iv)),
        "idle_in_sync_pct": pct(total(idle_in_sync)),
        "idle_after_sync_pct": pct(total(idle_after_sync)),
        "dataloader_pct": pct(total(loader)),
        "idle_in_dataloader_pct": pct(total(idle_in_loader)),
        "comm_pct": pct(total(comm_w)),
        "exposed_comm_pct": pct(total(exposed)),
        "malloc_pct": pct(total(mallocs_iv)),
        "host_comm_pct": pct(host_comm) if host_comm is not None else None,
        "host_comm_exposed_pct": pct(host_exposed) if host_exposed is not None else None,
        "optimizer_pct": pct(total(optimizer)),
        "launches": launches,
        "kernels": int(len(durs)),
        "kernel_median_us": round(float(np.median(durs)) / 1e3, 2) if len(durs) else None,
        "kernels_under_10us_pct": round(100.0 * float((durs < 10_000).mean()), 1) if len(durs) else None,
        "launch_delay_median_us": round(float(np.median(delays)) / 1e3, 1) if len(delays) else None,
    }
    return out


def rule_regime(busy_pct: float, idle_pct: float, exposed_comm_pct: float) -> str:
    """The regime from the step's split into GPU compute, exposed communication and GPU idle.

    communication-bound: exposed collectives take >= 30% of the step and more than the GPU idles;
    device-bound: the GPU is busy >= 80% of the step; host-bound: the GPU idles >= 50% of it; else mixed.
    """
    if exposed_comm_pct >= 30.0 and exposed_comm_pct > idle_pct:
        return "communication-bound"
    if busy_pct >= 80.0:
        return "device-bound"
    if idle_pct >= 50.0:
        return "host-bound"
    return "mixed"


def readings_of(path) -> dict:
    """Every figure of one trace file, or of each file of a rank directory (keyed rank file name)."""
    path = Path(path)
    if path.is_dir():
        return {p.name: readings(Trace.load(p)) for p in sorted(path.glob("*.json*"))}
    return readings(Trace.load(path))


def _fmt(v) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def main(argv: list[str]) -> int:
    toml = "--toml" in argv
    paths = [Path(a) for a in argv if a != "--toml"]
    if not paths:
        corpus = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
        paths = sorted(p for p in corpus.resolve().iterdir() if p.name.endswith(".json.gz") or p.is_dir())
    for p in paths:
        try:
            r = readings_of(p)
        except (OSError, ValueError) as exc:
            print(f"{p}: cannot read it as a Kineto trace ({exc})", file=sys.stderr)
            return 1
        groups = r.items() if p.is_dir() else [(None, r)]
        for rank, vals in groups:
            label = p.name + (f"/{rank}" if rank else "")
            if toml:
                print(f"[numbers{'.' + rank.split('.')[0] if rank else ''}]  # {label}")
                for k, v in vals.items():
                    if v is not None:
                        print(f"{k} = {_fmt(v)}")
            else:
                print(label, " ".join(f"{k}={v}" for k, v in vals.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
