"""A JSON string escape reaches the engine as the character it stands for (rawcheck.escape_token).

Perfetto v52's JSON tokenizer unescapes a string only when it holds an escaped quote; any other string with
an escape (`\\u00e9`, `\\/`, `\\n`, `\\\\`) is stored as written. A Python writer escapes every non-ASCII
character by default (json.dump's ensure_ascii), so such a trace would show `caf\\u00e9` for `café`. The
loader rewrites a trace whose text shows an escape (orjson writes every character raw but those JSON must
escape) and reports the strings the engine will still keep escaped: a backslash or a control character in
a string without a quote."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kineto_sql.loading.load import open_trace
from kineto_sql.loading.prepare import prepare_path

CAFE = "caf\u00e9 \u2192 \U0001F600 a/b"


def _events(n: int = 1) -> list:
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "proc " + CAFE}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "thread " + CAFE}}]
    for i in range(n):
        events.append({"ph": "X", "name": f"op {i} " + CAFE, "cat": "cat " + CAFE, "pid": 1, "tid": 1,
                       "ts": 10 * i, "dur": 5, "args": {"key " + CAFE: "value " + CAFE, "plain": 1}})
    return events


def _write(tmp_path: Path, events: list) -> Path:
    path = tmp_path / "t.json"
    # ensure_ascii (json.dump's default) writes every non-ASCII character as \uXXXX; `/` as `\/`, as some
    # writers do
    path.write_text(json.dumps({"traceEvents": events}).replace("a/b", "a\\/b"))
    return path


def _strings(tp) -> set:
    rows = tp.query("SELECT name AS s FROM slice UNION ALL SELECT category FROM slice "
                    "UNION ALL SELECT key FROM args UNION ALL SELECT string_value FROM args "
                    "UNION ALL SELECT name FROM process UNION ALL SELECT name FROM thread")
    return {r.s for r in rows if r.s is not None}


@pytest.mark.parametrize("jobs", [1, 2])
def test_escaped_characters_reach_the_engine_as_themselves(tmp_path, jobs):
    path = _write(tmp_path, _events(200 if jobs == 2 else 1))
    assert b"\\u00e9" in path.read_bytes() and b"\\/" in path.read_bytes()
    prepared = prepare_path(path)
    assert prepared.report.rewritten and prepared.report.fix_count("escape_kept_by_engine") == 0
    strings = _strings(open_trace(path, jobs=jobs))
    for expected in ("op 0 " + CAFE, "cat " + CAFE, "args.key " + CAFE, "value " + CAFE, "proc " + CAFE,
                     "thread " + CAFE):
        assert expected in strings
    assert not any("\\u" in s or "\\/" in s for s in strings)


def test_a_trace_without_escapes_is_still_loaded_as_written(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _events()}, ensure_ascii=False), encoding="utf-8")
    prepared = prepare_path(path)
    assert not prepared.report.rewritten and prepared.data == path.read_bytes()


def test_strings_the_engine_keeps_escaped_are_reported(tmp_path):
    events = _events()
    events[2]["args"].update({"path": "C:\\temp", "lines": "a\nb", "quoted": 'C:\\temp "x"'})
    path = _write(tmp_path, events)
    prepared = prepare_path(path)
    (fix,) = [f for f in prepared.report.fixes if f.kind == "escape_kept_by_engine"]
    assert fix.count == 2 and fix.examples == (repr("C:\\temp"), repr("a\nb"))
    strings = _strings(open_trace(path))
    # what the report says: those two as written; with a quote in it, the string is unescaped whole
    assert {"C:\\\\temp", "a\\nb", 'C:\\temp "x"'} <= strings
