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
import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from kineto_sql.errors import QueryError
from kineto_sql.sql.package import PACKAGE, package_dir
from kineto_sql.sql.text import entrypoint_signature

KINDS = ("reading", "guide", "detector", "hta")
# The kind a query in each area must have.
AREA_KINDS = {"reading": "reading", "guide": "guide", "catalog": "detector", "hta": "hta"}
STATUSES = ("preview", "stable", "deprecated")
# Parameter types, and the signature types that declare them (DURATION: nanoseconds, like every ts/dur).
PARAM_TYPES = ("LONG", "DOUBLE", "STRING", "BOOL", "DURATION")
SIGNATURE_TYPES = {"LONG": "LONG", "INT": "LONG", "TIMESTAMP": "LONG", "DOUBLE": "DOUBLE", "STRING": "STRING",
                   "BOOL": "BOOL", "DURATION": "DURATION"}
CAPABILITIES = ("steps", "cpu_ops", "gpu", "stacks", "memory", "shapes", "flops", "flows", "distributed", "compile")
REQUIRED_KEYS = ("id", "version", "kind", "title", "references", "needs", "status")
# A detector's header is its doc page, in ruff's words: what it looks like, how to confirm it, why it costs
# time, its known problems (where it is wrong), the case that shows it (`example`, a case name of its test
# file) and what to use instead.
DETECTOR_KEYS = ("what", "confirming", "why", "known_problems", "example", "use_instead")
DOC_SECTIONS = {"what": "what it looks like in the trace", "confirming": "what a person checks to confirm",
                "why": "why it costs step time", "known_problems": "where it fires although nothing is wrong",
                "example": "the name of a case of its test file that fires", "use_instead": "what to change"}
# Keys of earlier headers, and what they became: lint names the new key.
RENAMED_KEYS = {"signature": "what", "cost": "why", "false_positives": "known_problems", "fix": "use_instead",
                "source": "references"}
# Lock data lives in queries/LOCK.toml (kineto_sql/catalog/lock.py), never in a header.
LOCK_KEYS = ("locked", "lib", "cases")
# claims: the step-ledger buckets (reading.step_ledger) a detector's impact is drawn from, e.g.
#   `idle.sync, host.sync_read`; `busy.*` names a whole kind; `cold` is the cold windows' time. A detector
#   that reads the ledger reads it through kineto_ledger_claim('<this line>') (lint checks they are equal).
OPTIONAL_KEYS = DETECTOR_KEYS + ("catalog_row", "claims")
KNOWN_KEYS = REQUIRED_KEYS + OPTIONAL_KEYS

_HEADER_LINE = re.compile(r"^--\s?(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$")
_CONTINUATION = re.compile(r"^--\s{2,}(?P<text>\S.*?)\s*$")
_DEFAULT_LINE = re.compile(r"^--\s?default\s+(?P<name>[a-z_][a-z0-9_]*):\s*(?P<value>.*?)\s*$")
_ID = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")
REDIRECTS_NAME = "redirects.toml"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_DURATION_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_DURATION_TEXT = re.compile(r"^\s*(?P<number>[0-9][0-9_]*(?:\.[0-9]+)?)\s*(?P<unit>ns|us|ms|s)?\s*$")


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
    """A parameter: an argument of the entrypoint (name, type, its comment as description) with the
    default from the header's `-- default NAME: VALUE` line."""

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
    references: str
    needs: tuple[str, ...]
    params: tuple[Param, ...]
    what: str | None
    confirming: str | None
    use_instead: str | None
    path: Path
    sql: str
    entrypoint: str
    module: str
    status: str = "preview"
    why: str | None = None
    known_problems: str | None = None
    example: str | None = None
    catalog_rows: tuple[str, ...] = ()
    header: dict = field(default_factory=dict, compare=False, repr=False)
    claims: tuple[str, ...] = ()

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
    """All queries found, by id, plus the problems of files that could not be read, and the redirects of
    ids that were renamed or removed (queries/redirects.toml)."""

    specs: tuple[QuerySpec, ...]
    problems: tuple[Problem, ...] = field(default=())
    redirects: tuple[tuple[str, str], ...] = field(default=())

    def get(self, query_id: str) -> QuerySpec:
        for spec in self.specs:
            if spec.id == query_id:
                return spec
        broken = [p for p in self.problems if _id_from_path(p.path) == query_id]
        if broken:
            raise QueryError(f"query {query_id} cannot be used: {broken[0]}")
        moved = dict(self.redirects).get(query_id)
        if moved is not None:
            if _ID.match(moved):
                raise QueryError(f"{query_id} was renamed to {moved}; use `kineto-sql show {moved}`")
            raise QueryError(f"{query_id} was removed: {moved}")
        raise QueryError(f"no query {query_id!r}{self._did_you_mean(query_id)}; `kineto-sql list` shows the ids")

    def _did_you_mean(self, query_id: str) -> str:
        """`sync_forcing_op` -> catalog.sync_forcing_op; `catalog.sync_forcng_op` -> the closest id."""
        ids = [s.id for s in self.specs]
        named = [i for i in ids if i.split(".", 1)[-1] == query_id]
        close = named or difflib.get_close_matches(query_id, ids, n=3, cutoff=0.75)
        return f" (did you mean {' or '.join(close)}?)" if close else ""

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
        elif sql_type == "DURATION":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, int):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, str):
                match = _DURATION_TEXT.match(value)
                if match:
                    ns = float(match["number"].replace("_", "")) * _DURATION_UNITS[match["unit"] or "ns"]
                    if ns.is_integer():
                        return int(ns)
        else:
            raise QueryError(f"parameter {name} has unknown type {sql_type}; use one of {', '.join(PARAM_TYPES)}")
    except (ValueError, OverflowError):
        pass
    hint = " (integer ns, or a number with ns / us / ms / s)" if sql_type == "DURATION" else ""
    raise QueryError(f"parameter {name} wants a {sql_type} value{hint}, got {value!r}")


