"""The catalog of queries: every `queries/kineto/<area>/<name>.sql` outside `lib/`, parsed from its header.

A query file starts with a block of `-- key: value` lines (see queries/README.md). This module turns that
block into frozen dataclasses; it never runs SQL. Problems are collected as `Problem(path, line, message)`
so `kineto-sql lint` can print them all; a file with a broken header is left out of the catalog (and
`get()` of its id says why) rather than breaking every other query.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from kineto_sql.errors import QueryError
from kineto_sql.sql_package import PACKAGE, package_dir

KINDS = ("reading", "guide", "detector", "hta")
# The kind a query in each area must have.
AREA_KINDS = {"reading": "reading", "guide": "guide", "catalog": "detector", "hta": "hta"}
PARAM_TYPES = ("LONG", "DOUBLE", "STRING", "BOOL")
CAPABILITIES = ("steps", "cpu_ops", "gpu", "stacks", "memory", "flows", "distributed", "compile")
REQUIRED_KEYS = ("id", "version", "kind", "title", "source", "needs")
DETECTOR_KEYS = ("signature", "confirming", "fix")
OPTIONAL_KEYS = ("signature", "confirming", "fix")
KNOWN_KEYS = REQUIRED_KEYS + OPTIONAL_KEYS

_HEADER_LINE = re.compile(r"^--\s?(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$")
_CONTINUATION = re.compile(r"^--\s{2,}(?P<text>\S.*?)\s*$")
_PARAM_LINE = re.compile(
    r"^--\s?param\s+(?P<name>[a-z_][a-z0-9_]*)\s+(?P<type>[A-Z]+)\s+"
    # The default ends at the first colon followed by a space, so `aten::mm: ...` keeps `aten::mm`.
    r"(?P<default>\"[^\"]*\"|'[^']*'|\S+?):(?:\s+(?P<description>.*?))?\s*$")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a query file, and where: printed as `path:line: message`."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Param:
    """A declared parameter: `-- param NAME TYPE DEFAULT: description`."""

    name: str
    type: str
    default: object
    description: str

    def coerce(self, value: object) -> object:
        """The value as this parameter's type; a string (from the CLI) is parsed. Raises QueryError."""
        return coerce_value(self.type, value, self.name)


@dataclass(frozen=True)
class QuerySpec:
    """Everything the header and path say about one query; `sql` is the file's text."""

    id: str
    version: int
    kind: str
    title: str
    source: str
    needs: tuple[str, ...]
    params: tuple[Param, ...]
    signature: str | None
    confirming: str | None
    fix: str | None
    path: Path
    sql: str
    entrypoint: str
    module: str

    @property
    def id_version(self) -> str:
        return f"{self.id}@{self.version}"

    @property
    def area(self) -> str:
        return self.id.split(".")[0]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise QueryError(f"{self.id} has no parameter {name!r} (its parameters: {known})")

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.params}


@dataclass(frozen=True)
class Catalog:
    """All queries found, by id, plus the problems of files that could not be read."""

    specs: tuple[QuerySpec, ...]
    problems: tuple[Problem, ...] = field(default=())

    def get(self, query_id: str) -> QuerySpec:
        for spec in self.specs:
            if spec.id == query_id:
                return spec
        broken = [p for p in self.problems if _id_from_path(p.path) == query_id]
        if broken:
            raise QueryError(f"query {query_id} cannot be used: {broken[0]}")
        raise QueryError(f"no query {query_id!r}; `kineto-sql list` shows the ids")

    def ids(self) -> list[str]:
        return [s.id for s in self.specs]

    def by_kind(self, kind: str) -> tuple[QuerySpec, ...]:
        return tuple(s for s in self.specs if s.kind == kind)


def coerce_value(sql_type: str, value: object, name: str = "value") -> object:
    """Converts a Python or command-line value to the Python type behind a declared SQL type."""
    try:
        if value is None:
            return None
        if sql_type == "LONG":
            if isinstance(value, bool):
                return int(value)
            if isinstance(value, int):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, str):
                return int(value.strip().replace("_", ""))
        elif sql_type == "DOUBLE":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                number = float(value)
            elif isinstance(value, str):
                number = float(value.strip())
            else:
                raise ValueError
            if not math.isfinite(number):
                raise ValueError
            return number
        elif sql_type == "BOOL":
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
                return value.strip().lower() in _TRUE
        elif sql_type == "STRING":
            if isinstance(value, str):
                return value
        else:
            raise QueryError(f"parameter {name} has unknown type {sql_type}; use one of {', '.join(PARAM_TYPES)}")
    except (ValueError, OverflowError):
        pass
    raise QueryError(f"parameter {name} wants a {sql_type} value, got {value!r}")


def _id_from_path(path: Path) -> str:
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[-2:])


def query_files(root: Path | None = None) -> list[Path]:
    """Every query file under the package (lib modules excluded), sorted."""
    base = Path(root) if root else package_dir()
    return sorted(p for p in base.rglob("*.sql") if p.relative_to(base).parts[0] != "lib")


