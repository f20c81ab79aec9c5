"""Reading the project's own internal .sql files (not queries: those live in queries/)."""
from __future__ import annotations

import functools
import importlib.resources
import re

_SECTION = re.compile(r"^-- section: (\w+)\s*$", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def read_sql(name: str) -> str:
    return importlib.resources.files("kineto_sql").joinpath(f"sql/{name}").read_text()


@functools.lru_cache(maxsize=None)
def sections(name: str) -> dict[str, str]:
    """`-- section: NAME` splits one file into named statements, in file order."""
    text = read_sql(name)
    marks = list(_SECTION.finditer(text))
    return {m.group(1): text[m.end():(marks[i + 1].start() if i + 1 < len(marks) else len(text))].strip()
            for i, m in enumerate(marks)}