def _id_from_path(path: Path) -> str:
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[-2:])


def query_files(root: Path | None = None) -> list[Path]:
    """Every query file under the package (lib modules excluded), sorted."""
    base = Path(root) if root else package_dir()
    return sorted(p for p in base.rglob("*.sql") if p.relative_to(base).parts[0] != "lib")


def parse_header(path: Path, text: str, known: tuple[str, ...] = KNOWN_KEYS
                 ) -> tuple[dict[str, tuple[int, str]], dict[str, tuple[int, str]], list[Problem]]:
    """The header block: {key: (line, value)}, {param: (line, default text)}, and problems found."""
    fields: dict[str, tuple[int, str]] = {}
    defaults: dict[str, tuple[int, str]] = {}
    problems: list[Problem] = []
    last_key = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("--"):
            break
        if re.match(r"^--\s?param\s", line):
            problems.append(Problem(path, number, "`-- param` lines are gone: declare the parameter once, as an "
                                                  "argument of the entrypoint with a `--` comment above it, and give "
                                                  "its default here as `-- default NAME: VALUE`"))
            last_key = None
            continue
        default = _DEFAULT_LINE.match(line)
        if default:
            if default["name"] in defaults:
                problems.append(Problem(path, number, f"default of {default['name']} given twice"))
            defaults[default["name"]] = (number, default["value"])
            last_key = None
            continue
        cont = _CONTINUATION.match(line)
        match = _HEADER_LINE.match(line)
        if match and not cont:
            key = match["key"]
            if key in fields:
                problems.append(Problem(path, number, f"header key {key!r} appears twice; keep one"))
            elif key in LOCK_KEYS and key not in known:
                problems.append(Problem(path, number, f"`-- {key}:` belongs in queries/LOCK.toml, not the header; "
                                                      "delete the line and run `kineto-sql lint --update-lock`"))
            elif key in RENAMED_KEYS and key not in known:
                problems.append(Problem(path, number, f"header key {key!r} is now {RENAMED_KEYS[key]!r}; rename it"))
            elif key not in known:
                problems.append(Problem(path, number, f"unknown header key {key!r}; known keys: {', '.join(known)}, "
                                                      "default"))
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
        problems.append(Problem(path, number, "header line is not `-- key: value` or `-- default NAME: VALUE`; "
                                              "end the header with a blank line before other comments"))
    return fields, defaults, problems