def parse_header(path: Path, text: str) -> tuple[dict[str, tuple[int, str]], list[tuple[int, str]], list[Problem]]:
    """The header block: {key: (line, value)}, the raw param lines, and problems found."""
    fields: dict[str, tuple[int, str]] = {}
    params: list[tuple[int, str]] = []
    problems: list[Problem] = []
    last_key = None
    last_was_param = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("--"):
            break
        if re.match(r"^--\s?param\s", line):
            params.append((number, line))
            last_key, last_was_param = None, True
            continue
        cont = _CONTINUATION.match(line)
        if cont and last_was_param:
            params[-1] = (params[-1][0], f"{params[-1][1]} {cont['text']}")
            continue
        last_was_param = False
        match = _HEADER_LINE.match(line)
        if match:
            key = match["key"]
            if key in fields:
                problems.append(Problem(path, number, f"header key {key!r} appears twice; keep one"))
            elif key not in KNOWN_KEYS:
                problems.append(Problem(path, number, f"unknown header key {key!r}; known keys: {', '.join(KNOWN_KEYS)}, param"))
            fields[key] = (number, match["value"])
            last_key = key
            continue
        if cont and last_key:
            ln, value = fields[last_key]
            fields[last_key] = (ln, f"{value} {cont['text']}".strip())
            continue
        if line.strip() in ("--", ""):
            last_key = None
            continue
        problems.append(Problem(path, number, "header line is not `-- key: value` or `-- param NAME TYPE DEFAULT: text`; "
                                              "end the header with a blank line before other comments"))
    return fields, params, problems


def parse_param(path: Path, number: int, line: str) -> tuple[Param | None, list[Problem]]:
    match = _PARAM_LINE.match(line)
    if not match:
        return None, [Problem(path, number, "param line must read `-- param NAME TYPE DEFAULT: description` "
                                            "(NAME lower_snake, TYPE one of LONG DOUBLE STRING BOOL)")]
    sql_type = match["type"]
    if sql_type not in PARAM_TYPES:
        return None, [Problem(path, number, f"param {match['name']}: type {sql_type} is not one of {', '.join(PARAM_TYPES)}")]
    raw = match["default"]
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw_value: object = raw[1:-1]
    else:
        raw_value = raw
    if isinstance(raw_value, str) and raw_value.upper() == "NULL" and raw == raw_value:
        default = None
    else:
        try:
            default = coerce_value(sql_type, raw_value, match["name"])
        except QueryError as exc:
            return None, [Problem(path, number, f"default of param {match['name']}: {exc}")]
    description = match["description"] or ""
    problems = [] if description else [Problem(path, number, f"param {match['name']} needs a description after the colon")]
    return Param(match["name"], sql_type, default, description), problems


def parse_query_file(path: Path, root: Path | None = None) -> tuple[QuerySpec | None, list[Problem]]:
    """Reads one query file. Returns the spec (None when the header is unusable) and every problem found."""
    base = Path(root) if root else package_dir()
    text = path.read_text()
    rel = path.relative_to(base).with_suffix("")
    fields, param_lines, problems = parse_header(path, text)
    for key in REQUIRED_KEYS:
        if key not in fields:
            problems.append(Problem(path, 1, f"header lacks `-- {key}: ...`; required keys: {', '.join(REQUIRED_KEYS)}"))
    params = []
    for number, line in param_lines:
        param, more = parse_param(path, number, line)
        problems += more
        if param:
            if any(p.name == param.name for p in params):
                problems.append(Problem(path, number, f"param {param.name} declared twice"))
            params.append(param)
    if any(k not in fields for k in REQUIRED_KEYS):
        return None, problems

    def value(key):
        return fields[key][1] if key in fields else None

    expected_id = ".".join(rel.parts)
    query_id = value("id")
    if query_id != expected_id:
        problems.append(Problem(path, fields["id"][0], f"id {query_id!r} does not match the path; it must be {expected_id!r}"))
    try:
        version = int(value("version"))
        if version < 1:
            raise ValueError
    except ValueError:
        problems.append(Problem(path, fields["version"][0], f"version must be an integer >= 1, got {value('version')!r}"))
        return None, problems
    kind = value("kind")
    if kind not in KINDS:
        problems.append(Problem(path, fields["kind"][0], f"kind {kind!r} is not one of {', '.join(KINDS)}"))
    needs_text = value("needs").strip()
    needs = () if needs_text in ("", "none") else tuple(n.strip() for n in needs_text.split(","))
    for need in needs:
        if need not in CAPABILITIES:
            problems.append(Problem(path, fields["needs"][0],
                                    f"needs {need!r} is not a capability; use a comma list of {', '.join(CAPABILITIES)} or none"))
    spec = QuerySpec(
        id=expected_id, version=version, kind=kind, title=value("title"), source=value("source"), needs=needs,
        params=tuple(params), signature=value("signature"), confirming=value("confirming"), fix=value("fix"),
        path=path, sql=text, entrypoint=f"{PACKAGE}_" + "_".join(rel.parts), module=".".join((PACKAGE,) + rel.parts))
    return spec, problems


def load_catalog(root: Path | None = None) -> Catalog:
    """Every query under `root` (default: the installed package). Broken files go to `problems`."""
    if root is None:
        return _load_default()
    return _load(Path(root))


def _load(root: Path) -> Catalog:
    specs, problems = [], []
    for path in query_files(root):
        spec, found = parse_query_file(path, root)
        problems += found
        if spec is not None:
            specs.append(spec)
    return Catalog(tuple(sorted(specs, key=lambda s: s.id)), tuple(problems))


@functools.lru_cache(maxsize=1)
def _load_default() -> Catalog:
    return _load(package_dir())


def get(query_id: str) -> QuerySpec:
    """The query with this id from the installed catalog. Raises QueryError with a hint when unknown."""
    return load_catalog().get(query_id)
