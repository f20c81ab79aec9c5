"""The scan the v52 fixes use is gathered in validate's loop by the ids as written, then numbered by thread
with the ids the fixes left (scan.ScanParts.finish, ids.final_ids). It must be the scan of the events as
they finally are: checked here against a plain reading of the final events, on traces whose ids the fixes
change (a string pid equal to an int one, a negative tid, a null pid, tid 0 beside the main thread)."""
from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kineto_sql.loading import engine_quirks, prepare
from kineto_sql.loading.decode import UNSET
from kineto_sql.loading.scan import fast_ns


def _reference(events: list) -> dict:
    """Tracks numbered by first appearance of (pid, engine tid) over the events the scan looks at."""
    tracks, track_of, pushes, flows = [], {}, [], []
    for i, e in enumerate(events):
        ph, s = e.ph, e.s
        if not (ph == "X" or ph in ("s", "t", "f") or (ph in ("i", "I") and (s is UNSET or s == "t"))):
            continue
        pid = None if e.pid is UNSET else e.pid
        tid = None if e.tid is UNSET else e.tid
        key = (pid, pid if (not tid and pid) else tid)
        if key not in tracks:
            tracks.append(key)
        track_of.setdefault((pid, tid), tracks.index(key))
        ts = fast_ns(e.ts)
        if ph in ("s", "t", "f"):
            flows.append((i, tracks.index(key)))
        else:
            pushes.append((i, tracks.index(key), ts))
    return {"tracks": tracks, "track_of": track_of, "pushes": pushes, "flows": flows}


def _scan_of(trace: dict, monkeypatch) -> tuple:
    seen = {}
    real = prepare.split_overlaps

    def spy(events, scan, report, metadata_events=None):
        seen["scan"], seen["events"] = scan, list(events)
        return real(events, scan, report, metadata_events)

    monkeypatch.setattr(prepare, "split_overlaps", spy)
    prepare.prepare(msgspec.json.encode(trace), Path("t.json"))
    return seen["scan"], seen["events"]


def _x(pid, tid, ts, dur, **more):
    return {"ph": "X", "name": f"x{ts}", "pid": pid, "tid": tid, "ts": ts, "dur": dur, **more}


TRACES = {
    "string_pid_joins_int_pid": [_x(5, 1, 10, 5), _x("5", 1, 12, 1), _x("gpu", 7, 11, 2), _x(5, 2, 1, 1)],
    "negative_tid_with_flows": [
        _x(1, -3, 10, 5, args={"correlation": 9}), {"ph": "s", "id": 9, "pid": 1, "tid": -3, "ts": 10, "cat": "c",
                                                      "name": "f"},
        _x(1, 4, 20, 5, args={"correlation": 9}), {"ph": "f", "id": 9, "pid": 1, "tid": 4, "ts": 20, "cat": "c",
                                                     "name": "f", "bp": "e"},
        _x(1, -3, 12, 1)],
    "tid_zero_beside_main_thread": [_x(3, 0, 10, 5), _x(3, 3, 11, 1), _x(3, 0, 12, 1), _x(4, 0, 1, 1),
                                    {"ph": "i", "name": "i", "pid": 3, "tid": 0, "ts": 13, "s": "t"}],
    "null_pid_and_missing_tid": [_x(None, 1, 10, 5), {"ph": "X", "name": "m", "pid": 2, "ts": 3, "dur": 1},
                                 _x(2, 2, 4, 1), _x(None, 1, 11, 1)],
}


@pytest.mark.skipif(not engine_quirks.drops_overlapping_slices(), reason="the scan runs only for an engine "
                    "that drops overlapping slices (engine_quirks.py)")
@pytest.mark.parametrize("name", sorted(TRACES))
def test_scan_is_the_final_events_scan(name, monkeypatch):
    scan, events = _scan_of({"traceEvents": TRACES[name]}, monkeypatch)
    want = _reference(events)
    assert scan.tracks == want["tracks"]
    assert scan.track_of == want["track_of"]
    assert list(zip(scan.push_index, scan.push_track, scan.push_ts)) == want["pushes"]
    assert list(zip(scan.flow_indices, scan.flow_tracks)) == want["flows"]
    assert len(scan.tracks) >= 2  # (each case has several threads, so numbering order is tested)


def _stack_reading(rows: list) -> bool:
    """The lane packing's first lane, plainly: every row fits on one stack of open ends."""
    stack = []
    for ts, negdur, _ in rows:
        while stack and stack[-1] <= ts:
            stack.pop()
        if stack and ts - negdur > stack[-1]:
            return False
        stack.append(ts - negdur)
    return True


def test_rows_nest_reads_as_one_stack():
    import random

    from kineto_sql.loading.scan import _rows_nest

    rng = random.Random(44)
    outcomes = []
    for _ in range(5000):  # (small times and durations: equal starts and ends, 0-duration slices, touching ones)
        rows = sorted((rng.randint(0, 20), -rng.randint(0, 10), i) for i in range(rng.randint(0, 8)))
        outcomes.append(_stack_reading(rows))
        assert _rows_nest(rows) == outcomes[-1], rows
    assert 1000 < sum(outcomes) < 4000  # (both outcomes, often)
