"""The MCP server, driven in-process by the mcp package's own client."""
from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")
from mcp import Client  # noqa: E402

from kineto_sql.api.agent import SCHEMA_VERSION, Traces, build_server  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "traces"
TRACE = str(GOLDEN / "gc_stall_planted.json.gz")


def _call(calls):
    """Runs [(tool, arguments), ...] in one client session; returns each answer's envelope."""
    traces = Traces()

    async def main():
        async with Client(build_server(traces)) as client:
            tools = await client.list_tools()
            answers = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                answers.append(json.loads(result.content[0].text))
            return [t.name for t in tools.tools], answers

    try:
        return anyio.run(main)
    finally:
        traces.close()


def test_tools_listed_and_a_session_diagnoses_a_trace():
    names, answers = _call([
        ("load_trace", {"path": TRACE}),
        ("diagnose", {"path": TRACE}),
        ("run_rule", {"path": TRACE, "rule_id": "reading.op_table", "params": {"top_n": 2}}),
        ("sql", {"path": TRACE, "query": "SELECT name, dur FROM slice ORDER BY dur DESC", "limit": 3}),
        ("list_rules", {"kind": "detector"}),
        ("show_rule", {"rule_id": "catalog.gc_gil_stall"}),
    ])
    assert set(names) == {"load_trace", "list_rules", "show_rule", "run_rule", "sql", "diagnose", "diff"}
    assert all(a["schema_version"] == SCHEMA_VERSION and "result" in a for a in answers), answers
    assert [a["command"] for a in answers] == ["load_trace", "diagnose", "run_rule", "sql", "list_rules", "show_rule"]
    loaded, diagnosis, ops, rows, rules, page = (a["result"] for a in answers)
    assert loaded["slices"] > 1000
    top = diagnosis["findings"][0]
    assert top["query_id"] == "catalog.gc_gil_stall" and top["impact_ns"] > 0
    assert any("kineto-sql run catalog.gc_gil_stall" in line for line in top["reproduce"])
    assert [r["name"] for r in ops["rows"]][0] == "Python GC" and ops["total_rows"] == 2
    assert len(rows["rows"]) == 3 and rows["truncated"] and rows["total_rows"] > 3
    assert "catalog.gc_gil_stall" in {r["id"] for r in rules}
    assert "CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_gc_gil_stall" in page["sql"]


def test_errors_are_one_sentence_in_the_envelope(tmp_path):
    _, answers = _call([
        ("load_trace", {"path": str(tmp_path / "missing.json")}),
        ("show_rule", {"rule_id": "catalog.nope"}),
        ("sql", {"path": TRACE, "query": "SELECT nope FROM slice"}),
    ])
    # the envelope of the CLI's --format json: the tool's name, the error's kind and its one sentence
    assert [sorted(a) for a in answers] == [["command", "error", "schema_version"]] * 3
    assert [(a["command"], a["error"]["kind"]) for a in answers] == [
        ("load_trace", "bad_input"), ("show_rule", "bad_input"), ("sql", "bad_input")]
    messages = [a["error"]["message"] for a in answers]
    assert "no such file" in messages[0] and "no query 'catalog.nope'" in messages[1] and "nope" in messages[2]


def test_the_command_serves_over_stdio():
    import shutil
    import sys

    from mcp import StdioServerParameters

    exe = shutil.which("kineto-sql", path=str(Path(sys.executable).parent))
    assert exe, "the console script is installed beside this Python"

    async def main():
        async with Client(StdioServerParameters(command=exe, args=["mcp"])) as client:
            tools = await client.list_tools()
            answer = await client.call_tool("list_rules", {"kind": "reading"})
            return [t.name for t in tools.tools], json.loads(answer.content[0].text)

    names, answer = anyio.run(main)
    assert "diagnose" in names
    assert {r["kind"] for r in answer["result"]} == {"reading"}


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
BERT = CORPUS / "tl_h100_bert_small.json.gz"


@pytest.mark.skipif(not BERT.exists(), reason="the shared corpus is not present")
def test_diagnose_on_a_corpus_trace_carries_window_claim_prediction_and_sql():
    """A public H100 trace (TraceLens' bert-small inference, one 4.4 ms step, 97% of kernels under 10 us):
    the top finding is the launch-bound step, with its window, claimed time, predicted step and the SQL that
    gives its rows, which the sql tool runs on the same loaded trace."""
    names, (diagnosis,) = _call([("diagnose", {"path": str(BERT)})])
    assert {"diagnose", "diff"} <= set(names)
    found = diagnosis["result"]
    assert found["verdict"]["regime"] == "host-bound"
    top = found["findings"][0]
    assert top["query_id"] == "catalog.small_op_storm" and top["severity"] == "high"
    assert top["where"]["steps"] == [6] and top["where"]["ts_ns"] < top["where"]["end_ns"]
    assert top["claimed_ns"] == {"idle.launch": top["impact_ns"]} and top["per_step_ns"] == top["impact_ns"]
    assert 2_800_000 < top["impact_ns"] < 3_000_000                     # 2.9 ms of the 4.4 ms step
    assert top["predicted_step_ns"] < found["verdict"]["median_step_ns"]
    assert top["sql"].splitlines()[0] == "INCLUDE PERFETTO MODULE kineto.catalog.small_op_storm;"
    assert top["sql"].splitlines()[1].startswith("SELECT * FROM kineto_catalog_small_op_storm(")
    _, (rows,) = _call([("sql", {"path": str(BERT), "query": top["sql"]})])
    (row,) = rows["result"]["rows"]
    assert row["impact_dur"] == top["estimate_ns"] and row["step"] == 6


@pytest.mark.skipif(not (CORPUS / "kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz").exists(),
                    reason="the shared corpus is not present")
def test_diff_compares_two_sides():
    """The diff tool on two captures of one model (tb_plugin's ResNet-50, 0 vs 4 DataLoader workers): the
    headline and the rows of `kineto-sql diff`, in the envelope."""
    before = str(CORPUS / "kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz")
    after = str(CORPUS / "kineto_tbp_resnet50_nw4_run1623212756351.pt.trace.json.gz")
    _, (answer, bad) = _call([("diff", {"before": [before], "after": [after], "limit": 5}),
                              ("diff", {"before": [before], "after": ["missing.json.gz"]})])
    result = answer["result"]
    assert result["before_captures"] == [before] and result["after_captures"] == [after]
    assert result["headline"].startswith("AFTER is faster by 28.2% (95% CI 2.3-31.9%; 6 vs 6 steady windows)")
    assert result["step_change_pct"] == pytest.approx(-28.2, abs=0.05)
    assert result["verdict"]["step_change_pct"]["high"] < 0     # the interval leaves zero out
    assert len(result["rows"]) == 5 and result["total_rows"] > 5 and result["truncated"]
    assert {"name", "status", "before_us", "after_us", "diff_us"} <= set(result["columns"])
    assert bad["error"] == {"kind": "bad_input", "message": "AFTER: missing.json.gz does not exist."}
