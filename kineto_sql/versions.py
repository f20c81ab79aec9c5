"""Query versions and `queries/versions.lock`: a forgotten version bump fails the tests.

A query's fingerprint is the sha256 of its normalized SQL (comments dropped, whitespace collapsed), the
normalized SQL of every kineto lib module it includes (transitively), and its parameter defaults. Editing
a comment changes nothing; editing SQL that can change a result changes the hash, and then the lock says
the version must move. The lock holds one line per query: `id version sha256`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.catalog import Catalog, QuerySpec, load_catalog
from kineto_sql.errors import QueryError
from kineto_sql.includes import kineto_dependencies, module_path
from kineto_sql.sql_package import queries_root
from kineto_sql.sql_text import normalize

LOCK_NAME = "versions.lock"
LOCK_HEADER = ("# kineto-sql query versions: id version sha256(normalized SQL + included lib modules + defaults).\n"
               "# Rewritten by `kineto-sql lint --update-lock` after a version bump; never edit by hand.\n")


def lock_path() -> Path:
    return queries_root() / LOCK_NAME


def normalize_sql(sql: str) -> str:
    """SQL without comments, whitespace runs collapsed to one space (string literals kept verbatim)."""
    return normalize(sql)


def fingerprint(spec: QuerySpec) -> str:
    digest = hashlib.sha256()
    for module in kineto_dependencies(spec.sql):
        digest.update(module.encode() + b"\n" + normalize_sql(module_path(module).read_text()).encode() + b"\n")
    digest.update(spec.module.encode() + b"\n" + normalize_sql(spec.sql).encode() + b"\n")
    for p in spec.params:
        digest.update(f"param {p.name} {p.type} {p.default!r}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class LockEntry:
    id: str
    version: int
    sha256: str


def read_lock(path: Path | None = None) -> dict[str, LockEntry]:
    path = path or lock_path()
    entries = {}
    if not path.exists():
        return entries
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        query_id, version, sha = line.split()
        entries[query_id] = LockEntry(query_id, int(version), sha)
    return entries


def current_entries(cat: Catalog | None = None) -> dict[str, LockEntry]:
    """Current (id, version, hash) per query; a query whose includes do not resolve is left out (lint says why)."""
    cat = cat or load_catalog()
    entries = {}
    for spec in cat.specs:
        try:
            entries[spec.id] = LockEntry(spec.id, spec.version, fingerprint(spec))
        except QueryError:
            continue
    return entries


def lock_text(entries: dict[str, LockEntry]) -> str:
    return LOCK_HEADER + "".join(f"{e.id} {e.version} {e.sha256}\n" for e in sorted(entries.values(), key=lambda e: e.id))


@dataclass(frozen=True)
class LockIssue:
    id: str
    message: str


def lock_issues(cat: Catalog | None = None, path: Path | None = None) -> list[LockIssue]:
    """What is stale in the lock: a query missing, gone, or changed without (or with a wrong) version bump."""
    locked = read_lock(path)
    issues = []
    current = current_entries(cat)
    for query_id, now in current.items():
        old = locked.get(query_id)
        if old is None:
            issues.append(LockIssue(query_id, "not in versions.lock; run `kineto-sql lint --update-lock`"))
        elif old.sha256 != now.sha256 and old.version == now.version:
            issues.append(LockIssue(query_id, f"SQL changed but version is still {now.version}; bump `-- version:` "
                                              f"to {now.version + 1}, then run `kineto-sql lint --update-lock`"))
        elif old.sha256 != now.sha256 or old.version != now.version:
            issues.append(LockIssue(query_id, f"version {old.version} -> {now.version} not recorded; run "
                                              "`kineto-sql lint --update-lock`"))
    for query_id in locked:
        if query_id not in current and query_id not in {s.id for s in (cat or load_catalog()).specs}:
            issues.append(LockIssue(query_id, "in versions.lock but no such query; run `kineto-sql lint --update-lock`"))
    return issues


def update_lock(cat: Catalog | None = None, path: Path | None = None, force: bool = False) -> list[LockIssue]:
    """Rewrites the lock. Refuses (returns the issues) where SQL changed without a version bump, unless
    `force` (for a query that was never released, whose version 1 is still being written)."""
    cat = cat or load_catalog()
    locked = read_lock(path)
    now = current_entries(cat)
    refused = [LockIssue(i, f"SQL changed but version is still {e.version}; bump `-- version:` first "
                            "(or --force for a query not released yet)")
               for i, e in now.items() if i in locked and locked[i].sha256 != e.sha256 and locked[i].version == e.version]
    if force:
        refused = []
    if refused:
        return refused
    (path or lock_path()).write_text(lock_text(now))
    return []
