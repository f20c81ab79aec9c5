"""Chromium under Playwright for the tests that open a real browser: one reason to skip, one launch.

Debian's chromium (`.ci/install-browser.sh`), driven by `pip install playwright` (never `playwright install`).
"""
from __future__ import annotations

from contextlib import contextmanager

import pytest

from kineto_sql.ui.browser import CHROMIUM_ARGS, find_chromium

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None

CHROMIUM = find_chromium()


def browser_marks() -> list:
    """`pytestmark` for a browser test module: the browser mark, and a skip with the reason when
    Playwright or Chromium is missing."""
    marks = [pytest.mark.browser]
    if sync_playwright is None:
        marks.append(pytest.mark.skip(reason="playwright is not installed: pip install playwright "
                                             "(never `playwright install`; the browser is Debian's chromium)"))
    elif CHROMIUM is None:
        marks.append(pytest.mark.skip(reason="no Chromium at /usr/bin/chromium: run .ci/install-browser.sh "
                                             "(apt-get install chromium)"))
    return marks


@contextmanager
def launched_chromium():
    """A headless Chromium; launch() gives every run a fresh temporary profile (Playwright refuses
    --user-data-dir in args)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module (import this fixture into the module)."""
    with launched_chromium() as b:
        yield b
