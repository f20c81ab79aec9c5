"""The Python API (perfetto's TraceProcessor shape) and the first CLI commands, on tiny exact traces."""
from __future__ import annotations

import json

import orjson
import pytest
from click.testing import CliRunner
from perfetto.trace_processor.api import TraceProcessor

from kineto_sql import EngineChoice, KinetoTraceProcessor, open_trace
from kineto_sql.cli.main import cli
from kineto_sql.errors import EngineError, QueryError
from kineto_sql.loading.load import prepare_file
from kineto_sql.sql.literals import bind, literal, table_function_call
from tests.conftest import CORPUS, needs_corpus


def _trace(tmp_path, events, **top):
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events, **top}))
    return path


OVERLAP = [
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 10.0, "dur": 10.0, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 15.0, "dur": 10.0, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 1.0, "dur": 2.0, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5, "ts": 4.0, "dur": 2.0, "args": {"correlation": 2}},
    {"ph": "s", "id": 1, "pid": 5, "tid": 5, "ts": 1.0, "cat": "ac2g", "name": "ac2g"},
    {"ph": "s", "id": 2, "pid": 5, "tid": 5, "ts": 4.0, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 10.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "f", "id": 2, "pid": 0, "tid": 7, "ts": 15.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
]


def test_is_a_perfetto_trace_processor_and_a_context_manager(tmp_path):
    with open_trace(_trace(tmp_path, OVERLAP, distributedInfo={"rank": 3})) as tp:
        assert isinstance(tp, TraceProcessor)
        rows = list(tp.query("SELECT name FROM slice ORDER BY ts"))
        assert [r.name for r in rows] == ["cudaLaunchKernel", "cudaLaunchKernel", "k1", "k2"]
        assert tp.query("SELECT count(*) AS n FROM slice").as_pandas_dataframe().n[0] == 4
        assert tp.rank == 3


def test_overlapping_kernel_is_kept_on_a_lane_and_its_flow_follows(tmp_path):
    with open_trace(_trace(tmp_path, OVERLAP)) as tp:
        assert tp.report.fix_count("overlap_lane") == 1
        kernels = tp.df("SELECT s.name, s.ts, s.dur, t.name AS thread FROM slice s "
                        "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
                        "WHERE s.category = 'kernel' ORDER BY s.ts")
        assert kernels.to_dict(orient="list") == {
            "name": ["k1", "k2"], "ts": [10000, 15000], "dur": [10000, 10000],
            "thread": ["stream 7", "stream 7 (overlap lane 1)"]}
        flows = tp.df("SELECT extract_arg(a.arg_set_id, 'args.correlation') AS a, extract_arg(b.arg_set_id, "
                      "'args.correlation') AS b FROM flow JOIN slice a ON a.id = slice_out "
                      "JOIN slice b ON b.id = slice_in ORDER BY a")
        assert flows.values.tolist() == [[1, 1], [2, 2]]
        assert tp.df("SELECT count(*) AS n FROM stats WHERE name GLOB 'slice_drop*' AND value > 0").n[0] == 0


def test_absolute_timestamps_keep_their_nanoseconds(tmp_path):
    # Written as text: a Python float could not even hold these timestamps.
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": ['
                    '{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1700000000001013.635, "dur": 1.001},'
                    '{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1700000000001014.636, "dur": 0.5}]}')
    with open_trace(path) as tp:
        rows = tp.df("SELECT name, ts, dur FROM slice ORDER BY ts")
        offset = tp.report.ts_offset_ns
        assert [int(t) + offset for t in rows.ts] == [1700000000001013635, 1700000000001014636]
        assert rows.dur.tolist() == [1001, 500]
        assert int(tp.df("SELECT value FROM kineto_metadata WHERE key = 'kineto_sql.ts_offset_ns'").value[0]) == offset


