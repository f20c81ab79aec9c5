"""prepare() does only the work a trace needs, and the shortcuts change nothing the engine holds.

Each shortcut is tested both ways: where it applies (the pass is skipped, the result is the same as the
full pass) and where it must not (the trace is still fixed exactly as before).
"""
from __future__ import annotations

import gc
import json
from pathlib import Path

from kineto_sql.loading.prepare import prepare
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep


def _overlapping(n: int = 4) -> bytes:
    """Launch/kernel pairs where kernel 1 overlaps kernel 0 on its stream: the trace is rewritten."""
    events = [ProfilerStep(1, ts_us=0, dur_us=100 * n + 100)]
    for i in range(n):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (30 if i == 1 else 0),
                             dur_us=80 if i == 0 else 60))
    return json.dumps(KinetoTrace(events).to_json()).encode()


def test_the_collector_is_paused_while_preparing_and_the_held_events_frozen_until_written():
    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    prepared = prepare(_overlapping(), Path("t.json"))
    assert prepared.report.rewritten and prepared.report.fix_count("overlap_lane") == 1
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen_before  # the held events are out of the collector's walks
    text = b"".join(prepared.chunks())
    assert gc.get_freeze_count() == 0  # written out: back to the collector
    assert sum(e["ph"] == "X" for e in json.loads(text)["traceEvents"]) == 9


def test_an_unwritten_prepared_trace_unfreezes_when_dropped():
    prepared = prepare(_overlapping(), Path("t.json"))
    assert gc.get_freeze_count() > 0
    del prepared
    assert gc.get_freeze_count() == 0


def test_an_unchanged_trace_freezes_nothing_and_a_refused_one_leaves_the_collector_on():
    raw = json.dumps(KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=100), Launch(correlation=1, ts_us=10, dur_us=8),
                                  Kernel(correlation=1, ts_us=50, dur_us=30)]).to_json()).encode()
    prepared = prepare(raw, Path("t.json"))
    assert not prepared.report.rewritten and prepared.data == raw
    assert gc.get_freeze_count() == 0
    try:
        prepare(b'{"traceEvents": []}', Path("t.json"))
    except Exception as exc:  # noqa: BLE001 - the refusal itself is tested in test_validation
        assert "empty event list" in str(exc)
    assert gc.isenabled()
