"""The query commands: list, show, run, lint, new."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kineto_sql.catalog import spec as catalog
from kineto_sql.devtools import lint
from kineto_sql.cli.main import cli
from kineto_sql.cli.query_cmds import commands
from kineto_sql.errors import QueryError
from kineto_sql.catalog.cases import load_rule_tests
from kineto_sql.devtools.scaffold import scaffold
from tests.test_query_units import standard_trace


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    return standard_trace().write(tmp_path_factory.mktemp("cli"))


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", [c.name for c in commands])
def test_help_has_an_example(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert f"kineto-sql {command} " in result.output


def test_list_json_has_the_reading_queries():
    rows = json.loads(invoke("list", "--kind", "reading", "--format", "json").stdout)["result"]
    by_id = {r["id"]: r for r in rows}
    assert by_id["reading.step_table"]["params"] == "sparse_below_pct=50.0 cold_start_factor=1.5"
    assert {r["kind"] for r in rows} == {"reading"}


def test_show_prints_header_and_paste_prints_the_bundle():
    shown = invoke("show", "reading.op_table").stdout
    version = catalog.get("reading.op_table").version
    assert shown.startswith(f"reading.op_table@{version}  Op table:")
    assert "\n  top_n = 0 (LONG): " in shown
    pasted = invoke("show", "reading.op_table", "--paste", "-p", "top_n", "3").stdout
    assert pasted.rstrip().endswith("SELECT * FROM kineto_reading_op_table(3);")


def test_run_csv(trace_path):
    result = invoke("run", "reading.op_table", str(trace_path), "-p", "top_n", "2", "--format", "csv")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("name,kind,calls,self_cpu_dur")
    assert [line.split(",")[0] for line in lines[1:]] == ["aten::mm", "aten::add"]


def test_run_not_applicable_exits_0(tmp_path):
    from tests.kineto_builder import CpuOp, KinetoTrace
    path = KinetoTrace([CpuOp("aten::add", 0, 5)]).write(tmp_path)
    result = invoke("run", "hta.step_times", str(path))
    assert result.exit_code == 0
    assert result.stdout.startswith("not applicable: hta.step_times needs steps")


@pytest.mark.parametrize(("args", "message"), [
    (("run", "reading.nope", "TRACE"), "no query 'reading.nope'"),
    (("run", "reading.op_table", "TRACE", "-p", "top_n", "many"), "parameter top_n wants a LONG value"),
    (("run", "reading.op_table", "TRACE", "-p", "limit", "3"), "has no parameter 'limit'"),
    (("run", "reading.op_table", "/nonexistent.json"), "no such file"),
])
def test_bad_input_is_one_sentence_and_exit_2(trace_path, args, message):
    args = [str(trace_path) if a == "TRACE" else a for a in args]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_lint_exit_status_follows_problems():
    result = CliRunner().invoke(cli, ["lint"])
    assert result.exit_code == (1 if lint.lint() else 0)


def test_new_scaffolds_a_lint_clean_detector_and_test(tmp_path):
    root = tmp_path / "kineto"
    (root / "lib").mkdir(parents=True)
    from kineto_sql.sql.package import package_dir
    for lib in (package_dir() / "lib").glob("*.sql"):
        (root / "lib" / lib.name).write_text(lib.read_text())
    made = scaffold("catalog.slow_op", root)
    assert made.sql_path == root / "catalog" / "slow_op.sql"
    assert made.test_path == root / "catalog" / "slow_op.test.toml"
    assert "CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_slow_op(" in made.sql_path.read_text()
    problems = [p.message for p in lint.lint(root, check_lock=False)]
    # what is left to write: the TODOs of the page, the example, a case that fires; nothing else
    assert {m.split(" (")[0].split(";")[0] for m in problems} == {
        "replace the TODO with the real text", "catalog.slow_op has no [[case]] that fires"}, problems
    tests = load_rule_tests("catalog.slow_op", made.sql_path)
    assert tests.problems == () and tests.cases == ()
    with pytest.raises(QueryError, match="already exists"):
        scaffold("catalog.slow_op", root)


@pytest.mark.parametrize("target", ["catalog.order", "Bad-Name", "nowhere.thing"])
def test_new_refuses_bad_names(tmp_path, target):
    with pytest.raises(QueryError):
        scaffold(target, tmp_path / "kineto")


def test_show_renders_the_rule_page_with_its_example():
    result = CliRunner().invoke(cli, ["show", "catalog.gc_gil_stall"])
    assert result.exit_code == 0, result.output
    out = result.output
    for heading in ("What it does", "How to confirm", "Why is this bad?", "Known problems",
                    "Example (case at_threshold_1 of gc_gil_stall.test.toml)", "Use instead", "Parameters"):
        assert f"\n{heading}" in out, heading
    assert "PythonFrame(name='Python GC', ts_us=200, dur_us=1000)" in out and "gc_count=1, gc_dur=1000000" in out
    assert out.index("Example (case") < out.index("\nUse instead")


def test_show_and_run_of_an_unknown_id_is_one_sentence():
    result = CliRunner().invoke(cli, ["show", "catalog.no_such_rule"])
    assert result.exit_code == 2 and result.output.startswith("error: no query 'catalog.no_such_rule'")


GOLDEN_TRACES = Path(__file__).resolve().parents[1] / "golden" / "traces"


@pytest.mark.skipif(not (GOLDEN_TRACES / "gc_stall_planted.json.gz").exists(), reason="golden traces absent")
def test_try_prints_one_outcome_per_trace_with_the_top_finding():
    result = CliRunner().invoke(cli, ["try", "catalog.gc_gil_stall", str(GOLDEN_TRACES / "gc_stall_planted.json.gz"),
                                      str(GOLDEN_TRACES / "gc_stall_fixed.json.gz")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(("fires", "silent", "not applicable"))]
    assert lines[0].startswith("fires           golden:gc_stall_planted  3 finding(s); top: Step ")
    assert lines[1] == "silent          golden:gc_stall_fixed"


def test_try_of_a_missing_trace_is_one_sentence(tmp_path):
    result = CliRunner().invoke(cli, ["try", "catalog.gc_gil_stall", str(tmp_path / "nope.json")])
    assert result.exit_code == 2 and "no such file or directory" in result.output


def test_new_refuses_to_write_into_site_packages(monkeypatch, tmp_path):
    from kineto_sql.devtools import scaffold as scaffold_module

    fake = tmp_path / "lib" / "python3.12" / "site-packages" / "kineto_sql" / "queries" / "kineto"
    monkeypatch.setattr(scaffold_module, "package_dir", lambda: fake)
    with pytest.raises(QueryError, match="not run from a clone: clone the repository and `pip install -e .`"):
        scaffold("catalog.slow_op")
    assert not fake.exists()


def _count_loads(monkeypatch):
    import kineto_sql.cli.query_cmds as query_cmds

    loads = []
    real = query_cmds.open_trace

    def counting(*args, **kwargs):
        loads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(query_cmds, "open_trace", counting)
    return loads


def test_run_several_queries_from_one_load(trace_path, monkeypatch):
    loads = _count_loads(monkeypatch)
    result = invoke("run", "reading.op_table", "reading.step_table", "hta.kernel_breakdown", str(trace_path),
                    "-p", "top_n", "1", "--format", "json")
    assert result.exit_code == 0
    assert loads == [trace_path]
    out = {q["id"]: q["rows"] for q in json.loads(result.stdout)["result"]["queries"]}
    assert list(out) == ["reading.op_table", "reading.step_table", "hta.kernel_breakdown"]
    assert [r["name"] for r in out["reading.op_table"]] == ["aten::mm"]  # top_n went to the query that declares it
    assert len(out["reading.step_table"]) > 0
    single = json.loads(invoke("run", "reading.op_table", str(trace_path), "-p", "top_n", "1",
                               "--format", "json").stdout)["result"]["queries"][0]["rows"]
    assert single == out["reading.op_table"]


def test_run_several_queries_csv_names_each_table(trace_path):
    result = invoke("run", "reading.op_table", "reading.step_table", str(trace_path), "--format", "csv")
    assert result.exit_code == 0
    heads = [line for line in result.stdout.splitlines() if line.startswith("# ")]
    assert [h.split("@")[0] for h in heads] == ["# reading.op_table", "# reading.step_table"]


@pytest.mark.parametrize(("args", "message"), [
    (("reading.op_table", "reading.step_table", "-p", "top_n", "many"), "parameter top_n wants a LONG value"),
    (("reading.op_table", "reading.step_table", "-p", "nope", "1"), "has no parameter 'nope'"),
    (("reading.op_table", "reading.nope"), "no query 'reading.nope'"),
])
def test_run_checks_every_query_and_value_before_loading(trace_path, monkeypatch, args, message):
    loads = _count_loads(monkeypatch)
    result = CliRunner().invoke(cli, ["run", *args[:2], str(trace_path), *args[2:]])
    assert result.exit_code == 2
    assert message in result.stderr
    assert loads == []


@pytest.mark.parametrize(("query_id", "hint"), [
    ("sync_forcing_op", "(did you mean catalog.sync_forcing_op?)"),
    ("catalog.sync_forcng_op", "(did you mean catalog.sync_forcing_op?)"),
    ("reading.step_tabel", "(did you mean reading.step_table or "),
])
def test_an_unknown_id_suggests_the_closest(query_id, hint):
    result = CliRunner().invoke(cli, ["show", query_id])
    assert result.exit_code == 2 and hint in result.stderr


def test_an_id_far_from_every_query_gets_no_suggestion():
    result = CliRunner().invoke(cli, ["show", "catalog.zzzzzz"])
    assert result.exit_code == 2 and "did you mean" not in result.stderr


def test_top_help_starts_with_diagnose():
    text = invoke("--help").stdout
    start = text.index("Start here:")
    assert text[start:].splitlines()[1].strip().startswith("kineto-sql diagnose trace.json.gz")
