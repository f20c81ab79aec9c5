"""Versions live in each file's header; a forgotten version bump fails lint and the tests.

A query's header carries, at its end, three lines that `kineto-sql lint --update-lock`
writes (never by hand):

    -- locked: 3 9f1c2d3e4b5a6978        the version the hash was taken at, and sha256[:16] of the
                                          normalised SQL (comments and layout ignored) plus the defaults
    -- lib: lib.cpu_ops@1 lib.steps@2     the versions of the kineto modules it includes (transitively)
    -- cases: at_threshold=1a2b3c4d ...   one digest per exact-row case of its test file

A lib module carries `-- version:`, `-- locked:` and `-- lib:` the same way. So a lib change bumps only the
lib module (the including queries' `lib:` lines are rewritten, no bump), and a query whose results change
through it bumps because its cases change: a changed case (expected rows or inputs) at the same version is
refused like changed SQL. New cases, and removed ones, need no bump.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.catalog import Problem, parse_header
from kineto_sql.errors import QueryError
from kineto_sql.includes import kineto_dependencies, module_path
from kineto_sql.rule_tests import load_rule_tests
from kineto_sql.sql_package import PACKAGE, package_dir
from kineto_sql.sql_text import normalize

LIB_KEYS = ("version", "locked", "lib")
WIDTH = 110


def normalize_sql(sql: str) -> str:
    """SQL without comments, whitespace runs collapsed to one space (string literals kept verbatim)."""
    return normalize(sql)


@dataclass(frozen=True)
class Locked:
    """What a file's header says now (`recorded`) or should say (`current`)."""

    version: int | None
    sha: str | None
    lib: str
    cases: dict[str, str]


@dataclass(frozen=True)
class Item:
    """One versioned file: a query (id `area.name`) or a lib module (id `lib.name`)."""

    id: str
    path: Path
    version_line: int
    recorded: Locked
    current: Locked


