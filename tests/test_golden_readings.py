"""diagnose agrees with the expert readings of golden pairs (tests/readings/golden/*.toml, see its README.md).

The same three aspects as the corpus readings (tests/test_expert_readings.py, whose adapter this reuses): the
regime, the #1 finding above info, and no high finding that contradicts the reading. Each twin of a pair has its
own reading; the fixed twin's usually says that no finding above info is expected and that the planted fault's
detector must not be high. Where diagnose does not agree today the reading says what it says instead
(`[diagnose_disagrees]`) and that aspect is a strict xfail, so the mark turns red the day diagnose agrees.
A rank directory's reading applies to each rank; its `straggler` list is checked against the cross-rank summary.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.conftest import GOLDEN
from tests.test_expert_readings import ASPECTS, DETECTORS, NO_FINDING, REGIMES, first_of, highs_of, regime_of, said

READINGS = Path(__file__).resolve().parent / "readings" / "golden"
MANIFEST = json.loads((GOLDEN / "MANIFEST.json").read_text())


def _load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def reading_files() -> list[Path]:
    return sorted(READINGS.glob("*.toml"))


def _target(doc: dict) -> Path:
    return GOLDEN / doc["trace"].rstrip("/")


def _params(aspect: str):
    for path in reading_files():
        doc = _load(path)
        disagrees = doc.get("diagnose_disagrees", {}).get(aspect)
        marks = pytest.mark.xfail(strict=True, reason=f"diagnose on dev says: {disagrees}") if disagrees else ()
        yield pytest.param(path, id=path.stem, marks=marks)


def _traces(diagnosed, doc: dict):
    """The trace diagnoses the reading applies to: the trace's, or every rank's of a rank directory."""
    target = _target(doc)
    return list(diagnosed(target).traces) if target.is_dir() else [diagnosed(target)]


@pytest.mark.parametrize("path", list(_params("regime")))
def test_regime_matches_the_reading(path, diagnosed):
    doc = _load(path)
    accepted = [doc["regime"], *doc.get("regime_also", [])]
    for trace in _traces(diagnosed, doc):
        assert regime_of(trace) in accepted, f"{path.stem}: reading {accepted}, diagnose: {said(trace)}"


@pytest.mark.parametrize("path", list(_params("first")))
def test_first_finding_is_what_an_expert_fixes_first(path, diagnosed):
    doc = _load(path)
    for trace in _traces(diagnosed, doc):
        assert first_of(trace) in doc["expert_first"], \
            f"{path.stem}: expert fixes {doc['expert_first']} first, diagnose: {said(trace)}"


@pytest.mark.parametrize("path", list(_params("high")))
def test_no_high_finding_contradicts_the_reading(path, diagnosed):
    doc = _load(path)
    for trace in _traces(diagnosed, doc):
        wrong = highs_of(trace) & set(doc["must_not_be_high"])
        assert not wrong, f"{path.stem}: high {sorted(wrong)} contradicts the reading ({doc['why']})"


def _set_params():
    for path in reading_files():
        doc = _load(path)
        if "straggler" in doc:
            marks = pytest.mark.xfail(strict=True, reason=doc["straggler_disagrees"]) \
                if doc.get("straggler_disagrees") else ()
            yield pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", list(_set_params()))
def test_cross_rank_straggler_matches_the_reading(path, diagnosed):
    doc = _load(path)
    named = (diagnosed(_target(doc)).ranks_summary or {}).get("straggler")
    if doc["straggler"]:
        assert named in doc["straggler"], f"reading: one of ranks {doc['straggler']}; diagnose names {named}"
    else:
        assert named is None, f"reading: no straggler ({doc['why']}); diagnose names rank {named}"


@pytest.mark.parametrize("path", reading_files(), ids=lambda p: p.stem)
def test_reading_is_well_formed(path):
    doc = _load(path)
    assert doc["why"].strip() and doc["expected"].strip()
    assert doc["regime"] in REGIMES and set(doc.get("regime_also", [])) <= set(REGIMES)
    assert doc["expert_first"] and set(doc["expert_first"]) <= DETECTORS | {NO_FINDING}
    assert set(doc["must_not_be_high"]) <= DETECTORS
    assert not set(doc["expert_first"]) & set(doc["must_not_be_high"])
    assert set(doc.get("diagnose_disagrees", {})) <= set(ASPECTS)
    # the reading names a recorded golden twin, and its file name is that twin's
    target = _target(doc)
    assert target.exists(), target
    recorded = {e["path"].split("/rank")[0] if "/rank" in e["path"] else e["path"] for e in MANIFEST["traces"]}
    assert doc["trace"].rstrip("/") in recorded
    stem = target.name.removesuffix(".json.gz")
    assert path.stem == stem


def test_every_pair_has_both_readings():
    stems = {p.stem for p in reading_files()}
    assert stems
    for stem in stems:
        assert stem.endswith(("_planted", "_fixed")), stem
        twin = stem.removesuffix("_planted") + "_fixed" if stem.endswith("_planted") else stem.removesuffix("_fixed") + "_planted"
        assert twin in stems, f"{stem} has a reading but its twin {twin} has none"
