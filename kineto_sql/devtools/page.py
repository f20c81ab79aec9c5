"""A rule's doc page, rendered from its header and its test file (ruff's rule pages are the model):
what it does, how to confirm, why it is bad, known problems, the example case, what to use instead,
then parameters and bookkeeping. `kineto-sql show ID` prints it; queries/REFERENCE.md holds all of them.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from kineto_sql.catalog.spec import Catalog, QuerySpec, load_catalog
from kineto_sql.catalog.cases import RowCase, load_rule_tests
from kineto_sql.sql.package import queries_root

REFERENCE_NAME = "REFERENCE.md"
SECTIONS = (("what", "What it does"), ("confirming", "How to confirm"), ("why", "Why is this bad?"),
            ("known_problems", "Known problems"), ("use_instead", "Use instead"))
AREAS = (("catalog", "Fault detectors"), ("reading", "Reading order"), ("guide", "Beginner's guide indicators"),
         ("hta", "HTA analyses"))


def _plain(value) -> str:
    return "NULL" if value is None else str(value)


def describe_case(case: RowCase) -> list[str]:
    """The example case in words: its trace, its parameters, what it returns."""
    lines = []
    if case.trace_json is not None:
        lines.append(f"trace: inline Kineto JSON ({len(case.trace_json)} characters)")
    else:
        lines.append("trace (us, as Kineto writes them):")
        for event in case.events:
            fields = {k: v for k, v in event.items() if k != "type"}
            repeat = fields.pop("repeat", None)
            every = fields.pop("every_us", None)
            text = f"{event['type']}(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"
            if repeat:
                text += f" x{repeat}, every {every} us"
            lines.append(f"  {text}")
    if case.params:
        lines.append("params: " + ", ".join(f"{k}={v!r}" for k, v in case.params.items()))
    if case.not_applicable:
        lines.append("result: not applicable")
    else:
        count = case.expect_count if case.expect_count is not None else len(case.rows)
        lines.append(f"result: {count} row(s)")
        for row in case.rows:
            lines.append("  " + ", ".join(f"{c}={_plain(v)}" for c, v in zip(case.columns, row)))
    return lines


def render_text(spec: QuerySpec, width: int = 100) -> str:
    out = [f"{spec.id_version}  {spec.title}", f"{spec.kind}, {spec.status}"
           + (f"; catalog rows {', '.join(spec.catalog_rows)}" if spec.catalog_rows else ""), ""]
    example = _example(spec)
    for key, heading in SECTIONS:
        if key == "use_instead" and example is not None:
            out.append(f"Example (case {example.name} of {spec.path.stem}.test.toml)")
            out += ["  " + line for line in describe_case(example)]
            out.append("")
        text = getattr(spec, key)
        if text:
            out.append(heading)
            out += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="  ")
            out.append("")
    if spec.params:
        out.append("Parameters (-p NAME VALUE)")
        for p in spec.params:
            out += textwrap.wrap(f"{p.name} = {_plain(p.default)} ({p.type}): {p.description}", width,
                                 initial_indent="  ", subsequent_indent="      ")
        out.append("")
    out.append(f"needs:      {', '.join(spec.needs) or 'none'}")
    out.append(f"references: {spec.references}")
    out.append(f"entrypoint: {spec.entrypoint}({', '.join(p.name for p in spec.params)})  in module {spec.module}")
    out.append(f"path:       {spec.path}")
    return "\n".join(out) + "\n"


def _example(spec: QuerySpec) -> RowCase | None:
    tests = load_rule_tests(spec.id, spec.path)
    if spec.example:
        return tests.case(spec.example)
    return None


def render_markdown(spec: QuerySpec) -> str:
    out = [f"### `{spec.id}`", "", f"**{spec.title}**", "",
           f"version {spec.version}, {spec.kind}, {spec.status}; needs {', '.join(spec.needs) or 'none'}"
           + (f"; catalog rows {', '.join(f'`{r}`' for r in spec.catalog_rows)}" if spec.catalog_rows else ""), ""]
    example = _example(spec)
    for key, heading in SECTIONS:
        if key == "use_instead" and example is not None:
            out += [f"*Example* (case `{example.name}`):", "", "```", *describe_case(example), "```", ""]
        text = getattr(spec, key)
        if text:
            out += [f"*{heading}.* {text}", ""]
    if spec.params:
        out += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
        out += [f"| `{p.name}` | {p.type} | `{_plain(p.default)}` | {p.description.replace('|', '/')} |"
                for p in spec.params]
        out.append("")
    out += [f"References: {spec.references}", ""]
    return "\n".join(out)


def reference(cat: Catalog | None = None) -> str:
    """queries/REFERENCE.md: an index of every rule, then one page per rule, by area."""
    cat = cat or load_catalog()
    out = ["# Rule reference", "",
           "Generated from the rules' headers and test files by `kineto-sql lint --update-lock`; do not edit.",
           "`kineto-sql show ID` prints one page.", ""]
    for area, heading in AREAS:
        specs = [s for s in cat.specs if s.area == area]
        if not specs:
            continue
        out += [f"## {heading}", "", "| id | version | status | title |", "|---|---|---|---|"]
        out += [f"| [`{s.id}`](#{s.id.replace('.', '')}) | {s.version} | {s.status} | {s.title.replace('|', '/')} |"
                for s in specs]
        out.append("")
        for spec in specs:
            out.append(render_markdown(spec))
    return "\n".join(out).rstrip("\n") + "\n"


def reference_path() -> Path:
    return queries_root() / REFERENCE_NAME


def write_reference() -> Path:
    path = reference_path()
    path.write_text(reference())
    return path