@dataclass(frozen=True)
class LockIssue:
    id: str
    path: Path
    line: int
    message: str
    needs_bump: bool

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.id}: {self.message}"


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def case_digest(table: dict) -> str:
    """sha256[:8] of one exact-row case, its name and comments left out."""
    body = {k: v for k, v in table.items() if k not in ("name", "note")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _sql_hash(text: str, defaults: dict[str, str]) -> str:
    digest = hashlib.sha256(normalize(text).encode())
    for name in sorted(defaults):
        digest.update(f"\ndefault {name}={defaults[name]}".encode())
    return digest.hexdigest()[:16]


def _version_of(path: Path) -> int | None:
    fields, _, _ = parse_header(path, path.read_text(), LIB_KEYS + _query_keys())
    try:
        return int(fields["version"][1])
    except (KeyError, ValueError):
        return None


def _query_keys() -> tuple[str, ...]:
    from kineto_sql.catalog import KNOWN_KEYS

    return KNOWN_KEYS


def _item(path: Path, root: Path) -> Item | None:
    text = path.read_text()
    rel = path.relative_to(root).with_suffix("")
    is_lib = rel.parts[0] == "lib"
    fields, defaults, _ = parse_header(path, text, LIB_KEYS if is_lib else _query_keys())
    if "version" not in fields:
        return None
    try:
        version = int(fields["version"][1])
    except ValueError:
        return None
    locked = fields.get("locked", (0, ""))[1].split()
    recorded_version = int(locked[0]) if len(locked) == 2 and locked[0].isdigit() else None
    recorded_cases = dict(pair.split("=", 1) for pair in fields.get("cases", (0, ""))[1].split() if "=" in pair)
    recorded = Locked(recorded_version, locked[1] if len(locked) == 2 else None, fields.get("lib", (0, ""))[1],
                      recorded_cases)
    try:
        deps = kineto_dependencies(text, root)
    except QueryError:
        return None
    lib = " ".join(f"{_short(m)}@{_version_of(module_path(m, root))}" for m in sorted(deps))
    item_id = ".".join(rel.parts)
    cases: dict[str, str] = {}
    if not is_lib:
        tests = load_rule_tests(item_id, path)
        for case in tests.raw_cases:
            if case.get("name"):
                cases[case["name"]] = case_digest(case)
    current = Locked(version, _sql_hash(text, {k: v for k, (_, v) in defaults.items()}), lib, cases)
    return Item(item_id, path, fields["version"][0], recorded, current)


def items(root: Path | None = None) -> list[Item]:
    base = Path(root) if root else package_dir()
    out = [_item(p, base) for p in sorted(base.rglob("*.sql"))]
    return [i for i in out if i is not None]


def issues_of(item: Item) -> list[LockIssue]:
    rec, cur = item.recorded, item.current

    def issue(message: str, bump: bool = False) -> LockIssue:
        return LockIssue(item.id, item.path, item.version_line, message, bump)

    run = f"run `kineto-sql lint --update-lock {item.id}`"
    if rec.sha is None:
        return [issue(f"not locked yet; {run}")]
    found = []
    if rec.sha != cur.sha:
        if rec.version == cur.version:
            found.append(issue(f"SQL or a default changed but version is still {cur.version}; bump `-- version:` to "
                               f"{cur.version + 1}, then {run}", True))
        else:
            found.append(issue(f"version {rec.version} -> {cur.version} not locked; {run}"))
    elif rec.version != cur.version:
        found.append(issue(f"version {rec.version} -> {cur.version} not locked; {run}"))
    changed = sorted(n for n in cur.cases if n in rec.cases and rec.cases[n] != cur.cases[n])
    if changed and rec.version == cur.version:
        found.append(issue(f"case(s) {', '.join(changed)} changed (expected rows or inputs) at version {cur.version}: "
                           f"its results changed, so bump `-- version:` to {cur.version + 1}, then {run}", True))
    elif changed or set(cur.cases) != set(rec.cases):
        found.append(issue(f"cases changed; {run}"))
    if rec.lib != cur.lib:
        found.append(issue(f"included module versions changed ({rec.lib or 'none'} -> {cur.lib or 'none'}); {run} "
                           "(no bump needed)"))
    return found


def lock_issues(root: Path | None = None, ids: list[str] | None = None) -> list[LockIssue]:
    """What is stale in the headers: not locked, changed without (or with an unlocked) version bump."""
    return [i for item in items(root) if not ids or item.id in ids for i in issues_of(item)]


def update_lock(root: Path | None = None, ids: list[str] | None = None, force: bool = False) -> list[LockIssue]:
    """Writes the lock lines of the files (all, or `ids`). Refuses (returns the issues, writes nothing)
    where SQL or a case changed without a version bump, unless `force` (a query never released)."""
    chosen = [item for item in items(root) if not ids or item.id in ids]
    unknown = sorted(set(ids or ()) - {item.id for item in chosen})
    if unknown:
        raise QueryError(f"no query or lib module {', '.join(unknown)}; ids look like catalog.sync_forcing_op or lib.steps")
    refused = [i for item in chosen for i in issues_of(item) if i.needs_bump]
    if refused and not force:
        return refused
    for item in chosen:
        if issues_of(item):
            write_lock_lines(item.path, item.current)
    return []


def write_lock_lines(path: Path, locked: Locked) -> None:
    """Replaces the header's `locked` / `lib` / `cases` lines (the last lines of the header)."""
    lines = path.read_text().split("\n")
    header_end = 0
    while header_end < len(lines) and lines[header_end].startswith("--"):
        header_end += 1
    header, rest = lines[:header_end], lines[header_end:]
    kept, skipping = [], False
    for line in header:
        if re.match(r"^--\s?(locked|lib|cases):", line):
            skipping = True
            continue
        if skipping and re.match(r"^--\s{2,}\S", line):
            continue
        skipping = False
        kept.append(line)
    at = len(kept)
    new = [f"-- locked: {locked.version} {locked.sha}"]
    if locked.lib:
        new += _wrapped("lib", locked.lib.split())
    if locked.cases:
        new += _wrapped("cases", [f"{n}={d}" for n, d in locked.cases.items()])
    path.write_text("\n".join(kept[:at] + new + kept[at:] + rest))


def _wrapped(key: str, words: list[str]) -> list[str]:
    lines, current = [], f"-- {key}:"
    for word in words:
        if len(current) + 1 + len(word) > WIDTH and current.strip() not in (f"-- {key}:", "--"):
            lines.append(current)
            current = "--  "
        current += " " + word
    lines.append(current)
    return lines


def lock_problems(root: Path | None = None) -> list[Problem]:
    return [Problem(i.path, i.line, f"{i.id}: {i.message}") for i in lock_issues(root)]
