"""Nothing leaves the machine when a trace is opened in the local Perfetto UI, proven in a real browser.

The Perfetto UI v52 turns Google Analytics on when its origin is `http://localhost:PORT` (initAnalytics in
frontend_bundle.js) and reports window.location.href, which holds the token and the startup SQL. The server
(kineto_sql/ui/server.py) never serves that origin (it sends the browser on to 127.0.0.1), sends a
Content-Security-Policy that allows nothing but its own origin, and the launch page switches the UI's
analytics setting off. Here Chromium opens the launch URL the way `kineto-sql open` prints it, on both host
names, with a startup query; every request the browser context makes (pages, workers, the service worker)
is recorded through Playwright's routing, and none may go anywhere but 127.0.0.1:PORT.

Needs `pip install playwright` and /usr/bin/chromium (`.ci/install-browser.sh`); skipped with the reason
otherwise. The same headers are checked without a browser in tests/test_ui_server.py.
"""
from __future__ import annotations

import urllib.parse

import pytest

from kineto_sql.ui.browser import UiPage
from kineto_sql.ui.session import plan_open, serve
from tests.browser_support import browser, browser_marks  # noqa: F401  (fixture)
from tests.conftest import CORPUS

TRACE = CORPUS / "hta_critical_path_cuda_event_sync.json.gz"  # tiny: one step with syncs and aten::item
pytestmark = browser_marks()
if not TRACE.is_file():
    pytestmark.append(pytest.mark.skip(reason=f"the public corpus is not at {CORPUS}"))


class Recorder:
    """Every request of one browser context: `routed` is what reached the network layer (Playwright's route
    sees each request the browser would send, from pages, workers and the service worker), `attempted` is
    every request the page started (Chromium reports those its Content-Security-Policy blocks too), `failed`
    the reason each failed one gives."""

    def __init__(self, context, port: int):
        self.port = port
        self.routed: list[str] = []
        self.attempted: list[str] = []
        self.failed: dict[str, str] = {}
        context.route("**/*", self._route)
        context.on("request", lambda request: self.attempted.append(request.url))
        context.on("requestfailed", lambda request: self.failed.setdefault(request.url, request.failure or ""))

    def _route(self, route):
        url = route.request.url
        self.routed.append(url)
        if urllib.parse.urlsplit(url).netloc not in (f"127.0.0.1:{self.port}", f"localhost:{self.port}"):
            return route.abort()  # recorded above, and the test fails on it: never let it reach the network
        return route.continue_()


def _outside(urls: list[str], port: int, typed: str) -> list[str]:
    """The URLs that go anywhere but 127.0.0.1:PORT (the one URL the user typed aside)."""
    out = []
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if url == typed or parts.scheme in ("data", "blob", "about"):
            continue
        if parts.netloc != f"127.0.0.1:{port}":
            out.append(url)
    return out


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_no_request_leaves_127_0_0_1_and_analytics_stay_off(browser, host):
    plan = plan_open(TRACE, query="reading.step_table")
    with serve(plan) as session:
        port = session.server.port
        url = session.launch_url.replace("127.0.0.1", host, 1)
        context = browser.new_context(viewport={"width": 1400, "height": 900}, service_workers="allow")
        seen = Recorder(context, port)
        try:
            page = UiPage(context.new_page())
            page.load(url, timeout_s=90)
            origin = page.page.evaluate("location.origin")
            assert origin == f"http://127.0.0.1:{port}", f"the UI ran on {origin}"
            # the trace is loaded (tracks drawn): the UI did everything it does at startup
            assert page.page.query_selector(".pf-track") is not None
            settings = page.page.evaluate("JSON.parse(localStorage.getItem('perfettoSettings') || '{}')")
            assert settings.get("analyticsEnable") is False, settings
            assert page.page.evaluate("typeof window.gtag === 'undefined' && !('dataLayer' in window)")
            # a script that tries anyway is refused by the policy, before any request is made
            refused = page.page.evaluate(
                "fetch('https://www.google-analytics.com/g/collect?v=2').then(() => 'sent', e => 'refused: ' + e)")
            assert refused.startswith("refused"), refused
            loaded = page.page.evaluate(
                "new Promise(r => { const s = document.createElement('script'); s.src = "
                "'https://www.googletagmanager.com/gtag/js?id=G-BD89KT2P3C'; s.onload = () => r('loaded'); "
                "s.onerror = () => r('refused'); document.head.appendChild(s); })")
            assert loaded == "refused"
            page.idle(200)
        finally:
            context.close()
    assert any(f"127.0.0.1:{port}/kineto-sql/" in u for u in seen.routed), "the trace was never fetched"
    assert len(seen.routed) >= 5, seen.routed  # the launch page, the UI, its bundles, the trace
    left = _outside(seen.routed, port, url)
    assert left == [], f"requests that reached the network for somewhere other than 127.0.0.1:{port}: {left[:10]}"
    # what the UI (or the test's own script) tried for elsewhere was refused in the browser by the policy
    tried = _outside(seen.attempted, port, url)
    assert "https://www.googletagmanager.com/gtag/js?id=G-BD89KT2P3C" in tried
    # (Chromium's failure text for a request its policy refused: "csp", net::ERR_BLOCKED_BY_CSP in older builds)
    not_blocked = {u: seen.failed.get(u) for u in tried if "csp" not in (seen.failed.get(u) or "").lower()}
    assert not_blocked == {}, f"started and not refused by the Content-Security-Policy: {not_blocked}"
    if host == "localhost":  # the first request is the one the user typed; nothing else went to that origin
        assert {u for u in seen.routed if "://localhost:" in u} == {url}
