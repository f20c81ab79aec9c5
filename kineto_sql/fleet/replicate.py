"""A bigger job from a real one: every rank file of RANK_DIR copied COPIES times as new ranks.

Copy k (k = 0..COPIES-1) of the rank r of an N-rank job becomes rank k*N + r: its `distributedInfo` says
so (rank, world_size = COPIES*N), and every timestamp of copy k moves by -k*SHIFT_US (clock skew between
the hosts of the copies, 10 us by default: far below the rank-to-rank lags of a real job, so a straggler
of the original stays the straggler, and its copy 0 stays the latest of its copies). The events are
otherwise the original's, so each copy reads like its original rank.

    python -m kineto_sql.fleet.replicate RANK_DIR COPIES OUT_DIR [--shift-us 10]
"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from kineto_sql.loading.source import trace_files_in

DEFAULT_SHIFT_US = 10


def _read(path: Path) -> dict:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = json.loads(data)
    return trace if isinstance(trace, dict) else {"traceEvents": trace}


def _rank(trace: dict, fallback: int | None) -> int:
    info = trace.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"]
    if fallback is None:
        raise ValueError("a rank file has no distributedInfo rank and no rank in its name")
    return fallback


def shifted(trace: dict, rank: int, world: int, shift_us: float) -> dict:
    """The trace as rank `rank` of a `world`-rank job, every timestamp moved by `shift_us`."""
    out = dict(trace)
    info = dict(trace.get("distributedInfo") or {})
    info.update(rank=rank, world_size=world)
    out["distributedInfo"] = info
    events = []
    for e in trace.get("traceEvents") or []:
        ts = e.get("ts")
        if shift_us and isinstance(ts, (int, float)) and not isinstance(ts, bool):
            e = dict(e)
            e["ts"] = ts + shift_us
        events.append(e)
    out["traceEvents"] = events
    return out


def replicate_ranks(rank_dir, copies: int, out_dir, shift_us: float = DEFAULT_SHIFT_US) -> list[Path]:
    """Writes COPIES x the ranks of `rank_dir` into `out_dir` as rank-NNNN.pt.trace.json.gz; returns them."""
    files = trace_files_in(Path(rank_dir))
    traces = [_read(f.path) for f in files]
    originals = sorted(((_rank(t, f.rank_from_name), t) for f, t in zip(files, traces)), key=lambda x: x[0])
    n = len(originals)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for k in range(copies):
        for r, trace in originals:
            rank = k * n + r
            path = out_dir / f"rank-{rank:04d}.pt.trace.json.gz"
            data = json.dumps(shifted(trace, rank, copies * n, -k * shift_us)).encode()
            path.write_bytes(gzip.compress(data, compresslevel=1, mtime=0))
            written.append(path)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rank_dir")
    parser.add_argument("copies", type=int)
    parser.add_argument("out_dir")
    parser.add_argument("--shift-us", type=float, default=DEFAULT_SHIFT_US)
    args = parser.parse_args(argv)
    files = replicate_ranks(args.rank_dir, args.copies, args.out_dir, args.shift_us)
    print(f"wrote {len(files)} rank files to {args.out_dir}")


if __name__ == "__main__":
    main()
