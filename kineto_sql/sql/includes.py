"""Which modules a .sql file includes, transitively, in the order they must run."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.errors import QueryError
from kineto_sql.sql.package import PACKAGE, package_dir
from kineto_sql.sql.text import mask

INCLUDE_LINE = re.compile(r"^\s*INCLUDE\s+PERFETTO\s+MODULE\s+(?P<module>[A-Za-z0-9_.*]+)\s*;\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Include:
    """One `INCLUDE PERFETTO MODULE x;` line: the module and the 1-based line number."""

    module: str
    line: int

    @property
    def is_kineto(self) -> bool:
        return self.module.split(".")[0] == PACKAGE


def includes_of(sql: str) -> list[Include]:
    """The INCLUDE lines of real code (one inside a /* */ comment does not count: sql_text.mask)."""
    masked = mask(sql)
    return [Include(m["module"], sql.count("\n", 0, m.start()) + 1) for m in INCLUDE_LINE.finditer(masked)]


@functools.lru_cache(maxsize=1024)
def _file_includes(path: Path, _mtime_ns: int) -> tuple[Include, ...]:
    """A file's includes, read once per version of the file (diagnose asks for every query's closure)."""
    return tuple(includes_of(path.read_text()))


def module_path(module: str, root: Path | None = None) -> Path:
    """queries/kineto/lib/steps.sql for kineto.lib.steps."""
    base = Path(root) if root else package_dir()
    parts = module.split(".")
    return base.joinpath(*parts[1:]).with_suffix(".sql")


def kineto_dependencies(sql: str, root: Path | None = None) -> list[str]:
    """The kineto modules `sql` includes, transitively, each before the modules that include it."""
    ordered: list[str] = []
    visiting: list[str] = []

    def visit(module: str) -> None:
        if module in ordered:
            return
        if module in visiting:
            raise QueryError(f"include cycle: {' -> '.join(visiting + [module])}")
        path = module_path(module, root)
        if not path.is_file():
            raise QueryError(f"INCLUDE PERFETTO MODULE {module}: no file {path}")
        visiting.append(module)
        for inc in _file_includes(path, path.stat().st_mtime_ns):
            if inc.is_kineto:
                visit(inc.module)
        visiting.pop()
        ordered.append(module)

    for inc in includes_of(sql):
        if inc.is_kineto:
            visit(inc.module)
    return ordered


def strip_kineto_includes(sql: str) -> str:
    """The text without its `INCLUDE PERFETTO MODULE kineto...;` lines (stdlib includes stay)."""
    return INCLUDE_LINE.sub(lambda m: "" if m["module"].split(".")[0] == PACKAGE else m.group(0), sql)
