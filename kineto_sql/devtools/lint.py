"""`kineto-sql lint`: checks every .sql file of the package against queries/README.md.

Checks: header schema (via catalog), id matches path, path segments are SQL identifiers and not
keywords, only `CREATE OR REPLACE PERFETTO {TABLE|VIEW|FUNCTION|MACRO|INDEX}` and `INCLUDE PERFETTO MODULE`
statements, a typed schema on every table/view, a `--` comment above every object and every column /
argument, public names (`kineto_<module>` in lib, the entrypoint `kineto_<area>_<name>` in a query, helpers
`_kineto_...`), includes that resolve (lib includes only lib), no LIKE, sqlglot parses each statement's
SELECT body once the PerfettoSQL wrapper is peeled, no `SELECT *` in public outputs, no raw event category or
runtime-call name compared outside lib (kineto_sql/devtools/vocabulary_lint.py), declared params equal
the entrypoint's arguments (names, order, types), detector envelope columns, a detector's claim read through
kineto_ledger_claim with its header's `claims:` line verbatim, and a fresh queries/LOCK.toml (kineto_sql/catalog/lock.py).
Every problem is `path:line: what to fix`.
"""
from __future__ import annotations

import re
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from kineto_sql.catalog.spec import AREA_KINDS, DETECTOR_KEYS, DOC_SECTIONS, Problem, QuerySpec, parse_query_file
from kineto_sql.catalog.cases import load_rule_tests
from kineto_sql.sql.includes import includes_of, module_path
from kineto_sql.sql.package import PACKAGE, package_dir
from kineto_sql.sql.text import ObjectDef, Statement, mask, parse_object, split_statements
from kineto_sql.catalog import lock as versions
from kineto_sql.devtools import vocabulary_lint

SQL_KEYWORDS = frozenset("""
abort action add after all alter always analyze and as asc attach autoincrement before begin between by cascade
case cast check collate column commit conflict constraint create cross current current_date current_time
current_timestamp database default deferrable deferred delete desc detach distinct do drop each else end escape
except exclude exclusive exists explain fail filter first following for foreign from full generated glob group
groups having if ignore immediate in index indexed initially inner insert instead intersect into is isnull join
key last left like limit match materialized natural no not nothing notnull null nulls of offset on or order
others outer over partition plan pragma preceding primary query raise range recursive references regexp reindex
release rename replace restrict returning right rollback row rows savepoint select set table temp temporary then
ties to transaction trigger unbounded union unique update using vacuum values view virtual when where window with
without function macro module perfetto include returns
""".split())
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_INCLUDE = re.compile(r"^INCLUDE\s+PERFETTO\s+MODULE\s+(?P<module>\S+?)\s*$", re.IGNORECASE | re.DOTALL)
_CLAIM_CALL = re.compile(r"\b(?P<fn>kineto_ledger_claim(?:_buckets)?)\s*\(\s*(?P<arg>'(?P<claims>[^']*)'|[^)]*)\s*\)")
_LEDGER_READ = re.compile(r"\bkineto_ledger\b")
# a bucket compared with a literal: = == != <> GLOB LIKE IN (...) NOT IN (...)
_BUCKET_LITERAL = re.compile(r"\bbucket\s*(?:==?|!=|<>|(?:NOT\s+)?(?:GLOB|LIKE)|(?:NOT\s+)?IN\s*\()\s*'",
                             re.IGNORECASE)
DETECTOR_ENVELOPE = (("ts", "TIMESTAMP"), ("dur", "DURATION"), ("impact_dur", "DURATION"), ("step", "LONG"),
                     ("evidence", "STRING"))


def parse_body(body: str) -> exp.Expression:
    """sqlglot's parse of a PerfettoSQL body: `$arg` becomes `:arg`, `macro!(` becomes `macro(`."""
    text = re.sub(r"\$([A-Za-z_]\w*)", r":\1", body)
    text = re.sub(r"([A-Za-z_]\w*)!\(", r"\1(", text)
    stripped = text.strip()
    if stripped.startswith("(") and stripped.endswith(")"):
        stripped = stripped[1:-1]
    return sqlglot.parse_one(stripped, dialect="sqlite")


