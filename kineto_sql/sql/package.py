"""The `kineto` PerfettoSQL package: every .sql file under queries/kineto, named as v52 wants it.

On v52 the package name is the text before the first dot of each module name, so `queries/kineto/lib/steps.sql`
registers as module `kineto.lib.steps`.
"""
from __future__ import annotations

import functools
import importlib.resources
import os
from pathlib import Path

PACKAGE = "kineto"


QUERIES_ENV = "KINETO_SQL_QUERIES"


def queries_root() -> Path:
    """The queries/ directory: the installed one, or $KINETO_SQL_QUERIES (a working copy of queries/,
    e.g. to try a catalog change without touching the checkout)."""
    override = os.environ.get(QUERIES_ENV)
    if override:
        return Path(override)
    return Path(str(importlib.resources.files("kineto_sql.queries")))


def package_dir() -> Path:
    return queries_root() / PACKAGE


def module_name(path: Path) -> str:
    rel = path.relative_to(queries_root()).with_suffix("")
    return ".".join(rel.parts)


@functools.lru_cache(maxsize=1)
def _modules_cached(root: str) -> tuple[tuple[str, str], ...]:
    base = Path(root)
    return tuple((module_name(p), p.read_text()) for p in sorted(base.rglob("*.sql")))


def package_modules() -> dict[str, str]:
    return dict(_modules_cached(str(package_dir())))
