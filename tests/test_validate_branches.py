"""validate's loop takes X and flow events as Kineto writes them in branches of their own (validate.py), which
record a (pid, tid) pair's pid, tid and tid-0 process only when the pair is new. Here such events are mixed
with events of every other shape (a string tid, a string ts, a negative dur, a dropped entry, an instant, a
metadata event first) and the Survey and the scan are checked against a plain reading of the kept events."""
from __future__ import annotations

import msgspec
import pytest

from kineto_sql.loading.decode import UNSET, Event, KinetoEvent
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.scan import fast_ns
from kineto_sql.loading.validate import UINT32_MAX, validate_and_survey

BIG_PID, BIG_TID = 7_000_001, 8_000_001  # (ints above 256: each decoded event has an object of its own)


def _x(pid, tid, ts, dur, **more):
    return {"ph": "X", "name": f"op{ts}", "cat": "cpu_op", "pid": pid, "tid": tid, "ts": ts, "dur": dur, **more}


def _flow(ph, pid, tid, ts, flow_id, **more):
    return {"ph": ph, "name": "launch", "cat": "ac2g", "id": flow_id, "pid": pid, "tid": tid, "ts": ts, **more}


ENTRIES = [
    {"ph": "M", "name": "process_name", "pid": BIG_PID, "tid": 0, "args": {"name": "python"}},
    _x(BIG_PID, BIG_TID, 10, 5, args={"correlation": 1}),
    _x(BIG_PID, "worker", 11, 1),  # (a string tid: the general checks)
    _x(BIG_PID, BIG_TID, 11, 1),  # (the pair again)
    _flow("s", BIG_PID, BIG_TID, 10, 1),
    _x(2, 0, 1, 1),  # (tid 0 in process 2)
    _x(-1, 5, 2, 1),  # (a pid the importer cannot hold)
    _x(9, 9, 2.5, 0.5),
    _x(9, 9, "3", 1),  # (a numeric string ts)
    _flow("f", 2, 0, 1, "a", bp="e"),
    {"ph": "i", "name": "mark", "pid": 11, "tid": 12, "ts": 4, "s": "t"},
    _x(9, 9, 6, -1),  # (a negative dur, clamped)
    _x(BIG_PID, BIG_TID, 12, 1, args={"correlation": 2}),
]


# (decode.py decodes a trace with Kineto's fields only into KinetoEvent, any other into Event: both are checked)
KINDS = pytest.mark.parametrize("kind", [KinetoEvent, Event], ids=["KinetoEvent", "Event"])


def _events(entries: list, kind=Event) -> list:
    return msgspec.json.decode(msgspec.json.encode(entries), type=list[kind])


def _plain_survey(kept: list) -> dict:
    zero_phases = ("X", "i", "I", "s", "t", "f")

    def odd(value):
        return value is not UNSET and not (type(value) is int and 0 <= value <= UINT32_MAX)

    phases: dict = {}
    for e in kept:
        phases[e.ph] = phases.get(e.ph, 0) + 1
    return {
        "phases": phases,
        "pids": list(dict.fromkeys(e.pid for e in kept if e.pid is not UNSET)),
        "tids": list(dict.fromkeys(e.tid for e in kept if e.tid is not UNSET)),
        "zero_tid_pids": {e.pid for e in kept if e.tid == 0 and e.ph in zero_phases and e.pid not in (0, None, UNSET)},
        "metadata_at": [i for i, e in enumerate(kept) if e.ph == "M"],
        "odd_ids": [i for i, e in enumerate(kept) if odd(e.pid) or odd(e.tid)],
    }


@KINDS
@pytest.mark.parametrize("dropped", [False, True], ids=["all kept", "one dropped"])
def test_survey_and_scan_equal_a_plain_reading(dropped, kind):
    entries = _events(([{"ph": 5, "ts": 1}] if dropped else []) + ENTRIES, kind)  # (a ph that is no string: dropped)
    report = IngestReport(source="t", input_bytes=0)
    kept, survey = validate_and_survey(entries, report, scan=True)
    assert len(kept) == 13
    assert [(d.reason, d.count) for d in report.dropped] == ([("ph is missing or not a string", 1)] if dropped else [])
    assert sorted((f.kind, f.count) for f in report.fixes) == [("negative_dur_clamped", 1)]
    plain = _plain_survey(kept)
    assert survey.phases == plain["phases"] and list(survey.phases) == list(plain["phases"])
    assert list(survey.pids) == plain["pids"] == [BIG_PID, 2, -1, 9, 11]
    assert list(survey.tids) == plain["tids"] == [0, BIG_TID, "worker", 5, 9, 12]
    assert survey.zero_tid_pids == plain["zero_tid_pids"] == {2}
    assert survey.metadata_at == plain["metadata_at"] == [0]
    assert survey.odd_ids == plain["odd_ids"] == [2, 6]

    parts = survey.scan
    pushes = [(k, fast_ns(e.ts), -(fast_ns(e.dur) or 0) if e.ph == "X" else 0) for k, e in enumerate(kept)
              if e.ph == "X" or (e.ph == "i" and e.s == "t")]
    assert list(zip(parts.p_index, parts.p_ts, parts.p_negdur)) == pushes
    assert list(parts.p_placed) == [kept[k].ph == "X" for k, _, _ in pushes]
    assert parts.flow_indices == [k for k, e in enumerate(kept) if e.ph in ("s", "f")] == [4, 9]
    assert list(parts.with_args) == [1, 12]
    numbers = [parts.keys[(kept[k].pid, kept[k].tid)] for k in parts.p_index]
    assert parts.p_key == numbers
    assert [parts.ts_ns[k] for k in parts.p_index] == [ts for _, ts, _ in pushes]
    assert parts.ts_ns[0] is None  # (the metadata event)
    # every entry kept: the list itself comes back; one dropped: a new list without it
    assert (kept is entries) is (not dropped)


@KINDS
def test_one_object_per_distinct_pid_tid_and_name(kind):
    entries = _events([_x(BIG_PID, BIG_TID, ts, 1) for ts in range(0, 40, 2)]
                      + [_flow("s", BIG_PID, BIG_TID, ts, ts) for ts in range(0, 40, 2)], kind)
    assert len({id(e.pid) for e in entries}) == 40  # (as decoded: one object each)
    kept, _ = validate_and_survey(entries, IngestReport(source="t", input_bytes=0), scan=True)
    assert len({id(e.pid) for e in kept}) == 1 and len({id(e.tid) for e in kept}) == 1
    assert len({id(e.cat) for e in kept if e.ph == "X"}) == 1 and len({id(e.ph) for e in kept}) == 2
    assert [e.pid for e in kept] == [BIG_PID] * 40 and [e.tid for e in kept] == [BIG_TID] * 40