def _outer_select_has_star(tree: exp.Expression) -> bool:
    node = tree
    while isinstance(node, exp.Union):
        if _outer_select_has_star(node.left):
            return True
        node = node.right
    if isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.Select):
        return any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                   for e in node.expressions)
    return False


def _line_of_column(st: Statement, name: str) -> int:
    """The line where a column / argument is declared (the statement's line when not found)."""
    for offset, line in enumerate(st.text.splitlines()):
        if offset and re.match(rf"^\s*{re.escape(name)}\s+[A-Za-z]", line):
            return st.line + offset
    return st.line


def lint_file(path: Path, root: Path, spec: QuerySpec | None) -> list[Problem]:
    problems: list[Problem] = []
    categories = vocabulary_lint.raw_categories(root)
    text = path.read_text()
    rel = path.relative_to(root)
    parts = rel.with_suffix("").parts
    for part in parts:
        if not _IDENT.match(part) or part in SQL_KEYWORDS:
            problems.append(Problem(path, 1, f"path segment {part!r} must be a lowercase SQL identifier that is not a "
                                             "keyword (module names are kineto.<area>.<name>); rename the file"))
    is_lib = parts[0] == "lib"
    if is_lib and not re.match(r"^--\s?version:\s*[1-9][0-9]*\s*$", text.split("\n", 1)[0]):
        problems.append(Problem(path, 1, "a lib module starts with its own `-- version: N` line (then a blank "
                                         f"line); then run `kineto-sql lint --update-lock lib.{parts[-1]}`"))
    module = ".".join((PACKAGE,) + parts)
    public_name = f"{PACKAGE}_" + "_".join(parts[1:] if is_lib else parts)
    internal_prefix = "_kineto_" if is_lib else f"_{PACKAGE}_{parts[0]}_"
    masked_all = mask(text)
    for match in re.finditer(r"\bLIKE\b", masked_all, re.IGNORECASE):
        problems.append(Problem(path, text.count("\n", 0, match.start()) + 1,
                                "LIKE is banned (case-insensitive, not the stdlib's); use GLOB"))
    for inc in includes_of(text):
        if inc.is_kineto:
            if not module_path(inc.module, root).is_file():
                problems.append(Problem(path, inc.line, f"INCLUDE PERFETTO MODULE {inc.module}: no such module "
                                                        f"(expected {module_path(inc.module, root)})"))
            elif is_lib and inc.module.split(".")[1] != "lib":
                problems.append(Problem(path, inc.line, f"a lib module may include only kineto.lib.* and the stdlib, "
                                                        f"not {inc.module}"))
            elif not is_lib and inc.module.split(".")[1] not in ("lib", parts[0]):
                problems.append(Problem(path, inc.line, f"a query may include kineto.lib.* and modules of its own area "
                                                        f"({parts[0]}), not {inc.module}"))
        elif not re.match(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$", inc.module):
            problems.append(Problem(path, inc.line, f"INCLUDE PERFETTO MODULE {inc.module}: not a module name "
                                                    "(no wildcards)"))
    objects: list[ObjectDef] = []
    for st in split_statements(text):
        if st.doc == "<missing ;>":
            problems.append(Problem(path, st.line, "statement does not end with ';'"))
            continue
        if _INCLUDE.match(st.text):
            continue
        parsed = parse_object(st)
        if isinstance(parsed, str):
            problems.append(Problem(path, st.line, parsed))
            continue
        obj = parsed
        objects.append(obj)
        if not re.match(r"^CREATE\s+OR\s+REPLACE\s", st.text, re.IGNORECASE):
            problems.append(Problem(path, st.line, f"write CREATE OR REPLACE PERFETTO {obj.kind} {obj.name} (a pasted "
                                                   "bundle must run twice in one session)"))
        if not obj.documented:
            problems.append(Problem(path, st.line, f"put a `-- comment` directly above {obj.kind.lower()} {obj.name}"))
        for col in obj.args + obj.columns:
            col_line = _line_of_column(st, col.name)
            if not col.documented:
                problems.append(Problem(path, col_line, f"{obj.name}: put a `-- comment` above column/argument {col.name}"))
            if not col.type:
                problems.append(Problem(path, col_line, f"{obj.name}: column/argument {col.name} has no type"))
        if obj.name.startswith("_"):
            if not obj.name.startswith(internal_prefix):
                problems.append(Problem(path, st.line, f"internal object {obj.name} must start with {internal_prefix}"))
        elif obj.name != public_name:
            problems.append(Problem(path, st.line, f"public object {obj.name} must be named {public_name} (one public "
                                                   f"object per module); prefix helpers with {internal_prefix}"))
        if obj.body is not None:
            try:
                tree = parse_body(obj.body)
            except ParseError as exc:
                tree = None
                if obj.kind != "MACRO":  # a macro body may be a fragment; it is checked where it parses
                    first = str(exc).splitlines()[0]
                    problems.append(Problem(path, obj.body_line, f"body of {obj.name} does not parse as SQL: {first}"))
            if tree is not None:
                if obj.kind != "MACRO" and not obj.name.startswith("_") and _outer_select_has_star(tree):
                    problems.append(Problem(path, obj.body_line, f"{obj.name}: name the output columns instead of "
                                                                 "SELECT * (public outputs are a contract)"))
                problems += vocabulary_lint.check(path, rel, obj, tree, categories)
    publics = [o for o in objects if not o.name.startswith("_")]
    if len(publics) != 1:
        problems.append(Problem(path, 1, f"{module} must define exactly one public object ({public_name}); "
                                         f"found {len(publics)}"))
    if not is_lib and spec is not None:
        problems += _check_query(path, spec, publics[0] if len(publics) == 1 else None, parts)
    return problems


def _check_query(path: Path, spec: QuerySpec, entry: ObjectDef | None, parts: tuple[str, ...]) -> list[Problem]:
    problems = []
    expected_kind = AREA_KINDS.get(parts[0])
    if expected_kind is None:
        problems.append(Problem(path, 1, f"area {parts[0]!r} is not one of {', '.join(AREA_KINDS)} (or lib)"))
    elif spec.kind != expected_kind:
        problems.append(Problem(path, 1, f"kind {spec.kind} does not fit area {parts[0]}; use kind {expected_kind}"))
    problems += _check_doc_and_cases(path, spec)
    if spec.kind == "detector":
        problems += check_claims(path, spec)
    if entry is None:
        return problems
    if entry.kind != "FUNCTION" or not entry.returns_table:
        problems.append(Problem(path, entry.line, f"{entry.name} must be a FUNCTION ... RETURNS TABLE(...) (the "
                                                  "runner calls SELECT * FROM it)"))
        return problems
    if spec.kind == "detector":
        lead = [(c.name, c.type) for c in entry.columns[:len(DETECTOR_ENVELOPE)]]
        if lead != list(DETECTOR_ENVELOPE):
            want = ", ".join(f"{n} {t}" for n, t in DETECTOR_ENVELOPE)
            problems.append(Problem(path, entry.line, f"a detector's output starts with {want}"))
    return problems


def check_claims(path: Path, spec: QuerySpec) -> list[Problem]:
    """A claim is stated once: the header's `-- claims:` line, passed verbatim to kineto_ledger_claim (its
    total per window) or kineto_ledger_claim_buckets (per window, lane and bucket), the readers of a claim on
    the step-time ledger (kineto.lib.ledger_claim). A detector that reads the ledger reads its claim that
    way, and names no bucket in its SQL.

    A residual explainer, whose claims are all `rest of X`, is exempt from the last two: it describes the
    ledger itself (a bucket's share of every lane, the verdict's compute share, the step's composition by
    class), so it reads buckets outside its claim and names them. Its claimed time is what diagnose leaves
    after every named claim, so naming buckets cannot double-claim time; a header with any named claim is
    held to the helper."""
    problems = []
    claims = (spec.header.get("claims") or "").strip()
    residual = bool(claims) and all(c.strip().startswith("rest of ") for c in claims.split(","))
    for number, line in enumerate(spec.sql.splitlines(), start=1):
        code = line.split("--", 1)[0]
        for call in _CLAIM_CALL.finditer(code):
            fn = call["fn"]
            if call["claims"] is None:
                problems.append(Problem(path, number, f"pass {fn} the header's claims line as one "
                                                      f"string literal, e.g. {fn}('{claims or 'idle.sync'}')"))
            elif not claims:
                problems.append(Problem(path, number, f"{fn}('{call['claims']}') but the header has no "
                                                      f"`-- claims:` line; add `-- claims: {call['claims']}`"))
            elif call["claims"] != claims:
                problems.append(Problem(path, number, f"{fn}('{call['claims']}') differs from the "
                                                      f"header's `-- claims: {claims}`; pass the claims line verbatim"))
        if not residual and _BUCKET_LITERAL.search(code):
            problems.append(Problem(path, number, "a detector names no ledger bucket in its SQL: its claim is the "
                                                  "header's `-- claims:` line, read by kineto_ledger_claim('...')"))
    # calling the helper does not license reading the ledger beside it: the rest would be a second claim
    if claims and not residual and _LEDGER_READ.search("\n".join(l.split("--", 1)[0] for l in spec.sql.splitlines())):
        problems.append(Problem(path, 1, f"{spec.id} reads kineto_ledger: read its claim through "
                                         f"kineto_ledger_claim('{claims}') (INCLUDE PERFETTO MODULE kineto.lib.ledger_claim) "
                                         "and other windows' buckets from kineto_ledger_window_buckets"))
    return problems


def _check_doc_and_cases(path: Path, spec: QuerySpec) -> list[Problem]:
    """The header is the rule's doc page and its test file proves it: no TODO left, a detector documents
    every section of its page, its `example` names a case that fires, and every rule has a firing case
    (a detector an exact-row one; other kinds may use a `fires_on` trace)."""
    problems = []
    for number, line in enumerate(spec.sql.splitlines(), start=1):
        if re.search(r"\bTODO\b", line):
            problems.append(Problem(path, number, "replace the TODO with the real text (the header is the rule's page)"))
    tests = load_rule_tests(spec.id, spec.path)
    problems += [Problem(tests.path, 1, message) for message in tests.problems]
    firing = tests.firing_cases()
    if spec.kind == "detector":
        for key in DETECTOR_KEYS:
            if not (spec.header.get(key) or "").strip():
                problems.append(Problem(path, 1, f"a detector needs `-- {key}: ...` in its header ({DOC_SECTIONS[key]})"))
        if not firing:
            problems.append(Problem(tests.path, 1, f"{spec.id} has no [[case]] that fires; add one (and name it in "
                                                   "`-- example:`)"))
        example = (spec.example or "").strip()
        if example and not re.search(r"\bTODO\b", example):
            case = tests.case(example)
            if case is None:
                problems.append(Problem(path, 1, f"example {example!r} is not a case of {tests.path.name}"))
            elif not case.fires:
                problems.append(Problem(path, 1, f"example {example!r} is a case that does not fire; name one that does"))
    elif not firing and not any(c.outcome == "fires_on" for c in tests.checks):
        problems.append(Problem(tests.path, 1, f"{spec.id} has no case that returns rows: add a [[case]] or a "
                                               "[traces] fires_on trace"))
    return problems


def lint(root: Path | None = None, check_lock: bool = True) -> list[Problem]:
    """Every problem in the package, sorted by path and line."""
    base = Path(root) if root else package_dir()
    problems: list[Problem] = []
    specs = []
    for path in sorted(base.rglob("*.sql")):
        spec = None
        if path.relative_to(base).parts[0] != "lib":
            spec, found = parse_query_file(path, base)
            problems += found
            if spec is not None:
                specs.append(spec)
        problems += lint_file(path, base, spec)
    if check_lock:
        problems += versions.lock_problems(base)
    return sorted(problems, key=lambda p: (str(p.path), p.line))
