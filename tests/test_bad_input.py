"""Bad input gets one sentence and exit status 2: never a traceback, nothing written."""
from __future__ import annotations

import gzip

import pytest
from click.testing import CliRunner

from kineto_sql import open_trace
from kineto_sql.cli.main import cli
from kineto_sql.errors import TraceInputError

GOOD = b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}'


def _write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


CASES = {
    "not_json": ("t.json", b"this is not json at all", "not valid JSON"),
    "truncated_json": ("t.json", GOOD[:40], "truncated JSON"),
    "corrupt_gzip": ("t.json.gz", gzip.compress(GOOD)[:25], "corrupt or truncated gzip"),
    "not_a_trace": ("t.json", b'{"hello": "world"}', "not a Kineto / Chrome trace"),
    "empty_event_list": ("t.json", b'{"traceEvents": []}', "empty event list"),
    "empty_file": ("t.json", b"", "is empty"),
    "only_metadata_events": ("t.json", b'{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}]}',
                             "not a profiler trace"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_says_one_sentence_and_exits_2(tmp_path, case):
    name, data, phrase = CASES[case]
    path = _write(tmp_path, name, data)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith("kineto-sql: [")]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert phrase in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("case", sorted(CASES))
def test_python_api_raises_trace_input_error(tmp_path, case):
    name, data, phrase = CASES[case]
    with pytest.raises(TraceInputError, match=phrase.split()[0]):
        open_trace(_write(tmp_path, name, data))


def test_missing_file(tmp_path):
    result = CliRunner().invoke(cli, ["info", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "no such file" in result.output


def test_directory_without_traces(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    result = CliRunner().invoke(cli, ["info", str(tmp_path)])
    assert result.exit_code == 2
    assert "holds no trace files" in result.output and "Traceback" not in result.output


def test_sql_error_is_one_sentence(tmp_path):
    path = _write(tmp_path, "t.json", GOOD)
    result = CliRunner().invoke(cli, ["sql", str(path), "SELECT * FROM no_such_table"])
    assert result.exit_code == 2
    assert "no such table: no_such_table" in result.output
    assert "Traceback" not in result.output