def parse_default(path: Path, line: int, name: str, sql_type: str, raw: str) -> tuple[object, list[Problem]]:
    """The typed default of a parameter from its header text (`NULL`, a quoted string, or a bare value)."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw_value: object = raw[1:-1]
    else:
        raw_value = raw
    if isinstance(raw_value, str) and raw_value.upper() == "NULL" and raw == raw_value:
        return None, []
    try:
        return coerce_value(sql_type, raw_value, name), []
    except QueryError as exc:
        return None, [Problem(path, line, f"default of {name}: {exc}")]


def signature_params(path: Path, text: str, entrypoint: str, defaults: dict[str, tuple[int, str]]
                     ) -> tuple[tuple[Param, ...], list[Problem]]:
    """The entrypoint's arguments as parameters, each with its header default."""
    signature = entrypoint_signature(text, entrypoint)
    problems: list[Problem] = []
    if signature is None:
        for name, (line, _) in defaults.items():
            problems.append(Problem(path, line, f"default of {name}, but there is no function {entrypoint}"))
        return (), problems
    params = []
    for arg in signature.args:
        sql_type = SIGNATURE_TYPES.get(arg.type)
        if sql_type is None:
            problems.append(Problem(path, signature.line, f"argument {arg.name} is {arg.type}; use one of "
                                                          f"{', '.join(SIGNATURE_TYPES)}"))
            continue
        if arg.name not in defaults:
            problems.append(Problem(path, signature.line, f"argument {arg.name} needs a default in the header: "
                                                          f"`-- default {arg.name}: VALUE`"))
            continue
        line, raw = defaults[arg.name]
        value, more = parse_default(path, line, arg.name, sql_type, raw)
        problems += more
        params.append(Param(arg.name, sql_type, value, arg.doc))
    names = {a.name for a in signature.args}
    for name, (line, _) in defaults.items():
        if name not in names:
            problems.append(Problem(path, line, f"default of {name}, which is not an argument of {entrypoint}"))
    return tuple(params), problems


def parse_query_file(path: Path, root: Path | None = None) -> tuple[QuerySpec | None, list[Problem]]:
    """Reads one query file. Returns the spec (None when the header is unusable) and every problem found."""
    base = Path(root) if root else package_dir()
    text = path.read_text()
    rel = path.relative_to(base).with_suffix("")
    fields, defaults, problems = parse_header(path, text)
    for key in REQUIRED_KEYS:
        if key not in fields:
            problems.append(Problem(path, 1, f"header lacks `-- {key}: ...`; required keys: {', '.join(REQUIRED_KEYS)}"))
    entrypoint = f"{PACKAGE}_" + "_".join(rel.parts)
    params, more = signature_params(path, text, entrypoint, defaults)
    problems += more
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
    status = value("status")
    if status not in STATUSES:
        problems.append(Problem(path, fields["status"][0], f"status {status!r} is not one of {', '.join(STATUSES)}"))
    needs_text = value("needs").strip()
    needs = () if needs_text in ("", "none") else tuple(n.strip() for n in needs_text.split(","))
    for need in needs:
        if need not in CAPABILITIES:
            problems.append(Problem(path, fields["needs"][0],
                                    f"needs {need!r} is not a capability; use a comma list of {', '.join(CAPABILITIES)} or none"))
    rows_text = (value("catalog_row") or "").strip()
    catalog_rows = tuple(r.strip() for r in rows_text.split(",") if r.strip())
    for row in catalog_rows:
        if not re.match(r"^(major|minor)\.[a-z_][a-z0-9_]*$", row):
            problems.append(Problem(path, fields["catalog_row"][0], f"catalog_row {row!r} must read major.<name> or "
                                                                    "minor.<name> (the fault catalog's row ids)"))
    spec = QuerySpec(
        id=expected_id, version=version, kind=kind, title=value("title"), references=value("references"), needs=needs,
        params=params, what=value("what"), confirming=value("confirming"), use_instead=value("use_instead"),
        path=path, sql=text, entrypoint=entrypoint, module=".".join((PACKAGE,) + rel.parts), status=status,
        why=value("why"), known_problems=value("known_problems"), example=value("example"),
        catalog_rows=catalog_rows, claims=_claims(value("claims")), header={k: v for k, (_, v) in fields.items()})
    return spec, problems


def _claims(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (text or "").split(",") if c.strip())


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
    redirects, more = read_redirects(root.parent / REDIRECTS_NAME)
    return Catalog(tuple(sorted(specs, key=lambda s: s.id)), tuple(problems + more), redirects)


def read_redirects(path: Path) -> tuple[tuple[tuple[str, str], ...], list[Problem]]:
    """(old id, new id or the reason it is gone) pairs of queries/redirects.toml."""
    if not path.exists():
        return (), []
    try:
        table = tomllib.loads(path.read_text()).get("redirects", {})
    except tomllib.TOMLDecodeError as exc:
        return (), [Problem(path, 1, f"not valid TOML: {exc}")]
    pairs = [(str(k), str(v)) for k, v in table.items()]
    return tuple(sorted(pairs)), [Problem(path, 1, f"redirect {k!r} is not a query id") for k, _ in pairs
                                  if not _ID.match(k)]


@functools.lru_cache(maxsize=1)
def _load_default() -> Catalog:
    return _load(package_dir())


def get(query_id: str) -> QuerySpec:
    """The query with this id from the installed catalog. Raises QueryError with a hint when unknown."""
    return load_catalog().get(query_id)
