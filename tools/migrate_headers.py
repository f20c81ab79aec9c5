"""Rerunnable migration (issue 14) of query headers to the doc-page layout.

- `-- param NAME TYPE DEFAULT: description` lines become `-- default NAME: DEFAULT`; the description
  becomes the `--` comment above that argument of the entrypoint (declared once, in the signature).
- `-- status: stable` is added where missing (every query that exists today is released).
- `-- catalog_row:` is written from the fault-catalog mapping tests/test_diagnose.py used to hold.
- A lib module gets a header (`-- version: 1`) where it has none.

Then run `kineto-sql lint --update-lock --force` once to write the `locked` / `lib` / `cases` lines.
Usage: python tools/migrate_headers.py [FILE...]   (default: every file under queries/kineto)
"""
from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KINETO = REPO / "queries" / "kineto"

# The former FAULT_TO_DETECTOR / MINOR_TO_DETECTOR of tests/test_diagnose.py.
CATALOG_ROWS = {
    "catalog.sync_forcing_op": ["major.sync_forcing_op"],
    "catalog.input_bound": ["major.input_bound_step"],
    "catalog.small_op_storm": ["major.eager_small_op_storm"],
    "catalog.unoverlapped_allreduce": ["major.unoverlapped_allreduce"],
    "catalog.straggler_rank": ["major.straggler_rank"],
    "catalog.implicit_dtype_casts": ["major.implicit_dtype_casts"],
    "catalog.optimizer_step_dominance": ["major.optimizer_step_dominance"],
    "catalog.activation_checkpoint_surprise": ["major.activation_checkpointing_surprise"],
    "catalog.memory_churn": ["major.memory_churn"],
    "catalog.gc_gil_stall": ["major.gc_gil_stall", "major.gc_stall"],
    "catalog.record_function_absence": ["minor.record_function_absence"],
    "catalog.schedule_distortion": ["minor.profiler_schedule_distortion"],
    "catalog.with_stack_overhead": ["minor.with_stack_overhead"],
    "catalog.compile_graph_breaks": ["minor.torch_compile_graph_break"],
}

_PARAM = re.compile(r"^--\s?param\s+(?P<name>[a-z_][a-z0-9_]*)\s+(?P<type>[A-Z]+)\s+"
                    r"(?P<default>\"[^\"]*\"|'[^']*'|\S+?):(?:\s+(?P<description>.*?))?\s*$")
_CONT = re.compile(r"^--\s{2,}(?P<text>\S.*?)\s*$")


def _header_end(lines: list[str]) -> int:
    k = 0
    while k < len(lines) and lines[k].startswith("--"):
        k += 1
    return k


def migrate_query(path: Path) -> bool:
    text = path.read_text()
    lines = text.splitlines()
    end = _header_end(lines)
    header, body = lines[:end], lines[end:]
    params: list[dict] = []
    out: list[str] = []
    in_param = False
    for line in header:
        match = _PARAM.match(line)
        if match:
            params.append(dict(match.groupdict()))
            params[-1]["description"] = params[-1]["description"] or ""
            out.append(f"-- default {match['name']}: {match['default']}")
            in_param = True
            continue
        cont = _CONT.match(line)
        if cont and in_param:
            params[-1]["description"] += " " + cont["text"]
            continue
        in_param = False
        out.append(line)
    keys = {m.group(1) for m in (re.match(r"^--\s?([a-z_]+):", ln) for ln in out) if m}
    rule_id = next(ln.split(":", 1)[1].strip() for ln in out if ln.startswith("-- id:"))
    insert_at = next((i + 1 for i, ln in enumerate(out) if ln.startswith("-- needs:")), len(out))
    while insert_at < len(out) and _CONT.match(out[insert_at]):
        insert_at += 1
    extra = []
    if "status" not in keys:
        extra.append("-- status: stable")
    if "catalog_row" not in keys and rule_id in CATALOG_ROWS:
        extra.append("-- catalog_row: " + ", ".join(CATALOG_ROWS[rule_id]))
    out[insert_at:insert_at] = extra
    body_text = "\n".join(body)
    for p in params:
        body_text = _document_argument(body_text, p["name"], p["description"].strip())
    new = "\n".join(out + [body_text]) + ("\n" if text.endswith("\n") else "")
    if new != text:
        path.write_text(new)
        return True
    return False


def _document_argument(body: str, name: str, description: str) -> str:
    """Replaces the comment above argument `name` of the entrypoint with `description` (wrapped)."""
    if not description:
        return body
    entry = re.search(r"CREATE\s+OR\s+REPLACE\s+PERFETTO\s+FUNCTION\s+kineto_[a-z0-9_]+\(", body)
    if not entry:
        return body
    close = body.find("\nRETURNS", entry.end())
    args = body[entry.end():close]
    match = re.search(rf"(?P<doc>(?:[ \t]*--[^\n]*\n)*)(?P<indent>[ \t]*){re.escape(name)}\s+[A-Z]", args)
    if not match:
        return body
    sentence = description[0].upper() + description[1:]
    if not sentence.endswith((".", ")")):
        sentence += "."
    indent = match["indent"]
    doc = "".join(f"{indent}-- {line}\n" for line in textwrap.wrap(sentence, 110 - len(indent) - 3, break_on_hyphens=False))
    args = args[:match.start("doc")] + doc + args[match.start("indent"):]
    return body[:entry.end()] + args + body[close:]


def migrate_lib(path: Path) -> bool:
    text = path.read_text()
    if re.match(r"^--\s?version:", text):
        return False
    path.write_text("-- version: 1\n\n" + text)
    return True


def main(argv: list[str]) -> None:
    files = [Path(a).resolve() for a in argv] or sorted(KINETO.rglob("*.sql"))
    changed = 0
    for path in files:
        is_lib = path.relative_to(KINETO).parts[0] == "lib"
        changed += (migrate_lib if is_lib else migrate_query)(path)
    print(f"{changed} of {len(files)} files changed")


if __name__ == "__main__":
    main(sys.argv[1:])
