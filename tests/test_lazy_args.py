"""Args kept as the file's text (loading.lazy_args, _cargs.c): the cut parse gives the plain parse's events,
the correlation read from the text is the parsed one, the engine gets the same trace, and args that are
not JSON still refuse the load, in the whole-file parse's sentence."""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kineto_sql.errors import TraceInputError
from kineto_sql.loading import lazy_args, scan, source, stream
from kineto_sql.loading.load import open_trace
from kineto_sql.loading.prepare import prepare_path
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.source import parse_trace, read_bytes
from kineto_sql.loading.validate import validate_and_survey
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep

pytestmark = pytest.mark.skipif(lazy_args._cargs is None, reason="the compiled module is not built (no C compiler)")
cut = lazy_args._cargs.cut if lazy_args._cargs is not None else None
put_back = lazy_args._cargs.put_back if lazy_args._cargs is not None else None


def _parse_cut(piece: bytes):
    """The piece's events parsed with their args cut out and put back, or None where it is declined."""
    result = cut(piece)
    if result is None:
        return None
    text, cut_args = result
    items = orjson.loads(b"[" + text + b"]")
    assert put_back(items, cut_args)
    return items


def _same_event(kept: dict, parsed: dict) -> None:
    """`kept` (from the cut parse) is `parsed` (the plain parse's), its args as text or as they were."""
    args = kept.get("args")
    if type(args) is lazy_args.ArgsText:
        assert orjson.loads(args.text) == parsed["args"]
        expected = parsed["args"].get("correlation")
        assert args.correlation == expected and (expected is None or type(expected) is int)
        kept = {**kept, "args": parsed["args"]}
    assert kept == parsed


text_values = st.text(alphabet=st.sampled_from('ab "\\/{}[],:\u00e9\u2603\U0001F600\n\t'), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | text_values,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text_values, inner, max_size=4), max_leaves=12)
args_objects = st.dictionaries(st.sampled_from(["correlation", "External id", "name", "a\\b", "grid"]) | text_values,
                               json_values | st.integers(-10**20, 10**20), max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(st.fixed_dictionaries({"ph": st.sampled_from(["X", "M", "f"]), "name": text_values},
                                             optional={"args": args_objects, "ts": st.integers(0, 10**6),
                                                       "tail": json_values}), min_size=1, max_size=8),
       indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_the_cut_parse_gives_the_plain_parse(events, indent, ascii_only):
    text = json.dumps(events, indent=indent, ensure_ascii=ascii_only).encode()
    piece = text.strip()[1:-1]
    kept = _parse_cut(piece)
    assert kept is not None  # nothing here is declined: no event writes its args as a number or with an escape
    plain = orjson.loads(text)
    assert len(kept) == len(plain)
    for k, p in zip(kept, plain):
        _same_event(k, p)


@pytest.mark.parametrize("piece", [
    b'{"ph":"X","args":5}',  # a number could be taken for a placeholder
    b'{"ph":"X","args":-1}',
    b'{"ph":"X","\\u0061rgs":{"correlation":7,"name":"xxxxxx"}}',  # an escaped key may read "args"
    b'{"ph":"X","args":{"a":"b"}',  # not one balanced run of values
    b'{"ph":"X","name":"open',
])
def test_a_piece_that_cannot_be_cut_exactly_is_declined(piece):
    assert cut(piece) is None


@pytest.mark.parametrize("args", [
    b'{"\\u0063orrelation":7,"pad":"xxxx"}',  # an escaped key may read "correlation"
    b'{"correlation":7.0,"pad":"xxxx"}', b'{"correlation":1e3,"pad":"xx"}', b'{"correlation":"7","pad":"xx"}',
    b'{"correlation":true,"pad":"xxxx"}', b'{"correlation":12345678901234567890}',
    b'{"a":' + b"[" * 33 + b"]" * 33 + b"}",  # deeper than MAX_DEPTH
    b"{}",  # shorter than an index may be
])
def test_args_whose_correlation_the_text_does_not_give_exactly_are_parsed(args):
    piece = b'{"ph":"X","args":' + args + b'},{"ph":"X","args":{"correlation":3,"pad":"x"}}'
    first, second = _parse_cut(piece)
    assert type(first["args"]) is dict
    assert type(second["args"]) is lazy_args.ArgsText and second["args"].correlation == 3


def test_the_last_of_repeated_keys_wins_as_in_the_parse():
    piece = b'{"ph":"X","args":{"correlation":1,"p":"aaaa"},"args":{"correlation":2,"correlation":9, "p":"b"}}'
    (kept,) = _parse_cut(piece)
    assert kept["args"].correlation == 9 == orjson.loads(b"[" + piece + b"]")[0]["args"]["correlation"]
    assert orjson.loads(kept["args"].text) == {"correlation": 9, "p": "b"}


def test_the_checked_text_holds_every_cut_args_once():
    piece = b'{"args":{"a":1,"b":"xx"}},{"args":{}},{"args":{"c":[1,2,3],"d":null}}'
    text, cut_args = cut(piece)
    assert text == b'{"args":0},{"args":{}},{"args":1}'
    (texts,) = lazy_args._cargs.texts_of(cut_args)
    assert orjson.loads(texts) == [{"a": 1, "b": "xx"}, {"c": [1, 2, 3], "d": None}]


def _real_events(path: Path, keep_text: bool) -> list:
    raw = read_bytes(path)
    start = source.EVENTS_KEY.search(raw).end()
    events, probe = [], source.DepthProbe()
    texts = [] if keep_text else None
    while True:
        found = source.first_events(raw, start, probe, texts=texts)
        if found is None:
            break
        part, _, start = found
        events.extend(part)
    part, _ = source.last_events(raw, start, probe, texts)
    return events + part


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


@pytest.mark.parametrize("compiled", [True, False])
def test_validate_and_scan_read_the_same_trace(compiled, monkeypatch):
    path = CORPUS / "tl_h100_bert_small.json.gz"
    if not path.exists():
        pytest.skip("the shared corpus is not beside the checkout")
    if not compiled:
        monkeypatch.setattr(scan, "_cscan", None)
    plain, kept = _real_events(path, False), _real_events(path, True)
    assert sum(type(e.get("args")) is lazy_args.ArgsText for e in kept) > len(kept) // 2
    plain, survey = validate_and_survey(plain, IngestReport(source="t", input_bytes=1))
    kept, kept_survey = validate_and_survey(kept, IngestReport(source="t", input_bytes=1))
    assert kept_survey == survey
    a, b = scan.scan_events(plain), scan.scan_events(kept)
    assert b.by_correlation == a.by_correlation and len(a.by_correlation) > 100
    assert list(b.push_index) == list(a.push_index) and b.ts_ns == a.ts_ns and b.flow_indices == a.flow_indices


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(source, "PIECE_BYTES", 2000)
    monkeypatch.setattr(stream, "READ_BYTES", 3000)


def _trace_file(tmp_path: Path, overlap: bool, broken: bytes | None = None) -> Path:
    events = [ProfilerStep(1, ts_us=0, dur_us=10_000)]
    for i in range(60):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (30 if overlap and i == 1 else 0),
                             dur_us=80 if overlap and i == 0 else 60))
    text = json.dumps(KinetoTrace(events, {}).to_json(), indent=1).encode()
    # args as a writer other than Python's may write them: a fraction's zeros, a number's exponent; a string
    # with escapes (the engine would keep them as written: those args are parsed, and written by orjson)
    text = text.replace(b'"correlation": 7,', b'"correlation": 7, "x": 1.50, "y": 2E-3,', 1)
    text = text.replace(b'"correlation": 8,', b'"correlation": 8, "s": "\\u00e9\\/",', 1)
    if broken is not None:
        text = text.replace(b'"correlation": 9,', b'"correlation": 9, "bad": ' + broken + b",", 1)
    path = tmp_path / "t.json"
    path.write_bytes(text)
    return path


