"""tests/trace_groups.py: which trace a test reads, and the scheduler that keeps a trace's tests together."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kineto_sql.catalog.cases import TraceCheck
from tests import trace_groups
from tests.conftest import CORPUS, GOLDEN

TRACES = GOLDEN / "traces"


def _group(value):
    return trace_groups.trace_group(value, TRACES.resolve(), CORPUS)


def test_a_trace_parameter_names_its_group():
    assert _group(TRACES / "gc_stall_planted.json.gz") == "golden/gc_stall_planted.json.gz"
    check = TraceCheck("catalog.gc_gil_stall", "", "golden:gc_stall_planted", "fires_on", None, None)
    assert _group(check) == "golden/gc_stall_planted.json.gz"
    # a rank file belongs to its directory's group, as does a reading's Case naming the directory
    assert _group(TRACES / "ddp_allreduce_planted" / "rank0.json.gz") == "golden/ddp_allreduce_planted"
    assert _group(SimpleNamespace(target=CORPUS / "dlrm_8rank")) == "corpus/dlrm_8rank"
    assert _group(CORPUS / "dlrm_8rank" / "worker3.pt.trace.json.gz") == "corpus/dlrm_8rank"


def test_a_trace_file_name_names_its_group():
    # a test parametrized by the names of corpus files (tests/test_whatif_traces.py) reads those traces
    assert _group("hta_trace_diff_control.json.gz") == "corpus/hta_trace_diff_control.json.gz"
    assert _group("gc_stall_planted.json.gz") == "golden/gc_stall_planted.json.gz"
    assert _group("dlrm_8rank") == "corpus/dlrm_8rank"
    assert _group("no_such_trace.json.gz") is None and _group("") is None and _group("..") is None


def test_a_reads_trace_mark_groups_a_test_without_a_trace_parameter(tmp_path):
    def item(nodeid, *marks, **params):
        return SimpleNamespace(nodeid=nodeid, callspec=SimpleNamespace(params=params), _fixtureinfo=None,
                               iter_markers=lambda name: [m for m in marks if m.name == name],
                               add_marker=lambda m: None)

    trace = CORPUS / "hta_trace_diff_control.json.gz"
    config = SimpleNamespace(workerinput={trace_groups.WORKER_KEY: str(tmp_path), "workerid": "gw0"})
    items = [item("t.py::a", pytest.mark.reads_trace(trace).mark), item("t.py::b[x]", path=trace),
             item("t.py::c"), item("t.py::d", pytest.mark.reads_trace(trace).mark, path=TRACES / "gc_stall_planted.json.gz")]
    trace_groups.mark_items(config, items, TRACES.resolve(), CORPUS)
    # d names two traces: no group of one trace
    assert json.loads((tmp_path / "gw0.json").read_text()) == {
        "t.py::a": "corpus/hta_trace_diff_control.json.gz", "t.py::b[x]": "corpus/hta_trace_diff_control.json.gz"}


def test_other_parameters_have_no_group():
    assert _group("catalog.gc_gil_stall") is None
    assert _group(Path("/tmp/elsewhere.json.gz")) is None
    assert _group({"path": "traces/gc_stall_planted.json.gz"}) is None


def test_the_scheduler_takes_work_units_from_the_workers_maps(tmp_path):
    (tmp_path / "gw0.json").write_text(json.dumps({"t.py::a[x]": "golden/x", "t.py::b[x]": "golden/x"}))
    config = SimpleNamespace(_kineto_sql_trace_groups=str(tmp_path), option=SimpleNamespace(loadscopereorder=True),
                             getvalue=lambda name: None)
    sched = trace_groups.TraceGroupScheduling.__new__(trace_groups.TraceGroupScheduling)
    sched.config, sched._groups = config, None
    assert sched._split_scope("t.py::a[x]") == sched._split_scope("t.py::b[x]") == "group golden/x"
    assert sched._split_scope("t.py::c") == "t.py::c"  # ungrouped: a unit of its own
    assert sched._split_scope("t.py::d[y]@g") == "g"  # xdist's own suffix, once it works again
