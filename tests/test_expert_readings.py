"""diagnose agrees with the expert readings of the public corpus (tests/readings/*.toml, see its README.md).

For every trace (every rank of a rank directory) with a clear reading: diagnose's regime is the reading's,
its #1 finding is one the reading accepts, and no high finding is one the reading says contradicts it.
Where diagnose on dev does not agree yet, the reading file says what diagnose says today
(`[diagnose_disagrees]`), and that aspect is a strict xfail: it turns red the day diagnose agrees, so the
mark cannot go stale. A second test recomputes every number of every reading from the raw JSON with
tests/readings/compute_readings.py (no kineto-sql), so the data cannot drift from the traces.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import CORPUS, corpus_id, corpus_traces, needs_corpus
from tests.readings import compute_readings

pytestmark = [pytest.mark.corpus, needs_corpus]

READINGS = Path(__file__).resolve().parent / "readings"
REGIMES = ("device-bound", "host-bound", "communication-bound", "mixed")
DETECTORS = {f"catalog.{x}" for x in (
    "sync_forcing_op input_bound small_op_storm gc_gil_stall with_stack_overhead straggler_rank schedule_distortion "
    "memory_churn implicit_dtype_casts compile_graph_breaks record_function_absence optimizer_step_dominance "
    "activation_checkpoint_surprise dataloader_workers_missing cuda_graph_regions blocking_copy exposed_communication "
    "cold_start capture_validity kernel_mix host_compute_gaps op_far_from_peak device_composition unexplained_time host_composition").split()}
NO_FINDING = "none"  # in expert_first: "no finding above info" is an acceptable answer
ASPECTS = ("regime", "first", "high")


# ----------------------------------------------------------------------------- adapter
# What diagnose says, in the shared vocabulary. The verdict is moving into SQL (issue 12); this is the one
# place that knows how today's Diagnosis spells it.
ID_ALIASES = {"catalog.unoverlapped_allreduce": "catalog.exposed_communication"}


def regime_of(trace) -> str | None:
    """The verdict's regime, or None where diagnose gives none of the four ("no steps", "CPU only")."""
    regime = trace.verdict.regime
    return regime if regime in REGIMES else None


def _id(query_id: str) -> str:
    return ID_ALIASES.get(query_id, query_id)


def first_of(trace) -> str:
    """The #1 finding: the highest-ranked one that costs step time (info findings cost none)."""
    return next((_id(f.query_id) for f in trace.findings if f.severity != "info"), NO_FINDING)


def highs_of(trace) -> set[str]:
    return {_id(f.query_id) for f in trace.findings if f.severity == "high"}


def said(trace) -> str:
    ranked = [f"{_id(f.query_id)} {f.severity} {f.impact_pct}%" for f in trace.findings if f.severity != "info"][:3]
    return f"regime {trace.verdict.regime!r}; findings {ranked}"


# ----------------------------------------------------------------------------- the readings
@dataclass(frozen=True)
class Case:
    name: str  # reading stem, or stem/rank for a rank directory
    target: Path  # the trace file, or the rank directory
    file: str | None  # the rank's file name inside a rank directory
    reading: dict


def _load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def reading_files() -> list[Path]:
    return sorted(READINGS.glob("*.toml"))


def cases() -> list[Case]:
    out = []
    for path in reading_files():
        doc = _load(path)
        target = CORPUS / doc["trace"].rstrip("/")
        if "ranks" in doc:
            out += [Case(f"{path.stem}/{rank}", target, r["file"], r) for rank, r in doc["ranks"].items()]
        else:
            out.append(Case(path.stem, target, None, doc))
    return out


CASES = cases()


def _params(aspect: str):
    for case in CASES:
        r = case.reading
        if aspect in ("regime", "first") and "ambiguous" in r:
            continue
        if aspect == "regime" and r.get("regime") == "unreadable":
            continue
        marks = ()
        disagrees = r.get("diagnose_disagrees", {}).get(aspect)
        if disagrees:
            marks = pytest.mark.xfail(strict=True, reason=f"diagnose on dev says: {disagrees}")
        yield pytest.param(case, id=case.name, marks=marks)


# ----------------------------------------------------------------------------- diagnose, once per trace
@pytest.fixture(scope="session")
def diagnosis_of(diagnosed):
    """The case's TraceDiagnosis: the trace's own, or its rank's within the rank directory's diagnosis
    (both computed once per session by conftest's `diagnosed`, shared with the other test files)."""
    def get(case: Case):
        if case.file is None:
            return diagnosed(case.target)
        (trace,) = [t for t in diagnosed(case.target).traces if Path(t.source).name == case.file]
        return trace

    return get