@pytest.mark.parametrize("overlap", [True, False])
def test_the_engine_gets_the_files_args_and_the_same_trace(tmp_path, small_pieces, monkeypatch, overlap):
    path = _trace_file(tmp_path, overlap)
    prepared = prepare_path(path)
    assert prepared.report.rewritten  # (an escape alone has the trace rewritten: test_string_escapes.py)
    assert b'"x": 1.50, "y": 2E-3,' in prepared.data  # as the file wrote it
    assert b'"s":"\xc3\xa9/"' in prepared.data  # parsed, and written by orjson
    args = "SELECT key, int_value, string_value, real_value FROM args ORDER BY arg_set_id, key"
    kept = [tuple(r.__dict__.values()) for r in open_trace(path).query(args)]
    monkeypatch.setattr(lazy_args, "_cargs", None)
    parsed = [tuple(r.__dict__.values()) for r in open_trace(path).query(args)]
    assert kept == parsed
    assert ("args.x", None, None, 1.5) in kept and ("args.y", None, None, 0.002) in kept


def test_repeated_keys_in_args_reach_the_engine_as_the_file_wrote_them(tmp_path, small_pieces):
    """Parsed, the last of two equal keys won and the first value was gone before the engine saw it; kept as
    text, a rewritten trace gives the engine both, as an unchanged one always did (the file's own text)."""
    path = _trace_file(tmp_path, True)
    path.write_bytes(path.read_bytes().replace(b'"correlation": 9,', b'"correlation": 9, "d": 1, "d": [2],', 1))
    assert b'"d": 1, "d": [2],' in prepare_path(path).data


@pytest.mark.parametrize("broken", [b"tru", b"01", b"NaN", b'"\xff"', b"[1,]"])
@pytest.mark.parametrize("overlap", [True, False])
@pytest.mark.parametrize("jobs", [1, 2])
def test_args_that_are_not_json_refuse_the_load_as_the_whole_parse_does(tmp_path, small_pieces, broken, overlap,
                                                                         jobs):
    path = _trace_file(tmp_path, overlap, broken)
    with pytest.raises(TraceInputError) as whole:
        parse_trace(read_bytes(path), path)
    with pytest.raises(TraceInputError) as load:
        open_trace(path, jobs=jobs)
    assert str(load.value) == str(whole.value)
