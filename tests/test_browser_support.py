"""The browser tests start Chromium one way: tests/browser_support.py (the skip reasons and the launch)."""
from __future__ import annotations

from pathlib import Path

from tests import browser_support

TESTS = Path(__file__).resolve().parent


def test_only_browser_support_starts_a_browser():
    starters = sorted(p.name for p in TESTS.glob("*.py")
                      if p.name not in ("browser_support.py", Path(__file__).name)
                      and ("sync_playwright" in p.read_text() or "chromium.launch(" in p.read_text()))
    assert starters == []
    users = sorted(p.name for p in TESTS.glob("test_*.py")
                   if p.name != Path(__file__).name and "pytestmark = browser_marks()" in p.read_text())
    assert users == ["test_report_browser.py", "test_ui_browser.py", "test_ui_privacy_browser.py"]


def test_browser_marks_say_why_a_browser_test_is_skipped():
    marks = browser_support.browser_marks()
    assert marks[0].name == "browser"
    skips = [m.kwargs["reason"] for m in marks[1:]]
    if browser_support.sync_playwright is None:
        assert skips == ["playwright is not installed: pip install playwright (never `playwright install`; the "
                         "browser is Debian's chromium)"]
    elif browser_support.CHROMIUM is None:
        assert skips == ["no Chromium at /usr/bin/chromium: run .ci/install-browser.sh (apt-get install chromium)"]
    else:
        assert skips == []
