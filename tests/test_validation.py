"""Every event field is checked before the loader changes anything (kineto_sql/loading/validate.py).

One test per class of the issue's list: a field of the wrong type or range is either kept and reported
(with the event's index), or the event is dropped, reported by index and reason, and the load refused
with one sentence and exit 2 unless --allow-loss.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kineto_sql import open_trace
from kineto_sql.cli.main import cli
from kineto_sql.engine.processor import EngineChoice
from kineto_sql.errors import DataLossError
from kineto_sql.loading.decode import decode_trace
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.validate import validate_events


def _x(name, ts=1, dur=2, pid=1, tid=1, **extra):
    event = {"ph": "X", "name": name, "cat": "cpu_op", "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    event.update(extra)
    return {k: v for k, v in event.items() if v is not ...}


def _write(tmp_path, events, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _one_error_line(result) -> str:
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.output
    return errors[0]


def _sql(path, query, *flags):
    result = CliRunner().invoke(cli, ["sql", str(path), query, "--format", "json", *flags])
    return result, (json.loads(result.stdout)["result"] if result.exit_code == 0 else None)


def test_negative_dur_is_clamped_to_zero_and_reported(tmp_path):
    path = _write(tmp_path, [_x("ok", ts=0, dur=10), _x("neg", ts=20, dur=-50)])
    result, rows = _sql(path, "SELECT name, dur FROM slice ORDER BY ts")
    assert result.exit_code == 0
    assert rows == [{"name": "ok", "dur": 10_000}, {"name": "neg", "dur": 0}]
    with open_trace(path) as tp:
        fix = next(f for f in tp.report.fixes if f.kind == "negative_dur_clamped")
        assert (fix.count, fix.examples) == (1, ("event 1",))
        assert not tp.report.lossy


def test_x_without_ts_is_dropped_by_index_and_the_load_refused(tmp_path):
    path = _write(tmp_path, [_x("a", ts=0), _x("no_ts", ts=...), _x("c", ts=5)])
    result = CliRunner().invoke(cli, ["sql", str(path), "SELECT count(*) AS n FROM slice"])
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert "1 event(s) dropped: ts is missing (event index 1)" in line and "--allow-loss" in line
    with pytest.raises(DataLossError, match="event index 1"):
        open_trace(path)


def test_allow_loss_loads_the_rest_and_reports_exactly(tmp_path):
    path = _write(tmp_path, [_x("a", ts=0), _x("no_ts", ts=...), _x("c", ts=5)])
    result, rows = _sql(path, "SELECT name FROM slice ORDER BY ts", "--allow-loss")
    assert result.exit_code == 0 and rows == [{"name": "a"}, {"name": "c"}]
    info = CliRunner().invoke(cli, ["info", str(path), "--format", "json", "--allow-loss"])
    assert info.exit_code == 0
    data = json.loads(info.stdout)["result"]["traces"][0]
    assert data["conserved"] is False
    assert data["dropped"] == [{"reason": "ts is missing", "count": 1, "indices": [1]}]
    with open_trace(path, EngineChoice(allow_loss=True)) as tp:
        assert tp.report.dropped_count == 1 and tp.report.expected_slices == 2


def test_info_shows_the_loss_then_exits_2(tmp_path):
    path = _write(tmp_path, [_x("a", ts=0), _x("no_ts", ts=...)])
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2
    assert "LOSS: 1 event(s) dropped by the loader: ts is missing (event index 1)" in result.stdout
    assert "nothing is lost" not in result.output
    assert "loading it loses data" in _one_error_line(result)


@pytest.mark.parametrize("ts, reason", [
    ("abc", "ts is a string that is not a number"),
    ([1, 2], "ts is a list, not a number"),
    ({"us": 1}, "ts is a JSON object, not a number"),
    (True, "ts is a boolean, not a number"),
    (1e300, "ts is out of range (beyond int64 nanoseconds)"),
    (10**30, "ts is out of range (beyond int64 nanoseconds)"),
    ("inf", "ts is not finite"),
])
def test_unusable_ts_names_the_event_and_the_reason(tmp_path, ts, reason):
    path = _write(tmp_path, [_x("a", ts=0), _x("bad", ts=ts)])
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert f"{reason} (event index 1)" in line
    assert "incomplete" not in line


def test_numeric_string_ts_is_a_time(tmp_path):
    path = _write(tmp_path, [_x("a", ts="3.5", dur=1)])
    result, rows = _sql(path, "SELECT ts, dur FROM slice")
    assert result.exit_code == 0 and rows == [{"ts": 3500, "dur": 1000}]


def test_list_pid_and_object_tid_get_fresh_ids_named_after_them(tmp_path):
    path = _write(tmp_path, [_x("a", pid=[7], tid={"t": 1}), _x("b", ts=10, pid=1, tid=1)])
    result, rows = _sql(path, "SELECT s.name, p.name AS process, t.name AS thread FROM slice s "
                              "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
                              "LEFT JOIN process p USING (upid) ORDER BY s.ts")
    assert result.exit_code == 0
    assert rows[0] == {"name": "a", "process": "[7]", "thread": '{"t":1}'}
    assert rows[1]["name"] == "b"


def test_non_string_name_and_bad_args_are_kept_as_text(tmp_path):
    path = _write(tmp_path, [_x(["x", 1], args=True), _x("b", ts=10, args=[1, 2])])
    result, rows = _sql(path, "SELECT s.name, extract_arg(s.arg_set_id, 'args.value') AS v FROM slice s ORDER BY ts")
    assert result.exit_code == 0
    assert rows == [{"name": '["x",1]', "v": "true"}, {"name": "b", "v": "[1,2]"}]


def test_args_nested_500_deep_reach_the_engine_whole(tmp_path):
    path = tmp_path / "deep.json"
    # written by hand: no JSON writer goes 500 deep, but the decoder reads it and writes the args back as
    # their text (the second event's pid -1 makes the trace rewritten)
    path.write_text('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": '
                    + '{"d": ' * 500 + "1" + "}" * 500 + '}, {"ph": "X", "name": "b", "pid": -1, "tid": 1, '
                    '"ts": 1, "dur": 2}]}')
    result = CliRunner().invoke(cli, ["info", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "args_too_deep_cut" not in {f["kind"] for f in json.loads(result.stdout)["result"]["traces"][0]["fixes"]}
    result, rows = _sql(path, "SELECT key, int_value FROM args WHERE key GLOB 'args.d.*'")
    assert rows == [{"key": "args" + ".d" * 500, "int_value": 1}]


def test_nan_is_not_json_with_its_position(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": NaN, "dur": 2}]}')
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert "not valid JSON at line 1 column 69" in line and "NaN and Infinity are not JSON numbers" in line


def test_entries_that_are_not_events(tmp_path):
    path = _write(tmp_path, [_x("a"), 5, {}, {"name": "no ph", "ts": 1}, {"ph": "s", "id": [1], "ts": 1, "pid": 1,
                                                                         "tid": 1}])
    report = IngestReport("t", 0)
    kept = validate_events(decode_trace(path.read_bytes(), path).events, report)
    assert [e["name"] for e in kept] == ["a"]
    assert [(d.reason, d.indices) for d in report.dropped] == [
        ("not a JSON object", (1,)), ("ph is missing or not a string", (3,)),
        ("flow event id is missing or not an integer / string", (4,))]
    assert report.fix_count("empty_entry_ignored") == 1


def test_every_event_dropped_is_one_sentence(tmp_path):
    path = _write(tmp_path, [_x("a", ts="abc"), _x("b", ts=None)])
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2
    assert "none of its events can be loaded: 1 event(s) dropped: ts is a string that is not a number" \
        in _one_error_line(result)


def test_diagnose_when_no_x_event_has_a_dur(tmp_path):
    events = [_x("ProfilerStep#1", ts=0, dur=..., cat="user_annotation"), _x("aten::mm", ts=1, dur=...)]
    path = _write(tmp_path, events)
    result = CliRunner().invoke(cli, ["diagnose", str(path)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output


def test_special_files(tmp_path):
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "loop2.json")
    (tmp_path / "loop2.json").symlink_to(loop)
    result = CliRunner().invoke(cli, ["info", str(loop)])
    assert result.exit_code == 2 and "symbolic link loop" in _one_error_line(result)
    result = CliRunner().invoke(cli, ["info", "/dev/zero"])
    assert result.exit_code == 2 and "not a regular file" in _one_error_line(result)


def _nested(depth):
    value = 1
    for _ in range(depth):
        value = {"d": value}
    return value


def test_top_level_fields_of_the_wrong_shape_are_left_out(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [_x("a")], "deviceProperties": True,
                                "distributedInfo": {"rank": "zero", "world_size": 2}, "deep": _nested(300)}))
    result = CliRunner().invoke(cli, ["info", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    fixes = {f["kind"]: f for f in json.loads(result.stdout)["result"]["traces"][0]["fixes"]}
    assert fixes["metadata_field_ignored"]["examples"] == [
        "deviceProperties: a boolean", "distributedInfo.rank: a str",
        "deep: stored as text (not writable as JSON: too deep or an integer beyond 64 bits)"]
    with open_trace(path) as tp:
        assert tp.trace_metadata["distributedInfo"] == {"world_size": 2}
        assert tp.trace_metadata["deep"].startswith('{"d":{"d":') and "<nested too deep>" in tp.trace_metadata["deep"]
        assert tp.rank is None


def test_an_engine_data_loss_stat_refuses_unless_allowed(tmp_path):
    """The loader keeps both copies of a duplicated flow start; the engine drops one (stat flow_duplicate_id)."""
    start = {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 10, "cat": "ac2g", "name": "ac2g"}
    path = _write(tmp_path, [
        _x("cudaLaunchKernel", ts=10, dur=5, cat="cuda_runtime", args={"correlation": 7}),
        _x("k", ts=20, dur=5, pid=2, tid=7, cat="kernel", args={"correlation": 7}),
        start, dict(start), {"ph": "f", "id": 7, "pid": 2, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g",
                             "bp": "e"}])
    for command in (["info", str(path)], ["sql", str(path), "SELECT 1"], ["diagnose", str(path)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2
        assert "loading it loses data (the engine lost data: stat flow_duplicate_id = 1)" in _one_error_line(result)
    allowed = CliRunner().invoke(cli, ["info", str(path), "--format", "json", "--allow-loss"])
    assert allowed.exit_code == 0
    assert [(r["name"], r["value"]) for r in json.loads(allowed.stdout)["result"]["traces"][0]["data_loss"]] == [("flow_duplicate_id", 1)]


@pytest.mark.parametrize("wild, reason", [
    (-10_000_000_000_000_000, "ts is out of range (beyond int64 nanoseconds)"),
    (-1e200, "ts is out of range (beyond int64 nanoseconds)"),
    # inside int64 ns, but a base below it would push every other event out of range: it is the outlier
    (-9223372036854775, "ts lies farther from the trace's other timestamps than int64 nanoseconds can span"),
])
def test_one_wild_timestamp_drops_that_event_only(tmp_path, wild, reason):
    path = _write(tmp_path, [_x("wild", ts=wild), _x("b", ts=1700000000000005.5), _x("c", ts=1700000000000007.5)])
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2 and reason in _one_error_line(result) and "(event index 0)" in _one_error_line(result)
    result, rows = _sql(path, "SELECT name, ts FROM slice ORDER BY ts", "--allow-loss")
    assert result.exit_code == 0
    assert rows == [{"name": "b", "ts": 500}, {"name": "c", "ts": 2500}]  # rebased on the others, every ns kept


def test_a_metadata_event_with_a_time_that_is_not_a_number_keeps_its_name(tmp_path):
    path = _write(tmp_path, [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "ts": "abc", "args": {"name": "t"}},
                             {"ph": "M", "name": "process_name", "pid": 1, "ts": False, "dur": "", "args": {"name": "p"}},
                             {"ph": "M", "name": "process_labels", "pid": 1, "ts": [], "args": {"labels": "x"}},
                             {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "ts": 5, "args": {"name": "u"}},
                             _x("b", ts=5)])  # (a metadata ts that is a number stays)
    result = CliRunner().invoke(cli, ["info", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    (fix,) = [f for f in json.loads(result.stdout)["result"]["traces"][0]["fixes"] if f["kind"] == "metadata_time_removed"]
    assert fix["count"] == 4
    assert fix["examples"] == ["event 0: ts 'abc'", "event 1: ts False", "event 1: dur ''", "event 2: ts []"]
    result, rows = _sql(path, "SELECT s.name, t.name AS thread, p.name AS process FROM slice s JOIN thread_track tt "
                              "ON tt.id = s.track_id JOIN thread t USING (utid) JOIN process p USING (upid)")
    assert rows == [{"name": "b", "thread": "t", "process": "p"}]
