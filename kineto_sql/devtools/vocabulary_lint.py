"""One vocabulary: outside `queries/kineto/lib/`, no query compares against a raw Kineto event category or
a runtime-call name.

What an event is (`kineto.lib.event_categories`: event_class, gpu_kind, is_annotation) and what a runtime
call does (`kineto.lib.runtime_calls`: class, blocks_host) are decided once, in lib. A query that writes
`s.category = 'python_function'` or `name = 'cudaStreamSynchronize'` forks that decision: it misses the
2021 spellings, the HIP / MTIA names, the next rename. The check works on sqlglot's parse of each
statement body (`lint.parse_body`), so strings in comments, in output columns (`'kernel' AS source`) and
lib vocabulary values (`event_class = 'cpu_op'`, `class = 'launch'`) never trip it. Flagged, in a
comparison (`=`, `!=`, `IN`, `GLOB`, `LIKE`, `CASE x WHEN`):

- any string literal compared with a column named `category` (the raw category, on `slice` and on the lib
  tables that carry it through);
- a literal that is a raw category spelling which is not also a lib vocabulary value (the rows of
  `lib/event_categories.sql` plus flow / sync categories: `python_function`, `cuda_runtime`, `ac2g`...);
- a literal that names a runtime / driver API: `cuda*`, `cu[A-Z]*`, `hip[A-Z]*`, `mtia*`, `cupti*`,
  MTIA's `runFunction*` (`'cudaLaunchKernel'`, `'hip*'`, `'cuda%'`).

`ALLOWED` lists the files where this is unavoidable, each with the reason.
"""
from __future__ import annotations

import re
from pathlib import Path

from sqlglot import exp

from kineto_sql.catalog.spec import Problem
from kineto_sql.sql.package import package_dir
from kineto_sql.sql.text import ObjectDef, segments

# relative to queries/kineto/: file -> why it may spell raw names
ALLOWED: dict[str, str] = {
    "hta/gpu_events.sql": (
        "HTA emulation: hta_compat reproduces HTA 0.5.0's own literal lists (its category set for device ops, "
        "its `nccl*Kernel*` rule, the launch-call names each HTA analysis counts), which differ from "
        "kineto.lib's on purpose so that the numbers equal HTA's; every hta.* query reads them from here"),
}

# Values that are lib vocabulary (event_class, gpu_kind, kernel kind) as well as raw category spellings.
LIB_VALUES = frozenset({"cpu_op", "python", "runtime", "gpu", "gpu_annotation", "instant", "profiler", "kernel", "memcpy",
                        "memset"})
# Raw categories that lib/event_categories.sql does not map (flows, sync slices, profiler ranges).
EXTRA_CATEGORIES = frozenset({"ac2g", "fwdbwd", "cuda_sync", "cuda_profiler_range", "Trace", "overhead"})
_RUNTIME_NAME = re.compile(r"^[*%]?(cuda|hip[A-Z*%_]|cu[A-Z*%]|mtia|cupti|runFunction)")
_COMPARISONS = (exp.EQ, exp.NEQ, exp.In, exp.Glob, exp.Like, exp.ILike)


def raw_categories(root: Path) -> frozenset[str]:
    """The category spellings of lib/event_categories.sql (first string of each VALUES row) and the extras."""
    path = root / "lib" / "event_categories.sql"
    if not path.is_file():  # a partial copy of queries/ (tests): the installed package's table
        path = package_dir() / "lib" / "event_categories.sql"
    found: set[str] = set()
    if path.is_file():
        text = "".join(t if kind != "comment" else "\n" for kind, t in segments(path.read_text()))
        found = set(re.findall(r"\(\s*'([^']+)'\s*,", text))
    return frozenset(found | EXTRA_CATEGORIES)


def _operands(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.In):
        return [node.this, *node.expressions]
    if isinstance(node, exp.Case):
        return [node.this, *(i.this for i in node.args.get("ifs") or [])]
    return [node.this, node.expression]


def _is_category_column(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Column) and node.name.lower() == "category"


def violations(tree: exp.Expression, categories: frozenset[str]) -> list[tuple[str, str]]:
    """(literal, message) for each raw category / runtime-name literal compared in `tree`."""
    found: list[tuple[str, str]] = []
    nodes = [n for n in tree.find_all(*_COMPARISONS)]
    nodes += [n for n in tree.find_all(exp.Case) if n.this is not None]
    for node in nodes:
        operands = _operands(node)
        against_category = any(_is_category_column(o) for o in operands)
        for lit in operands:
            if not (isinstance(lit, exp.Literal) and lit.is_string):
                continue
            value = lit.this
            if against_category or (value in categories and value not in LIB_VALUES):
                found.append((value, f"raw event category '{value}' in a comparison: join "
                                     "kineto.lib.event_categories and test event_class / gpu_kind / "
                                     "is_annotation (or read a lib table) instead"))
            elif _RUNTIME_NAME.match(value):
                found.append((value, f"raw runtime-call name '{value}' in a comparison: runtime calls are "
                                     "classified once by the rule table of kineto.lib.runtime_calls; read "
                                     "kineto_runtime_calls.class (add a rule there if no class fits)"))
    return found


def check(path: Path, rel: Path, obj: ObjectDef, tree: exp.Expression,
          categories: frozenset[str]) -> list[Problem]:
    """Problems for one parsed object body of the file `rel` (relative to queries/kineto/)."""
    if rel.parts[0] == "lib" or rel.as_posix() in ALLOWED or obj.body is None:
        return []
    problems = []
    seen: set[str] = set()
    for value, message in violations(tree, categories):
        if value in seen:
            continue
        seen.add(value)
        at = obj.body.find(f"'{value}'")
        line = obj.body_line + (obj.body.count("\n", 0, at) if at >= 0 else 0)
        problems.append(Problem(path, line, f"{obj.name}: {message}"))
    return problems
