"""Replicate a Kineto trace N times along time: what a longer capture of the same job looks like.

Copy k (k = 0..N-1) of every event is shifted by k times the capture span (plus a 1 ms gap), and gets
fresh identities: `External id`, `correlation`, `Profiler Event Index`, python ids and flow ids are
offset by k times (largest value + 1), and `ProfilerStep#N` becomes `ProfilerStep#(N + k * steps)`.
Metadata events (`ph: M`) and the top-level keys are kept once.

    python bench/replicate.py TRACE N OUT.json[.gz]
"""
from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

ID_ARGS = ("External id", "external id", "correlation", "Profiler Event Index", "Python id",
           "Python parent id", "Ev Idx", "Fwd thread id")
GAP_US = 1000
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def _read(path: Path) -> dict:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = json.loads(data)
    return trace if isinstance(trace, dict) else {"traceEvents": trace}


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def replicate(trace: dict, copies: int) -> dict:
    result = {key: value for key, value in trace.items() if key != "traceEvents"}
    result["traceEvents"] = [e for part in replicated_events(trace, copies) for e in part]
    return result


def replicated_events(trace: dict, copies: int):
    """The replica's events, one list at a time: the untimed events, then each copy (one copy's objects
    alive at once, so a replica far larger than memory can be written: write_streamed)."""
    events = trace.get("traceEvents") or []
    timed = [e for e in events if e.get("ph") != "M" and _num(e.get("ts")) is not None]
    start = min(e["ts"] for e in timed)
    end = max(e["ts"] + (_num(e.get("dur")) or 0) for e in timed)
    shift = (end - start) + GAP_US
    # "Fwd thread id" is a thread id, not an identity: leave it.
    id_keys = [k for k in ID_ARGS if k != "Fwd thread id"]
    top = {k: 0 for k in id_keys}
    top_flow = 0
    steps = set()
    for e in timed:
        args = e.get("args") or {}
        for k in id_keys:
            v = _num(args.get(k))
            if v is not None and v > top[k]:
                top[k] = int(v)
        if e.get("ph") in ("s", "f", "t") and _num(e.get("id")) is not None:
            top_flow = max(top_flow, int(e["id"]))
        m = STEP.match(str(e.get("name", "")))
        if m:
            steps.add(int(m.group(1)))
    step_span = (max(steps) - min(steps) + 1) if steps else 0
    yield [e for e in events if e.get("ph") == "M" or _num(e.get("ts")) is None]
    for k in range(copies):
        if k == 0:
            yield timed
            continue
        out = []
        for e in timed:
            c = dict(e)
            c["ts"] = e["ts"] + k * shift
            if "args" in e and isinstance(e["args"], dict):
                args = dict(e["args"])
                for key in id_keys:
                    v = _num(args.get(key))
                    if v is not None and v >= 0:
                        args[key] = int(v) + k * (top[key] + 1)
                c["args"] = args
            if e.get("ph") in ("s", "f", "t") and _num(e.get("id")) is not None:
                c["id"] = int(e["id"]) + k * (top_flow + 1)
            m = STEP.match(str(e.get("name", "")))
            if m:
                c["name"] = f"ProfilerStep#{int(m.group(1)) + k * step_span}"
            out.append(c)
        yield out


def write(trace: dict, path: Path) -> None:
    data = json.dumps(trace, separators=(",", ":")).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1)
    path.write_bytes(data)


def write_streamed(trace: dict, copies: int, path: Path) -> None:
    """write(replicate(trace, copies), path), byte for byte, one copy in memory at a time."""
    head = {key: value for key, value in trace.items() if key != "traceEvents"}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb", **({"compresslevel": 1} if path.suffix == ".gz" else {})) as out:
        text = json.dumps(head, separators=(",", ":"))
        out.write((text[:-1] + ("," if head else "") + '"traceEvents":[').encode())
        first = True
        for part in replicated_events(trace, copies):
            if not part:
                continue
            body = json.dumps(part, separators=(",", ":"))[1:-1]
            out.write(((",") if not first else "").encode() + body.encode())
            first = False
        out.write(b"]}")


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, copies, dst = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    write_streamed(_read(src), copies, dst)


if __name__ == "__main__":
    main()
