"""validate's common case compiled (loading/_cvalidate.c) keeps, repairs, drops and surveys exactly what
validate's Python loop alone does, on real traces and on entries of any shape (the Python loop is the
definition: the compiled one hands it every entry it would change or drop)."""
from __future__ import annotations

import copy
import dataclasses
import shutil

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import source, validate
from kineto_sql.loading.report import IngestReport
from tests.conftest import real_traces

pytestmark = pytest.mark.skipif(validate._cvalidate is None and not (shutil.which("cc") or shutil.which("gcc")),
                                reason="no C compiler here: validate runs its Python loop only")


def _run(entries: list, compiled: bool, monkeypatch) -> tuple:
    """validate_and_survey on a copy of `entries`: what it kept (and which entries those are), the survey
    (orders included) and the report."""
    entries = copy.deepcopy(entries)
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(validate, "_cvalidate", None)
        report = IngestReport(source="t.json", input_bytes=0)
        kept, survey = validate.validate_and_survey(entries, report)
    position = {id(e): i for i, e in enumerate(entries)}
    return (orjson.dumps(kept) if _dumpable(kept) else repr(kept),
            [position.get(id(e)) for e in kept], list(survey.phases.items()), list(survey.pids), list(survey.tids),
            sorted(map(repr, survey.zero_tid_pids)), survey.metadata_at, survey.odd_ids,
            [dataclasses.astuple(f) for f in report.fixes], repr(report.dropped))


def _dumpable(value) -> bool:
    try:
        orjson.dumps(value)
        return True
    except (TypeError, orjson.JSONEncodeError):
        return False


def test_the_compiled_validation_is_built():
    assert validate._cvalidate is not None, "pip install built no kineto_sql.loading._cvalidate although a C compiler is here"


@pytest.mark.parametrize("path", real_traces("hta_critical_path_alexnet.json.gz",
                                              "kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz",
                                              "hta_large_integer_rank70.pt.trace.json.gz", start=1),
                         ids=lambda p: p.name)
def test_the_same_result_on_real_traces(monkeypatch, path):
    if not path.exists():
        pytest.skip(f"{path} is not here (the shared corpus)")
    doc = orjson.loads(source.read_bytes(path))
    entries = doc["traceEvents"] if isinstance(doc, dict) else doc
    handed_back = []
    real = validate._validate_loop

    def counted(pairs, *rest):  # the entries the compiled loop hands to the Python loop
        pairs = list(pairs)
        handed_back.extend(pairs)
        return real(pairs, *rest)

    monkeypatch.setattr(validate, "_validate_loop", counted)
    compiled = _run(entries, True, monkeypatch)
    monkeypatch.undo()
    assert compiled[1]  # it kept events
    assert len(handed_back) < len(entries) / 2  # most of them in C: the compiled path is the one measured
    assert compiled == _run(entries, False, monkeypatch)


_NEAR_LIMITS = [validate.MAX_US, validate.MAX_US + 1, -validate.MAX_US - 1, 2**53, 2**53 + 1, 2**63, 10**30]
_NUMBER = st.one_of(st.integers(-10**6, 10**6), st.sampled_from(_NEAR_LIMITS),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float(2**53), 9.2e15, -0.0]))
_VALUE = st.one_of(st.none(), st.booleans(), _NUMBER, st.sampled_from(["", "0", "12.5", "1e400", "x", "t"]),
                   st.just([1]), st.just({"a": 1}))
_ENTRY = st.one_of(
    st.fixed_dictionaries(
        {"ph": st.one_of(st.sampled_from(["X", "s", "t", "f", "i", "I", "M", "C", "B", "XX"]), _VALUE)},
        optional={"ts": st.one_of(_NUMBER, _VALUE), "dur": st.one_of(_NUMBER, _VALUE), "id": _VALUE,
                  "pid": st.one_of(st.sampled_from([0, 1, 7, "Spans", "0"]), _VALUE),
                  "tid": st.one_of(st.sampled_from([0, 1, 7, "t"]), _VALUE),
                  "name": st.one_of(st.sampled_from(["aten::mm", "thread_name"]), _VALUE),
                  "cat": st.one_of(st.just("cpu_op"), _VALUE), "args": _VALUE,
                  "s": st.one_of(st.just("t"), _VALUE), "bp": st.one_of(st.just("e"), _VALUE)}),
    st.just({}), st.just([1]), st.just("event"), st.none())


@settings(max_examples=400, deadline=None)
@given(st.lists(_ENTRY, max_size=10))
def test_the_same_result_on_entries_of_any_shape(entries):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _run(entries, True, monkeypatch) == _run(entries, False, monkeypatch)
