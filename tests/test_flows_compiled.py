"""The flow loops compiled (loading/_cflows.c) give what the Python loops of flows.py give, on real traces
and on flow events of any shape; the module is built wherever a C compiler is."""
from __future__ import annotations

import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import flows
from kineto_sql.loading.scan import scan_events_python
from tests.conftest import arguments_of, real_traces

pytestmark = pytest.mark.skipif(flows._cflows is None and not (shutil.which("cc") or shutil.which("gcc")),
                                reason="no C compiler here: the flow loops run in Python only")


def _answers(events, scan, moved) -> tuple:
    pairs = flows._arrows(events, scan.flow_indices, scan.ts_ns)
    ids = {key[0] for key in list(pairs)[::3]}  # the arrows of some ids only, as bind_flows asks for them
    return (pairs, flows._halves_and_reorder(events, pairs, scan.ts_ns), flows._intended_and_at_risk(events, scan, moved),
            flows._arrow_summary(events, scan.flow_indices, scan.ts_ns, ids), ids)


def _python_answers(monkeypatch, events, scan, moved) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(flows, "_cflows", None)
        return _answers(events, scan, moved)


def _assert_same(compiled: tuple, python: tuple) -> None:
    assert compiled == python
    (pairs, (halves, reorder), (intended_of, at_risk), summary, ids) = compiled
    # the counts without the arrows are the counts over them; the arrows of some ids are those arrows, in order
    assert summary[:2] == (halves, reorder) and type(summary[0]) is int
    assert list(summary[2].items()) == [(key, members) for key, members in pairs.items() if key[0] in ids]
    assert list(summary[2].items()) == list(python[3][2].items())
    # the same order and the same types (1 == True would hide a conversion)
    assert list(pairs.items()) == list(python[0].items())
    assert [type(k) for key in pairs for k in key] == [type(k) for key in python[0] for k in key]
    assert list(intended_of.items()) == list(python[2][0].items()) and at_risk == python[2][1]
    assert type(halves) is int


def test_the_compiled_flow_loops_are_built():
    assert flows._cflows is not None, "pip install built no kineto_sql.loading._cflows although a C compiler is here"


@pytest.mark.parametrize("path", real_traces("hta_trace_diff_control.json.gz", "tl_h100_bert_small.json.gz",
                                              "hta_ns_resolution_rank0.pt.trace.json.gz"), ids=lambda p: p.name)
def test_the_same_answers_on_real_traces(monkeypatch, path):
    # (bind_flows reorders the list it is given: its events are copied at the call)
    events, scan, moved = arguments_of(monkeypatch, "bind_flows", path,
                                       lambda events, scan, moved, report: (list(events), scan, set(moved)))
    compiled = _answers(events, scan, moved)
    _assert_same(compiled, _python_answers(monkeypatch, events, scan, moved))
    if scan.flow_indices:  # a trace with flows: the compiled loops had work to do
        assert compiled[0]
    if "_control" in path.name or "bert" in path.name:  # GPU traces: kernels and launches carry correlations
        assert len(compiled[2][0]) > 100


_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "1", "0x2", "e", "s"]))
_FLOW = st.fixed_dictionaries(
    {"ph": st.sampled_from(["s", "t", "f"]), "pid": st.integers(0, 2), "tid": st.integers(0, 2),
     "ts": st.one_of(st.integers(0, 3), st.just(1.5), st.none())},
    optional={"id": _VALUE, "cat": _VALUE, "name": _VALUE, "bp": _VALUE})
_SLICE = st.fixed_dictionaries(
    {"ph": st.just("X"), "pid": st.integers(0, 2), "tid": st.integers(0, 2), "ts": st.integers(0, 3),
     "dur": st.integers(0, 3)},
    optional={"args": st.fixed_dictionaries({"correlation": st.integers(-3, 3)})})


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_FLOW, _SLICE), max_size=14), st.sets(st.integers(0, 13), max_size=3))
def test_the_same_answers_or_errors_on_flow_events_of_any_shape(events, moved):
    """Either the compiled loops give the Python loops' answers, or the error the Python loops raise (a
    flow without id)."""
    scan = scan_events_python(events)
    with pytest.MonkeyPatch.context() as m:
        try:
            python = _python_answers(m, events, scan, moved)
        except Exception as error:  # noqa: BLE001 - whatever the Python loops raise, bind_flows raises
            with pytest.raises(type(error)):
                _answers(events, scan, moved)
            return
    _assert_same(_answers(events, scan, moved), python)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.sets(st.integers(0, max(n - 1, 0)), max_size=n).map(sorted), st.randoms(use_true_random=False))))
def test_moving_to_the_end_in_place_is_the_rebuilt_list(case):
    """The compiled in-place surgery leaves the list the Python rebuild leaves, and every event it drops
    loses the list's reference (and no other)."""
    import sys

    n, removed, rng = case
    removed = [i for i in removed if i < n]
    tail = sorted(rng.sample(removed, rng.randint(0, len(removed))))
    events = [object() for _ in range(n)]
    before = [sys.getrefcount(e) for e in events]
    compiled, python = list(events), list(events)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(flows, "_cflows", None)
        flows._move_to_end(python, removed, tail)
    flows._move_to_end(compiled, removed, tail)
    assert compiled == python
    assert len(compiled) == n - len(removed) + len(tail)
    del python
    kept = {id(e) for e in compiled}
    assert [sys.getrefcount(e) for e in events] == [count + (id(e) in kept) for e, count in zip(events, before)]


@pytest.mark.parametrize("removed, tail", [([2, 1], []), ([1, 1], []), ([5], []), ([1, 2], [3]), ([1, 3], [2])])
def test_moving_to_the_end_refuses_indices_it_cannot_follow(removed, tail):
    events = list(range(5))
    with pytest.raises(ValueError):
        flows._cflows.move_to_end(events, removed, tail)
    assert events == list(range(5))  # checked before anything moved
