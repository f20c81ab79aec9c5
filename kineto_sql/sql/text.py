"""The one SQL text scanner of kineto-sql: mask, split, normalise, and read object signatures.

PerfettoSQL files are scanned here and nowhere else (lint, versions, the catalog's parameter reading, the
UI's paste handling). Strings (quoted literals and identifiers) and comments are recognised once, by
`segments`; everything else is built on it. Nothing here runs SQL or composes it from values
(that is `sql_literals`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

_CREATE = re.compile(
    r"^CREATE\s+(?P<replace>OR\s+REPLACE\s+)?PERFETTO\s+(?P<kind>TABLE|VIEW|FUNCTION|MACRO|INDEX)\s+"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


# A quoted literal or identifier (a doubled quote inside it is part of it; unterminated: to the end), a
# -- comment (to the end of its line) or a /* */ comment (unterminated: to the end).
_SPECIAL = re.compile(r"""'[^']*(?:''[^']*)*(?:'|\Z)|"[^"]*(?:""[^"]*)*(?:"|\Z)|`[^`]*(?:``[^`]*)*(?:`|\Z)"""
                      r"""|--[^\n]*|/\*.*?(?:\*/|\Z)""", re.DOTALL)


def segments(sql: str) -> Iterator[tuple[str, str]]:
    """(kind, text) pieces of a SQL text: 'code', 'string' (quoted literal or identifier) or 'comment'."""
    code_start = 0
    for match in _SPECIAL.finditer(sql):
        start, end = match.span()
        if code_start < start:
            yield "code", sql[code_start:start]
        yield ("comment" if sql[start] in "-/" else "string"), match.group()
        code_start = end
    if code_start < len(sql):
        yield "code", sql[code_start:]


_NOT_NEWLINE = re.compile(r"[^\n]")


def mask(sql: str) -> str:
    """The text with comments and string contents blanked (same length, newlines kept), so offsets and
    line numbers still match; a string keeps its quotes."""
    return _SPECIAL.sub(_blank, sql)


def _blank(match: re.Match) -> str:
    text = match.group()
    if text[0] in "-/":
        return _spaces(text)
    if len(text) < 2:  # an unterminated quote at the very end
        return text
    return text[0] + _spaces(text[1:-1]) + text[-1]


def _spaces(text: str) -> str:
    return " " * len(text) if "\n" not in text else _NOT_NEWLINE.sub(" ", text)


def strip_comments(sql: str) -> str:
    """`sql` without its -- and /* */ comments (text inside strings is kept), blank lines dropped."""
    text = "".join(t for kind, t in segments(sql) if kind != "comment")
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def normalize(sql: str) -> str:
    """SQL without comments, whitespace runs collapsed to one space (strings kept verbatim): what a
    version hash covers, so editing a comment or the layout changes nothing."""
    out: list[str] = []
    pending_space = False
    for kind, text in segments(sql):
        if kind == "comment":
            pending_space = True
            continue
        if kind == "string":
            if pending_space and out:
                out.append(" ")
            pending_space = False
            out.append(text)
            continue
        for ch in text:
            if ch.isspace():
                pending_space = True
                continue
            if pending_space and out:
                out.append(" ")
            pending_space = False
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True)
class Statement:
    """One statement: its text (comments kept), the line it starts on, and the comment lines just above."""

    text: str
    line: int
    doc: str


@dataclass(frozen=True)
class Column:
    """A column or argument of a schema: name, type, and the `--` comment above it (its documentation)."""

    name: str
    type: str
    documented: bool
    doc: str = ""


def split_statements(sql: str) -> list[Statement]:
    masked = mask(sql)
    statements, start = [], 0
    for match in re.finditer(";", masked):
        chunk_masked = masked[start:match.start()]
        offset = len(chunk_masked) - len(chunk_masked.lstrip())
        if chunk_masked.strip():
            begin = start + offset
            line = sql.count("\n", 0, begin) + 1
            statements.append(Statement(sql[begin:match.start()], line, _doc_above(sql, line)))
        start = match.end()
    if masked[start:].strip():
        begin = start + len(masked[start:]) - len(masked[start:].lstrip())
        statements.append(Statement(sql[begin:], sql.count("\n", 0, begin) + 1, "<missing ;>"))
    return statements


def _doc_above(sql: str, line: int) -> str:
    lines = sql.splitlines()
    doc = []
    k = line - 2
    while k >= 0 and lines[k].startswith("--"):
        doc.insert(0, lines[k])
        k -= 1
    return "\n".join(doc)


def _paren_group(text: str, masked: str, open_at: int) -> tuple[str, int]:
    """The text inside the parentheses opening at `open_at`, and the index just after the closing one."""
    depth = 0
    for i in range(open_at, len(masked)):
        if masked[i] == "(":
            depth += 1
        elif masked[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i], i + 1
    raise ValueError("unbalanced parentheses")


def parse_columns(group: str) -> list[Column]:
    """`-- doc\\n name TYPE, ...` -> columns; a column is documented when a comment precedes it."""
    masked = mask(group)
    items, depth, start = [], 0, 0
    for i, ch in enumerate(masked):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append((group[start:i], masked[start:i]))
            start = i + 1
    items.append((group[start:], masked[start:]))
    columns = []
    for raw, raw_masked in items:
        words = raw_masked.split()
        if not words:
            continue
        doc_lines = []
        for line in raw.lstrip().splitlines():
            if not line.strip().startswith("--"):
                break
            doc_lines.append(line.strip()[2:].strip())
        columns.append(Column(words[0], " ".join(words[1:]).upper(), raw.lstrip().startswith("--"),
                              " ".join(doc_lines)))
    return columns


@dataclass(frozen=True)
class ObjectDef:
    kind: str
    name: str
    line: int
    documented: bool
    args: tuple[Column, ...]
    columns: tuple[Column, ...]
    returns_table: bool
    body: str | None
    body_line: int


def parse_object(st: Statement) -> ObjectDef | str:
    """A CREATE ... statement as an ObjectDef, or a problem message."""
    match = _CREATE.match(st.text)
    if not match:
        return "not a CREATE OR REPLACE PERFETTO {TABLE|VIEW|FUNCTION|MACRO|INDEX} statement"
    kind, name = match["kind"].upper(), match["name"]
    text, masked = st.text, mask(st.text)
    pos = match.end()
    args: list[Column] = []
    columns: list[Column] = []
    returns_table = False
    if kind == "INDEX":
        return ObjectDef(kind, name, st.line, bool(st.doc), (), (), False, None, st.line)
    rest = masked[pos:]
    stripped = rest.lstrip()
    has_group = stripped.startswith("(")
    if kind in ("TABLE", "VIEW"):
        if not has_group:
            return f"{kind.lower()} {name} has no typed schema: write `{name}(col TYPE, ...) AS`"
        group, after = _paren_group(text, masked, pos + len(rest) - len(stripped))
        columns = parse_columns(group)
    elif kind in ("FUNCTION", "MACRO"):
        if not has_group:
            return f"{kind.lower()} {name} needs an argument list"
        group, after = _paren_group(text, masked, pos + len(rest) - len(stripped))
        args = parse_columns(group)
        returns = re.match(r"\s*RETURNS\s+(TABLE\s*\()?", masked[after:], re.IGNORECASE)
        if not returns:
            return f"{kind.lower()} {name} needs RETURNS"
        if returns.group(1):
            returns_table = True
            open_at = after + returns.end() - 1
            group, after = _paren_group(text, masked, open_at)
            columns = parse_columns(group)
    as_match = re.compile(r"\s*(?:RETURNS\s+\w+(?:\([^)]*\))?\s*)?AS\b", re.IGNORECASE).match(masked, after)
    if not as_match:
        return f"{kind.lower()} {name}: expected AS after the schema"
    body = text[as_match.end():]
    body_line = st.line + text.count("\n", 0, as_match.end())
    return ObjectDef(kind, name, st.line, bool(st.doc), tuple(args), tuple(columns), returns_table, body, body_line)




def entrypoint_signature(sql: str, name: str) -> ObjectDef | None:
    """The CREATE ... FUNCTION `name` of a file, parsed (its arguments carry their comments), or None."""
    for st in split_statements(sql):
        parsed = parse_object(st)
        if isinstance(parsed, ObjectDef) and parsed.name == name:
            return parsed
    return None