@pytest.mark.parametrize("case", list(_params("regime")))
def test_regime_matches_the_reading(case, diagnosis_of):
    trace = diagnosis_of(case)
    accepted = [case.reading["regime"], *case.reading.get("regime_also", [])]
    assert regime_of(trace) in accepted, f"{case.name}: reading {accepted}, diagnose: {said(trace)}"


@pytest.mark.parametrize("case", list(_params("first")))
def test_first_finding_is_what_an_expert_fixes_first(case, diagnosis_of):
    trace = diagnosis_of(case)
    accepted = case.reading["expert_first"]
    assert first_of(trace) in accepted, f"{case.name}: expert fixes {accepted} first, diagnose: {said(trace)}"


@pytest.mark.parametrize("case", list(_params("high")))
def test_no_high_finding_contradicts_the_reading(case, diagnosis_of):
    trace = diagnosis_of(case)
    wrong = highs_of(trace) & set(case.reading["must_not_be_high"])
    assert not wrong, f"{case.name}: high {sorted(wrong)} contradicts the reading ({case.reading['why']})"


def _set_params():
    for path in reading_files():
        doc = _load(path)
        if "ranks" in doc:
            marks = pytest.mark.xfail(strict=True, reason=doc["straggler_disagrees"]) \
                if doc.get("straggler_disagrees") else ()
            yield pytest.param(path, CORPUS / doc["trace"].rstrip("/"), id=path.stem, marks=marks)


@pytest.mark.parametrize("path,target", list(_set_params()))
def test_cross_rank_straggler_matches_the_reading(path, target, diagnosed):
    doc = _load(path)
    named = (diagnosed(target).ranks_summary or {}).get("straggler")
    if doc["straggler"]:
        assert named in doc["straggler"], f"reading: one of ranks {doc['straggler']}; diagnose names {named}"
    else:
        assert named is None, f"reading: no straggler ({doc['why']}); diagnose names rank {named}"


# ----------------------------------------------------------------------------- the data itself
@lru_cache(maxsize=None)
def _computed(target: Path) -> dict:
    return compute_readings.readings_of(target)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_numbers_are_what_the_script_computes_from_the_raw_trace(case):
    computed = _computed(case.target)
    computed = computed[case.file] if case.file else computed
    written = case.reading["numbers"]
    assert len(written) >= 2, f"{case.name}: a reading shows at least 2 numbers"
    for key, value in written.items():
        got = computed[key]
        if isinstance(value, str):
            assert got == value, f"{case.name}: {key} is {got!r} in the trace, {value!r} in the reading"
        else:
            assert got is not None and math.isclose(got, value, abs_tol=0.051), \
                f"{case.name}: {key} is {got} in the trace, {value} in the reading"
    if "ambiguous" not in case.reading and case.reading["regime"] != "unreadable":
        assert case.reading["regime"] == computed["rule_regime"], \
            f"{case.name}: the numbers give {computed['rule_regime']} by the README's rule"


def test_every_corpus_trace_has_one_reading():
    covered = [c.target / c.file if c.file else c.target for c in CASES]
    assert sorted(covered) == corpus_traces(), "readings and ../shared/corpus differ"
    assert len(covered) == len(set(covered)) == 40


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reading_uses_the_shared_vocabulary(case):
    r = case.reading
    assert r["why"].strip()
    assert set(r["must_not_be_high"]) <= DETECTORS
    assert set(r.get("diagnose_disagrees", {})) <= set(ASPECTS)
    if "ambiguous" in r:
        assert r["ambiguous"].strip() and "expert_first" not in r and "regime" not in r
        return
    assert r["regime"] in (*REGIMES, "unreadable") and set(r.get("regime_also", [])) <= set(REGIMES)
    assert r["expert_first"] and set(r["expert_first"]) <= DETECTORS | {NO_FINDING}
    assert not set(r["expert_first"]) & set(r["must_not_be_high"])


def test_readme_lists_every_ambiguous_trace():
    readme = (READINGS / "README.md").read_text()
    for case in CASES:
        if "ambiguous" in case.reading:
            assert f"`{case.name}`" in readme, f"{case.name} is ambiguous but not listed in tests/readings/README.md"


def test_corpus_ids_match_conftest():
    # the reading stems are the corpus ids without .json.gz (rank directories: the directory)
    stems = {p.stem for p in reading_files()}
    ids = {corpus_id(p).split("/")[0].removesuffix(".json.gz") for p in corpus_traces()}
    assert stems == ids
