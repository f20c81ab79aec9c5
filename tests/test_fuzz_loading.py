"""Property: whatever a trace file holds, `kineto-sql` ends in exit 0 with every event conserved (or, with
--allow-loss, an exact account of what was dropped), or in exit 2 with one sentence. Never a traceback.

Mutations of a small golden trace (and of a small corpus trace when ../shared/corpus is there): a field
of an event set to another type or an extreme value, a key deleted, an event duplicated, moved, deleted or
replaced by a non-object, args nested hundreds deep, the file truncated, bytes flipped. Hypothesis runs a
fixed number of derandomized examples (no database), so the test takes the same ~1-2 minutes every run.
"""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kineto_sql.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden" / "traces" / "guide_matmul_size_fixed.json.gz"
CORPUS = ROOT.parent / "shared" / "corpus" / "hta_critical_path_alexnet.json.gz"
FIELDS = ("ph", "ts", "dur", "pid", "tid", "name", "cat", "args", "id", "s", "bp", "bind_id")
# Kineto's top-level fields, which the loader reads itself (Perfetto ignores them).
TOP_LEVEL = ("deviceProperties", "distributedInfo", "schemaVersion", "baseTimeNanoseconds", "traceName",
             "displayTimeUnit", "record_shapes", "with_stack")
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


def _deep(depth: int):
    value = 1
    for _ in range(depth):
        value = {"d": value}
    return value


VALUES = st.one_of(
    st.none(), st.booleans(),
    st.sampled_from([0, -1, -(2**31), 2**32, 2**63, 2**64 + 5, -(2**70), 10**30]),
    st.sampled_from([0.5, -3.25, 1e308, -1e308, 1e-300, float("nan"), float("inf"), float("-inf")]),
    st.sampled_from(["", "abc", "12", "-7", "0x1f", "1e400", "nan", "X", "f", "\u00e9\u0000"]),
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(st.sampled_from(["a", "name", "ts"]), st.integers(-5, 5), max_size=2),
    st.integers(200, 600).map(_deep),
)


def _events(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


@st.composite
def mutated_document(draw, base: dict) -> dict:
    doc = copy.deepcopy(base)
    events = doc["traceEvents"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["set", "delete_key", "duplicate", "move", "delete", "non_object", "top_level"]))
        i = draw(st.integers(0, len(events) - 1))
        e = events[i]
        if kind == "set" and isinstance(e, dict):
            e[draw(st.sampled_from(FIELDS))] = draw(VALUES)
        elif kind == "delete_key" and isinstance(e, dict) and e:
            e.pop(draw(st.sampled_from(sorted(e))))
        elif kind == "duplicate":
            events.insert(draw(st.integers(0, len(events))), copy.deepcopy(e))
        elif kind == "move":
            events.insert(draw(st.integers(0, len(events) - 1)), events.pop(i))
        elif kind == "delete" and len(events) > 1:
            events.pop(i)
        elif kind == "non_object":
            events[i] = draw(st.sampled_from([None, 1, "x", [], True]))
        elif kind == "top_level":
            key = draw(st.sampled_from(TOP_LEVEL))
            doc[key] = draw(st.one_of(VALUES, st.lists(st.dictionaries(
                st.sampled_from(["id", "name", "totalGlobalMem", "rank", "world_size"]), VALUES, max_size=3),
                max_size=2)))
    return doc


def _invoke(args) -> object:
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{args}: {type(result.exception).__name__}: {result.exception}")
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 2), (args, result.exit_code, result.output[-500:])
    error = next((line for line in result.stderr.splitlines() if line.startswith("error: ")), "")
    event(f"{args[0]}{' --allow-loss' if '--allow-loss' in args else ''}: exit {result.exit_code}"
          + (f" ({error.rsplit('/', 1)[-1][:60]}...)" if result.exit_code else ""))
    if result.exit_code == 2:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, result.stderr
    return result


def _check_document(path: Path, doc: dict) -> None:
    result = _invoke(["info", str(path), "--format", "json"])
    if result.exit_code == 0:
        info = json.loads(result.stdout)["result"]["traces"][0]
        assert info["conserved"] is True
        assert info["counts"]["slices"] == info["expected_slices"]
        assert info["data_loss"] == [] and info["dropped"] == []
        return
    lossy = _invoke(["info", str(path), "--format", "json", "--allow-loss"])
    if lossy.exit_code == 0:
        # The account is exact: every entry of traceEvents is an event loaded, dropped, or an ignored {}.
        info = json.loads(lossy.stdout)["result"]["traces"][0]
        entries = doc["traceEvents"] if isinstance(doc, dict) else doc
        ignored = sum(f["count"] for f in info["fixes"] if f["kind"] == "empty_entry_ignored")
        dropped = sum(d["count"] for d in info["dropped"])
        assert sum(info["events_by_phase"].values()) + dropped + ignored == len(entries)
        assert not info["conserved"]


def _write(tmp_path: Path, doc, name="fuzz.json") -> Path:
    path = tmp_path / name
    # the stdlib writer: it writes NaN / Infinity and any integer, as a broken producer would
    path.write_text(json.dumps(doc, allow_nan=True))
    return path


GOLDEN_DOC = _events(GOLDEN)


@FUZZ
@given(doc=mutated_document(GOLDEN_DOC))
def test_mutated_golden_trace(tmp_path, doc):
    _check_document(_write(tmp_path, doc), doc)


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.exists(), reason="needs ../shared/corpus")
@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_mutated_corpus_trace(tmp_path, data):
    doc = data.draw(mutated_document(_events(CORPUS)))
    _check_document(_write(tmp_path, doc), doc)


@FUZZ
@given(cut=st.floats(0.0, 1.0), flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), max_size=6))
def test_truncated_and_flipped_bytes(tmp_path, cut, flips):
    raw = bytearray(gzip.decompress(GOLDEN.read_bytes()))
    for where, byte in flips:
        raw[int(where * (len(raw) - 1))] = byte
    raw = raw[:max(1, int(cut * len(raw)))] if cut < 0.999 else raw
    path = tmp_path / "bytes.json"
    path.write_bytes(bytes(raw))
    _invoke(["info", str(path), "--format", "json"])


@settings(FUZZ, max_examples=12)
@given(doc=mutated_document(GOLDEN_DOC))
def test_mutated_golden_trace_diagnose(tmp_path, doc):
    path = _write(tmp_path, doc)
    for extra in ([], ["--allow-loss"]):
        result = _invoke(["diagnose", str(path), "--format", "json", *extra])
        if result.exit_code == 0:
            json.loads(result.stdout)
