"""Every query on every golden trace (and a few corpus traces of other formats): a canonical CSV snapshot
per (query, trace) where the query returns rows; where it is silent or not applicable there is no file
(the rule's own test file says which it must be). Plus reading.op_table against torch's own key_averages()
of the same window. `--snapshot-update` writes new snapshots and deletes those of queries now silent."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kineto_sql.catalog.spec import load_catalog
from kineto_sql.run.runner import run_query
from tests.conftest import GOLDEN
from tests.query_support import (MAX_SNAPSHOT_ROWS, canonical_csv, corpus_selection, golden_trace_paths,  # noqa: F401
                                 snapshot_csv, trace_name)

TRACES = golden_trace_paths() + corpus_selection()
QUERY_IDS = load_catalog().ids()

# Rows where our op table cannot match torch, and why.
# (Kineto's tid-0 frames of other python threads used to merge into the main thread; the loader now keeps
# them on their own thread, so no row differs today.)
KEY_AVERAGES_KNOWN_DIFFERENCES: dict[str, str] = {}


def _id(path: Path) -> str:
    return trace_name(path).replace(":", "-")


SNAPSHOTS = Path(__file__).with_name("__snapshots__") / Path(__file__).stem


def run_result(loaded, query_id: str, path: Path) -> str | None:
    """The canonical CSV text of the query's rows; None when it returns none or is not applicable."""
    run = run_query(loaded(path), query_id)
    if run.not_applicable or run.df.empty:
        return None
    return canonical_csv(run.df, MAX_SNAPSHOT_ROWS)


def snapshot_file(query_id: str, path: Path) -> Path:
    return SNAPSHOTS / f"test_snapshot[{query_id}-{_id(path)}].csv"


@pytest.mark.parametrize("path", TRACES, ids=_id)
@pytest.mark.parametrize("query_id", QUERY_IDS)
def test_snapshot(loaded, snapshot_csv, query_id, path, request):  # noqa: F811
    result = run_result(loaded, query_id, path)
    if result is not None:
        assert snapshot_csv == result
        return
    stale = snapshot_file(query_id, path)
    if stale.exists() and request.config.option.update_snapshots:
        stale.unlink()
    assert not stale.exists(), f"{query_id} returns no rows on {_id(path)} now: rerun with --snapshot-update"


_TORCH_VERSION = {e["path"]: e["ground_truth"]["torch_version"]
                  for e in json.loads((GOLDEN / "MANIFEST.json").read_text())["traces"]} \
    if (GOLDEN / "MANIFEST.json").exists() else {}


def _key_averages_lists_python_frames(path: Path) -> bool:
    """torch before 2.15 lists the with_stack frames (python_function events) in key_averages(); 2.15 lists
    only ops and annotations (seen on the torch 2.15.0 re-recordings of the golden set)."""
    version = _TORCH_VERSION.get(path.relative_to(GOLDEN).as_posix(), "2.13")
    major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    return (major, minor) < (2, 15)


GOLDEN_WITH_TORCH_TABLE = [p for p in golden_trace_paths() if p.with_name(p.name.replace(".json.gz", ".ops.csv")).exists()]


@pytest.mark.parametrize("path", GOLDEN_WITH_TORCH_TABLE, ids=_id)
def test_op_table_matches_torch_key_averages(loaded, path):
    """Calls exact; self CPU and CPU total within 1% or 2 us; self device / device total too."""
    torch_table = pd.read_csv(path.with_name(path.name.replace(".json.gz", ".ops.csv")), keep_default_na=False)
    ours = run_query(loaded(path), "reading.op_table").df.set_index("name")
    mismatches = []
    for row in torch_table.itertuples(index=False):
        key = row.key
        if key in KEY_AVERAGES_KNOWN_DIFFERENCES:
            continue
        if key not in ours.index:
            mismatches.append(f"{key}: missing")
            continue
        mine = ours.loc[key]
        if int(mine.calls) != int(row.count):
            mismatches.append(f"{key}: calls {mine.calls} != {row.count}")
        for ours_ns, theirs_us, what in ((mine.self_cpu_dur, row.self_cpu_time_total_us, "self cpu"),
                                         (mine.cpu_dur, row.cpu_time_total_us, "cpu total"),
                                         (mine.self_device_dur, row.self_device_time_total_us, "self device"),
                                         (mine.device_dur, row.device_time_total_us, "device total")):
            if abs(ours_ns / 1e3 - theirs_us) > max(2.0, 0.01 * abs(theirs_us)):
                mismatches.append(f"{key}: {what} {ours_ns / 1e3:.3f} us != {theirs_us} us")
    extra = sorted(set(ours.index) - set(torch_table.key))
    if not _key_averages_lists_python_frames(path):
        extra = [name for name in extra if ours.loc[name, "kind"] != "python"]
    assert mismatches == []
    assert extra == []
