"""The HTML report in a real browser: its header, loading, per-step, findings and rules sections render, and
the findings chart is scaled to the step (a small finding is a sliver, not a full-width bar).

Debian's chromium via Playwright (never `playwright install`); skipped with the reason when absent.
Screenshots of each section go to tests/artifacts/report_*.png for a person to look at.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kineto_sql import __version__
from kineto_sql.cli.main import cli
from kineto_sql.ui.browser import CHROMIUM_ARGS, find_chromium

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "golden" / "traces" / "gc_stall_planted.json.gz"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = find_chromium()

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None

if sync_playwright is None:
    pytestmark = [pytestmark, pytest.mark.skip(reason="playwright is not installed: pip install playwright")]
elif CHROMIUM is None:
    pytestmark = [pytestmark, pytest.mark.skip(reason="no Chromium at /usr/bin/chromium: run .ci/install-browser.sh")]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(cli, ["diagnose", str(TRACE), "--format", "html", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(CliRunner().invoke(cli, ["diagnose", str(TRACE), "--format", "json", "-q"]).stdout)["result"]
    return out, data["traces"][0]


def test_report_sections_in_chromium(report):
    path, trace = report
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot")

        header = page.locator("#report-header")
        text = header.inner_text()
        assert str(TRACE) in text and f"kineto-sql\t{__version__}, engine wasm" in text
        assert "GPU\tnone recorded" in text and " UTC" in text
        header.screenshot(path=str(ARTIFACTS / "report_header.png"))

        loading = page.locator("section#trace .loading")
        assert "nothing lost" in loading.inner_text() and "timestamps_rebased: 1435" in loading.inner_text()
        loading.screenshot(path=str(ARTIFACTS / "report_loading.png"))

        steps = page.locator("table.steps")
        rows = steps.locator("tr")
        assert rows.count() == 1 + len(trace["verdict"]["per_step"]) == 4
        assert rows.nth(3).inner_text().split("\t")[:2] == ["6", "400.2 ms"]
        steps.screenshot(path=str(ARTIFACTS / "report_steps.png"))

        rules = page.locator(".rules")
        for query_id in trace["silent"]:
            assert query_id in rules.inner_text()
        for skipped in trace["skipped"]:
            assert skipped["query_id"] in rules.inner_text()
        rules.screenshot(path=str(ARTIFACTS / "report_rules.png"))

        ops = page.locator("table.ops")
        longest = max((op["name"] for op in trace["top_ops"]), key=len)
        assert len(longest) > 60 and longest in ops.inner_text()  # op names are not cut
        ops.screenshot(path=str(ARTIFACTS / "report_ops.png"))

        # The findings chart's axis is the whole profiled step time: 0-100%.
        ranges = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
            .filter(d => (d.layout.title.text || '').startsWith('findings'))
            .map(d => [d.layout.xaxis.range, d.data[0].x])""")
        assert len(ranges) == 1
        axis, values = ranges[0]
        assert axis == [0, 100]
        shares = sorted(f["impact_pct"] for f in trace["findings"] if f["impact_ns"] > 0)
        assert sorted(values) == shares
        chart = page.locator(".js-plotly-plot").filter(has_text="findings").first
        chart.screenshot(path=str(ARTIFACTS / "report_findings_chart.png"))
        page.screenshot(path=str(ARTIFACTS / "report_full.png"), full_page=True)
        browser.close()
