"""The HTML report in a real browser, on a CPU golden trace, a single-GPU corpus trace and an 8-rank corpus
job: the ledger chart draws the verdict's own numbers (read back from the drawn bars and compared with the
JSON report), the legend has no empty entry, the findings chart is scaled to the step, the findings' Markdown
is rendered, no chart covers its caption, and the page is small.

Debian's chromium via Playwright (never `playwright install`); skipped with the reason when absent.
Screenshots go to $KINETO_SQL_SHOTS (else tests/artifacts/) for a person to look at.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kineto_sql import __version__
from kineto_sql.cli.main import cli
from kineto_sql.diagnose.narrate import pct
from tests.browser_support import browser, browser_marks  # noqa: F401  (fixture)
from tests.conftest import CORPUS

pytestmark = browser_marks()

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "golden" / "traces" / "gc_stall_planted.json.gz"
TARGETS = {"cpu": TRACE, "gpu": CORPUS / "hta_trace_diff_control.json.gz", "ranks": CORPUS / "dlrm_8rank"}
SHOTS = Path(os.environ.get("KINETO_SQL_SHOTS") or Path(__file__).resolve().parent / "artifacts")

@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    made = {}

    def get(name: str) -> tuple[Path, dict]:
        if name not in made:
            target = TARGETS[name]
            if not target.exists():
                pytest.skip(f"{target} is not here")
            out = tmp_path_factory.mktemp(name) / "report.html"
            result = CliRunner().invoke(cli, ["diagnose", str(target), "--format", "html", "-o", str(out), "-q"])
            assert result.exit_code in (0, 1), result.output
            doc = json.loads(CliRunner().invoke(cli, ["diagnose", str(target), "--format", "json", "-q"]).stdout)["result"]
            made[name] = out, doc
        return made[name]

    return get


# every ledger chart's bars as drawn: [{label, faded, buckets: {bucket: ns}}]
BARS = """fig => [...fig.querySelectorAll('svg g[data-column]')].map(g => ({
    label: g.dataset.column, faded: g.classList.contains('faded'),
    buckets: Object.fromEntries([...g.querySelectorAll('rect')].map(r => [r.dataset.bucket, Number(r.dataset.ns)]))}))"""


def _check_ledger(section, trace: dict) -> None:
    """The bars of the analysed windows sum, bucket by bucket, to the verdict's ledger; the legend is that
    ledger (shares as the verdict prints them), with no empty entry; the chart sits below its caption."""
    verdict = trace["verdict"]
    figure = section.locator("figure.ledger")
    bars = figure.evaluate(BARS)
    assert len(bars) == len(verdict["ledger_windows"])
    analysed = [b for b in bars if not b["faded"]]
    summed: dict[str, int] = {}
    for bar in analysed:
        for bucket, ns in bar["buckets"].items():
            summed[bucket] = summed.get(bucket, 0) + ns
    assert summed == {b["bucket"]: b["dur_ns"] for b in verdict["ledger"] if b["dur_ns"] > 0}
    legend = figure.locator("table.legend tr[data-bucket]")
    rows = [legend.nth(i).inner_text().split("\t") for i in range(legend.count())]
    assert [r[0].strip() for r in rows] == [b["bucket"] for b in verdict["ledger"] if b["dur_ns"] > 0]
    assert [r[1] for r in rows] == [pct(b["pct"]) for b in verdict["ledger"] if b["dur_ns"] > 0]
    assert all(r[0].strip() and r[2].strip() for r in rows)  # no empty legend entry
    caption, chart = figure.locator("figcaption").bounding_box(), figure.locator("svg").bounding_box()
    assert caption["y"] + caption["height"] <= chart["y"] + 1  # nothing drawn over the title


def _check_findings(section, trace: dict) -> None:
    findings = trace["findings"]
    shares = section.locator("svg.shares rect").evaluate_all("rs => rs.map(r => Number(r.dataset.pct))")
    assert shares == [f["impact_pct"] for f in findings if f["impact_ns"] > 0 and f["impact_pct"] is not None][:10]
    cards = section.locator(".finding")
    assert cards.count() == len(findings)
    first = cards.first
    labels = first.locator("li strong").all_inner_texts()
    assert labels[0] == "why we think so:" and labels[-1] == "reference:"  # the Markdown, rendered
    assert first.locator("pre code").inner_text().startswith("kineto-sql run ")
    assert "**" not in first.inner_text() and "`" not in first.inner_text()


def test_cpu_golden_report(reports, browser):
    path, doc = reports("cpu")
    trace = doc["traces"][0]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    header = page.locator("#report-header").inner_text()
    assert str(TRACE) in header and f"kineto-sql\t{__version__}, engine wasm" in header
    assert "GPU\tnone recorded" in header and " UTC" in header
    section = page.locator("section#trace")
    _check_ledger(section, trace)
    _check_findings(section, trace)
    steps = section.locator("table.steps tr")
    assert steps.count() == 1 + len(trace["verdict"]["per_step"]) == 4
    assert steps.nth(0).inner_text().split("\t") == ["step", "step time", "CPU busy"]  # no GPU column of n/a
    assert steps.nth(3).inner_text().split("\t")[:2] == ["6", "400.2 ms"]
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    loading = section.locator(".loading").inner_text()
    assert "nothing lost" in loading and "timestamps_rebased: 1435" in loading
    rules = section.locator(".rules").inner_text()
    assert all(q in rules for q in trace["silent"]) and all(s["query_id"] in rules for s in trace["skipped"])
    longest = max((op["name"] for op in trace["top_ops"]), key=len)
    assert len(longest) > 60 and longest in section.locator("table.ops").inner_text()  # op names are not cut
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "cpu_top.png"))
    section.locator("figure.ledger").screenshot(path=str(SHOTS / "cpu_ledger.png"))
    section.locator(".findings").screenshot(path=str(SHOTS / "cpu_findings.png"))
    page.close()
    assert path.stat().st_size < 100_000


def test_single_gpu_corpus_report(reports, browser):
    path, doc = reports("gpu")
    trace = doc["traces"][0]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    section = page.locator(f"section#rank{trace['rank']}")
    _check_ledger(section, trace)
    _check_findings(section, trace)
    # the verdict's largest exposed-communication share is what the chart draws, not "100% GPU busy"
    exposed = next(b for b in trace["verdict"]["ledger"] if b["bucket"] == "busy.comm_exposed")
    assert exposed["pct"] > 15 and "busy.comm_exposed" in section.locator("table.legend").inner_text()
    head = section.locator("table.steps tr").first.inner_text().split("\t")
    assert head == ["step", "step time", "CPU busy", "GPU busy", "GPU occupancy"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "gpu_top.png"))
    section.locator(".finding").first.screenshot(path=str(SHOTS / "gpu_finding1.png"))
    page.close()
    assert path.stat().st_size < 150_000  # the plotly page was 4.8 MB


def test_multi_rank_corpus_report(reports, browser):
    path, doc = reports("ranks")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    ranks = page.locator("section#ranks")
    straggler = doc["ranks_summary"]["straggler"]
    assert ranks.locator("p").first.inner_text().startswith(f"Rank {straggler} is the straggler")
    # the job's reading comes before every rank's section
    order = page.evaluate("() => [...document.querySelectorAll('body > section')].map(s => s.id)")
    assert order[0] == "ranks" and order[1:] == [f"rank{t['rank']}" for t in doc["traces"]]
    # per rank, one bar: its ledger over its analysed windows, i.e. its mean step
    bars = {b["label"]: b["buckets"] for b in ranks.locator("figure.ranks").evaluate(BARS)}
    for trace in doc["traces"]:
        windows = [w for w in trace["verdict"]["ledger_windows"]
                   if not w["cold"] or not trace["verdict"]["steady_representative"]]
        want = {b["bucket"]: round(b["dur_ns"] / len(windows)) for b in trace["verdict"]["ledger"] if b["dur_ns"]}
        assert bars[f"rank {trace['rank']}"] == want
        _check_ledger(page.locator(f"section#rank{trace['rank']}"), trace)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "ranks_top.png"))
    page.evaluate(f"document.getElementById('rank{straggler}').scrollIntoView()")
    page.screenshot(path=str(SHOTS / "ranks_straggler.png"))
    page.close()
