"""Your own rules without a fork: directories of `<area>/<name>.sql` + `<name>.test.toml`, used like the built-in ones.

A rule directory mirrors `queries/kineto/`: `DIR/catalog/my_rule.sql` is the rule `catalog.my_rule`, it may
`INCLUDE PERFETTO MODULE kineto.lib.*`, and it is read, linted, locked and run exactly as a built-in rule.
Its lock lives in `DIR/LOCK.toml` (written by `kineto-sql lint --update-lock`).

Where they come from: `--rules DIR` (repeatable) on the command line, else `rules = ["DIR", ...]` under
`[tool.kineto-sql]` in the pyproject.toml of the working directory (paths relative to it). A pyproject entry,
not an environment variable: the rules a project relies on are then versioned with the project, and every
person and CI job that runs kineto-sql there gets the same ones (as ruff and pytest read their settings).

How: the installed queries/ and the rule directories are combined into one tree of symlinks in a temporary
directory, and $KINETO_SQL_QUERIES (kineto_sql.sql.package) points at it: the catalog, the SQL package
the engine registers, lint, the lock, and the worker processes of a rank directory all read that one tree.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import tomllib
from pathlib import Path

import tomli_w

from kineto_sql.errors import QueryError
from kineto_sql.sql.package import PACKAGE, QUERIES_ENV, queries_root

CONFIG = "pyproject.toml"
LOCK_NAME = "LOCK.toml"
_active: dict[str, object] = {}


def configured_dirs(cwd: Path | None = None) -> list[Path]:
    """`[tool.kineto-sql] rules` of ./pyproject.toml, resolved against its folder; [] when absent."""
    path = (cwd or Path.cwd()) / CONFIG
    if not path.is_file():
        return []
    try:
        table = tomllib.loads(path.read_text()).get("tool", {}).get("kineto-sql", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise QueryError(f"{path} is not valid TOML ({exc}); fix it or pass --rules DIR")
    rules = table.get("rules", [])
    if isinstance(rules, str) or not all(isinstance(r, str) for r in rules):
        raise QueryError(f"{path}: [tool.kineto-sql] rules must be a list of directories, e.g. rules = [\"rules\"]")
    return [path.parent / r for r in rules]


def rule_files(directory: Path) -> list[Path]:
    """The .sql and .test.toml files of a rule directory, as paths relative to it."""
    return sorted(p.relative_to(directory) for p in directory.rglob("*")
                  if p.is_file() and (p.suffix == ".sql" or p.name.endswith(".test.toml")))


def activate(dirs: list[Path]) -> Path | None:
    """Makes every later catalog read, SQL package and lint see the rules in `dirs` (and this process's
    children, through the environment). Returns the combined queries/ root, None when `dirs` is empty."""
    dirs = [Path(d).resolve() for d in dirs]
    if not dirs:
        return None
    for d in dirs:
        if not d.is_dir():
            raise QueryError(f"rule directory {d} does not exist; --rules takes a folder of <area>/<name>.sql files")
    key = tuple(map(str, dirs))
    if _active.get("key") == key:
        return Path(os.environ[QUERIES_ENV])
    builtin = Path(_active.get("builtin") or queries_root())
    merged = Path(tempfile.mkdtemp(prefix="kineto-sql-rules-"))
    atexit.register(shutil.rmtree, merged, True)
    _link_tree(builtin, merged)
    owners: dict[str, Path] = {}
    for d in dirs:
        for rel in rule_files(d):
            target = merged / PACKAGE / rel
            if target.exists() or target.is_symlink():
                where = owners.get(str(rel), builtin / PACKAGE / rel)
                raise QueryError(f"{d / rel} has the same name as {where}; rename the rule (a rule id is its "
                                 "<area>.<name>)")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(d / rel)
            owners[str(rel)] = d / rel
    lock = tomllib.loads((builtin / LOCK_NAME).read_text()) if (builtin / LOCK_NAME).exists() else {}
    for d in dirs:
        if (d / LOCK_NAME).exists():
            lock.update(tomllib.loads((d / LOCK_NAME).read_text()))
    (merged / LOCK_NAME).unlink(missing_ok=True)
    (merged / LOCK_NAME).write_text(tomli_w.dumps(lock))
    _active.setdefault("previous", os.environ.get(QUERIES_ENV))
    _active.update(key=key, builtin=str(builtin), merged=merged, owners=owners)
    os.environ[QUERIES_ENV] = str(merged)
    _forget_cached_catalog()
    return merged


def deactivate() -> None:
    """Back to the built-in rules only (a long-lived process, a test)."""
    if "merged" not in _active:
        return
    previous = _active.get("previous")
    if previous is None:
        os.environ.pop(QUERIES_ENV, None)
    else:
        os.environ[QUERIES_ENV] = previous
    _active.clear()
    _forget_cached_catalog()


def _link_tree(source: Path, dest: Path) -> None:
    for path in source.rglob("*"):
        if "__pycache__" in path.parts or path.is_dir():
            continue
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".sql":
            target.symlink_to(path)
        else:  # copied: lint --update-lock rewrites LOCK.toml and REFERENCE.md here, never the installed ones
            shutil.copyfile(path, target)


def _forget_cached_catalog() -> None:
    """The catalog, and what diagnose plans from it, are read once per process: read them again."""
    import sys

    from kineto_sql.catalog import spec

    spec._load_default.cache_clear()
    diagnose_run = sys.modules.get("kineto_sql.diagnose.run")  # imported only by a process that diagnoses
    if diagnose_run is not None:
        diagnose_run.query_plan.cache_clear()


def builtin_root() -> Path:
    """The queries/ directory the built-in rules come from, whether or not rule directories are combined
    with it (queries_root() is then the combined, temporary tree)."""
    return Path(_active.get("builtin") or queries_root())


def user_rule_ids() -> dict[str, Path]:
    """The active user rules' ids (and lib modules') -> their real file."""
    owners = _active.get("owners") or {}
    return {".".join(Path(rel).with_suffix("").parts): path for rel, path in owners.items()
            if str(rel).endswith(".sql")}


def save_lock() -> list[Path]:
    """After `lint --update-lock`: each user rule's lock entry goes to its own directory's LOCK.toml (the
    combined tree is temporary). Returns the files written."""
    merged = _active.get("merged")
    if merged is None:
        return []
    lock = tomllib.loads((Path(merged) / LOCK_NAME).read_text())
    by_dir: dict[Path, dict] = {}
    for rule_id, path in user_rule_ids().items():
        if rule_id in lock:
            root = next(Path(d) for d in _active["key"] if Path(path).is_relative_to(d))
            by_dir.setdefault(root, {})[rule_id] = lock[rule_id]
    written = []
    for root, entries in by_dir.items():
        (root / LOCK_NAME).write_text("# Generated by `kineto-sql lint --update-lock --rules DIR`; do not edit.\n"
                                      + tomli_w.dumps({k: entries[k] for k in sorted(entries)}))
        written.append(root / LOCK_NAME)
    return written


def shown(text: str) -> str:
    """A path (or a sentence naming one) in the combined tree, as the user's own file."""
    merged = _active.get("merged")
    if merged is None:
        return text
    for rel, path in (_active.get("owners") or {}).items():
        text = text.replace(str(Path(merged) / PACKAGE / rel), str(path))
    return text