def test_negative_and_string_pids_do_not_merge(tmp_path):
    events = [{"ph": "X", "name": "overhead", "pid": -1, "tid": 0, "ts": 1, "dur": 1},
              {"ph": "X", "name": "kernel", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
              {"ph": "X", "name": "span", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 1}]
    with open_trace(_trace(tmp_path, events)) as tp:
        procs = tp.df("SELECT s.name AS slice, p.name AS process, p.pid FROM slice s JOIN thread_track tt "
                      "ON s.track_id = tt.id JOIN thread USING (utid) JOIN process p USING (upid) ORDER BY s.name")
        assert len(set(procs.pid)) == 3
        assert procs.set_index("slice").process.to_dict()["span"] == "Spans"


def test_failed_query_leaves_the_session_usable(tmp_path):
    with open_trace(_trace(tmp_path, OVERLAP)) as tp:
        with pytest.raises(QueryError, match="no such column"):
            tp.query("SELECT nope FROM slice")
        assert tp.df("SELECT count(*) AS n FROM slice").n[0] == 4


def test_native_engine_needs_a_shell():
    with pytest.raises(EngineError, match="--tp-shell"):
        EngineChoice("native").resolve(10)
    assert EngineChoice().resolve(2_000_000_000).kind == "wasm64"


def test_memory64_build_loads_the_same(tmp_path):
    path = _trace(tmp_path, OVERLAP)
    with open_trace(path, EngineChoice("wasm64")) as tp:
        assert tp.df("SELECT count(*) AS n FROM slice").n[0] == 4


def test_literals_are_the_only_way_values_become_sql():
    assert literal("it's") == "'it''s'"
    assert literal(None) == "NULL" and literal(True) == "TRUE" and literal(2.5) == "2.5"
    assert table_function_call("kineto_x", [1, "a'"]) == "SELECT * FROM kineto_x(1, 'a''')"
    assert bind("SELECT :a, ':a' -- :b", {"a": "x"}) == "SELECT 'x', ':a' -- :b"
    with pytest.raises(KeyError):
        bind("SELECT :missing", {})
    with pytest.raises(ValueError):
        table_function_call("x; DROP TABLE y", [])


def test_cli_sql_and_info_json(tmp_path):
    path = _trace(tmp_path, OVERLAP, schemaVersion=1)
    runner = CliRunner()
    out = runner.invoke(cli, ["sql", str(path), "SELECT name, count(*) AS n FROM slice GROUP BY 1 ORDER BY 1",
                              "--format", "csv"])
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines() == ["name,n", "cudaLaunchKernel,2", "k1,1", "k2,1"]
    info = runner.invoke(cli, ["info", str(path), "--format", "json"])
    assert info.exit_code == 0, info.output
    doc = json.loads(info.stdout)["result"]["traces"][0]
    assert doc["conserved"] is True and doc["counts"]["slices"] == 4 and doc["expected_slices"] == 4
    assert {f["kind"] for f in doc["fixes"]} >= {"overlap_lane"}
    assert set(doc) >= {"source", "rank", "devices", "steps", "streams", "processes", "fixes", "events_by_phase"}


@needs_corpus
def test_cli_info_on_a_rank_directory_reads_ranks_from_distributed_info():
    result = CliRunner().invoke(cli, ["info", str(CORPUS / "hta_sampled_2rank"), "--format", "json"])
    assert result.exit_code == 0, result.output
    ranks = json.loads(result.stdout)["result"]["traces"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(r["conserved"] for r in ranks)


@needs_corpus
def test_unchanged_file_is_fed_to_the_engine_as_is():
    prepared = prepare_file(CORPUS / "hta_large_integer_rank70.pt.trace.json.gz")
    assert prepared.report.rewritten  # the > int64 integer had to become text
    tiny = prepare_file(CORPUS / "kineto_docs_after_fix_trace.json.gz")
    assert tiny.report.ts_offset_ns == 0


def test_diagnose_runs_without_pandas_and_dataframes_still_work(tmp_path):
    """diagnose reads rows (kineto_sql.engine.rows): the process never imports pandas or pyarrow (75 MB, 0.7 s);
    the library's DataFrames (tp.df, as_pandas_dataframe) load pandas when first asked for."""
    import subprocess
    import sys

    trace = _trace(tmp_path, OVERLAP)
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from kineto_sql.cli.main import cli\n"
        f"result = CliRunner().invoke(cli, ['diagnose', {str(trace)!r}, '--jobs', '1'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n"
        "from kineto_sql import open_trace\n"
        f"tp = open_trace({str(trace)!r})\n"
        "print(int(tp.query('SELECT count(*) AS n FROM slice').as_pandas_dataframe().n[0]), int(tp.df('SELECT 2 AS x').x[0]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "4 2"


SUB_NS = ["1.0005", "1.0015", "2.0025", "229314.8765", "0.0005", "0.0004999", "7.9995", "1.00049999999999999",
          "12345678.0005", "2.5E-3", "3.14159"]


def test_the_loader_reads_sub_nanosecond_timestamps_as_the_engine_does(tmp_path):
    """A timestamp with digits below the nanosecond is rounded by the engine half up (floor(x*1000 + 0.5));
    the loader's nesting test must read the same nanoseconds, or a child it thinks nested ends 1 ns past its
    parent in the engine and is dropped (a 4x replica of tl_mi300_resnet_act_checkpoint lost 2 slices so)."""
    from kineto_sql.loading.events import ns

    text = '{"traceEvents":[' + ",".join(
        f'{{"ph":"X","name":"e{i}","pid":1,"tid":{i + 1},"ts":{v},"dur":1}}' for i, v in enumerate(SUB_NS)) + "]}"
    with KinetoTraceProcessor(EngineChoice("wasm")) as tp:
        tp.load_bytes(text.encode())
        engine = dict(tp.rows("SELECT name, ts FROM slice").data)
    assert [engine[f"e{i}"] for i in range(len(SUB_NS))] == [ns(float(v)) for v in SUB_NS]
    assert ns(1.0005) == 1001 and ns(2.0025) == 2003  # where round() would give 1000 and 2002
    # 5000.5 + 5999.5 ns: 5001 + 6000 = 11001 in the engine, past the parent's end at 11000
    events = [{"ph": "X", "name": "parent", "pid": 1, "tid": 1, "ts": 1.0, "dur": 10.0},
              {"ph": "X", "name": "child", "pid": 1, "tid": 1, "ts": 5.0005, "dur": 5.9995}]
    with open_trace(_trace(tmp_path, events)) as tp:
        assert tp.report.fix_count("overlap_lane") == 1
        assert tp.rows("SELECT count(*) AS n FROM slice").data == [[2]]


def test_info_names_the_profiler_options_the_events_show(tmp_path):
    from tests.kineto_builder import CpuOp, KinetoTrace, MemoryEvent, PythonFrame

    shown = KinetoTrace([CpuOp("aten::mm", 0, 10, args={"Input Dims": [[2, 2], [2, 2]]}),
                         PythonFrame("model.py(3): forward", 0, 12),
                         MemoryEvent(ts_us=1, bytes=64, total_allocated=64, total_reserved=2**20)])
    bare = KinetoTrace([CpuOp("aten::mm", 0, 10)])
    named = KinetoTrace([CpuOp("aten::mm", 0, 10)], metadata={"record_shapes": 1})
    lines = {}
    for name, trace in (("shown", shown), ("bare", bare), ("named", named)):
        result = CliRunner().invoke(cli, ["info", str(trace.write(tmp_path, f"{name}.json.gz")), "-q"])
        assert result.exit_code == 0, result.output
        lines[name] = result.stdout.splitlines()[1]
    assert lines["shown"].endswith("recorded with: record_shapes (1 events show it), with_stack (1 events show it), "
                                   "profile_memory (1 events show it)")
    assert lines["bare"].endswith("recorded with: no profiler option (shapes, stacks, memory, flops)")
    assert lines["named"].endswith("recorded with: record_shapes")
