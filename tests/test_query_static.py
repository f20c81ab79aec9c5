"""Static checks of every query file: header schema, naming, includes, lint clean, lock fresh."""
from __future__ import annotations

import re
import textwrap
import tomllib

import pytest

from kineto_sql.devtools import lint
from kineto_sql.catalog import lock as versions
from kineto_sql.catalog.spec import coerce_value, load_catalog, parse_query_file
from kineto_sql.errors import QueryError
from kineto_sql.sql.includes import kineto_dependencies
from kineto_sql.sql.package import package_dir

ALL_SQL = sorted(package_dir().rglob("*.sql"))


def _rel(path):
    return str(path.relative_to(package_dir()))


@pytest.mark.parametrize("path", ALL_SQL, ids=_rel)
def test_file_is_lint_clean(path):
    base = package_dir()
    spec = None
    problems = []
    if path.relative_to(base).parts[0] != "lib":
        spec, problems = parse_query_file(path, base)
    problems += lint.lint_file(path, base, spec)
    assert [str(p) for p in problems] == []


def test_catalog_has_the_reading_queries_with_their_params():
    cat = load_catalog()
    step_table = cat.get("reading.step_table")
    assert [(p.name, p.type, p.default) for p in step_table.params] == [
        ("sparse_below_pct", "DOUBLE", 50.0), ("cold_start_factor", "DOUBLE", 1.5)]
    assert step_table.needs == ()  # the ledger's windows: ProfilerStep, inferred iterations or the capture
    assert step_table.entrypoint == "kineto_reading_step_table"
    assert step_table.module == "kineto.reading.step_table"
    assert cat.get("reading.op_table").params[0].default == 0


def test_includes_resolve_in_dependency_order():
    deps = kineto_dependencies(load_catalog().get("reading.step_table").sql)
    assert deps.index("kineto.lib.event_categories") < deps.index("kineto.lib.steps") < deps.index("kineto.lib.cpu_ops")
    assert deps.index("kineto.lib.kernels") < deps.index("kineto.lib.stream_busy") < deps.index("kineto.lib.device_busy")


def test_lock_is_fresh():
    issues = versions.lock_issues()
    assert [str(i) for i in issues] == []


def test_normalized_sql_ignores_comments_and_whitespace_but_not_strings():
    a = "SELECT  a -- note\nFROM t WHERE b = 'x  --y'"
    b = "-- header\nSELECT a\n  FROM t\nWHERE b = 'x  --y' /* c */"
    assert versions.normalize_sql(a) == versions.normalize_sql(b) == "SELECT a FROM t WHERE b = 'x  --y'"
    assert versions.normalize_sql("SELECT 'a b'") != versions.normalize_sql("SELECT 'a  b'")


@pytest.mark.parametrize(("sql_type", "raw", "value"), [
    ("LONG", "1_000", 1000), ("LONG", 3.0, 3), ("DOUBLE", "2.5", 2.5), ("BOOL", "yes", True), ("BOOL", "0", False),
    ("STRING", "a'b", "a'b"),
])
def test_param_coercion(sql_type, raw, value):
    assert coerce_value(sql_type, raw) == value


@pytest.mark.parametrize(("sql_type", "raw"), [("LONG", "1.5"), ("DOUBLE", "nan"), ("BOOL", "maybe"), ("STRING", 3)])
def test_param_coercion_refuses(sql_type, raw):
    with pytest.raises(QueryError, match=f"wants a {sql_type} value"):
        coerce_value(sql_type, raw)


GOOD = textwrap.dedent("""\
    -- id: reading.demo
    -- version: 1
    -- kind: reading
    -- title: Demo
    -- references: test
    -- needs: none
    -- status: preview
    -- default top_n: 5

    -- The demo.
    CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_demo(
      -- Rows to keep.
      top_n LONG
    )
    RETURNS TABLE(
      -- A name.
      name STRING
    ) AS
    SELECT name FROM slice LIMIT $top_n;
    """)


GOOD_TESTS = '[traces]\nfires_on = ["golden:sync_item_planted"]\n'
FIRING_CASE = ('[[case]]\nname = "fires"\nevents = [{ type = "CpuOp", name = "aten::mm", ts_us = 0, dur_us = 5 }]\n'
               'expect_count = 1\n')


def _lint_one(tmp_path, rel, text, tests=GOOD_TESTS):
    root = tmp_path / "kineto"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if tests is not None:
        path.with_name(path.stem + ".test.toml").write_text(tests)
    return [p.message for p in lint.lint(root, check_lock=False)]


def test_lint_accepts_a_good_query(tmp_path):
    assert _lint_one(tmp_path, "reading/demo.sql", GOOD) == []


@pytest.mark.parametrize(("rel", "edit", "message"), [
    ("reading/demo.sql", ("name FROM slice LIMIT", "name FROM slice WHERE name LIKE 'a%' LIMIT"), "LIKE is banned"),
    ("reading/demo.sql", ("-- A name.\n", ""), "put a `-- comment` above column/argument name"),
    ("reading/demo.sql", ("-- The demo.\n", ""), "put a `-- comment` directly above function kineto_reading_demo"),
    ("reading/demo.sql", ("SELECT name FROM", "SELECT * FROM"), "instead of SELECT *"),
    ("reading/demo.sql", ("-- id: reading.demo", "-- id: reading.other"), "does not match the path"),
    ("reading/demo.sql", ("default top_n: 5", "default limit_n: 5"), "not an argument of kineto_reading_demo"),
    ("reading/demo.sql", ("default top_n: 5", "default top_n: five"), "default of top_n: parameter top_n wants a LONG"),
    ("reading/demo.sql", ("default top_n: 5", "param top_n LONG 5: rows"), "`-- param` lines are gone"),
    ("reading/demo.sql", ("-- status: preview", "-- status: beta"), "status 'beta' is not one of"),
    ("reading/demo.sql", ("CREATE OR REPLACE PERFETTO", "CREATE PERFETTO"), "write CREATE OR REPLACE"),
    ("reading/demo.sql", ("-- kind: reading", "-- kind: detector"), "does not fit area reading"),
    ("reading/demo.sql", ("-- needs: none", "-- needs: gpus"), "is not a capability"),
    ("reading/demo.sql", ("-- version: 1", "-- version: one"), "version must be an integer"),
    ("reading/demo.sql", ("-- title: Demo\n", ""), "header lacks `-- title: ...`"),
    ("reading/demo.sql", ("LIMIT $top_n;", "LIMIT $top_n;\nINCLUDE PERFETTO MODULE kineto.lib.nope;"), "no such module"),
    ("reading/demo.sql", ("SELECT name FROM slice", "SELECT name FROM slice WHERE AND"), "does not parse as SQL"),
    ("reading/order.sql", ("reading.demo", "reading.order"), "must be a lowercase SQL identifier"),
])
def test_lint_finds(tmp_path, rel, edit, message):
    problems = _lint_one(tmp_path, rel, GOOD.replace(*edit))
    assert any(message in p for p in problems), problems


def test_lint_problems_name_file_and_line(tmp_path):
    root = tmp_path / "kineto"
    (root / "reading").mkdir(parents=True)
    (root / "reading" / "demo.sql").write_text(GOOD.replace("-- A name.\n", ""))
    (root / "reading" / "demo.test.toml").write_text(GOOD_TESTS)
    [problem] = lint.lint(root, check_lock=False)
    assert str(problem).startswith(f"{root / 'reading' / 'demo.sql'}:16: ")


def test_detector_needs_the_envelope_columns(tmp_path):
    text = (GOOD.replace("reading.demo", "catalog.demo").replace("kind: reading", "kind: detector")
            .replace("kineto_reading_demo", "kineto_catalog_demo")
            .replace("-- needs: none", DETECTOR_DOC))
    problems = _lint_one(tmp_path, "catalog/demo.sql", text, FIRING_CASE)
    assert any("a detector's output starts with ts TIMESTAMP, dur DURATION" in p for p in problems), problems


DETECTOR_DOC = ("-- needs: none\n-- what: s\n-- confirming: c\n-- why: t\n-- known_problems: p\n"
                "-- example: fires\n-- use_instead: f")
DETECTOR = (GOOD.replace("reading.demo", "catalog.demo").replace("kind: reading", "kind: detector")
            .replace("kineto_reading_demo", "kineto_catalog_demo").replace("-- needs: none", DETECTOR_DOC))


@pytest.mark.parametrize(("edit", "tests", "message"), [
    (("-- title: Demo", "-- title: TODO name it"), FIRING_CASE, "replace the TODO"),
    (("-- example: fires", "-- example: other"), FIRING_CASE, "example 'other' is not a case of demo.test.toml"),
    (("-- why: t\n", ""), FIRING_CASE, "a detector needs `-- why: ...`"),
    (("-- why: t", "-- cost: t"), FIRING_CASE, "header key 'cost' is now 'why'"),
    (("-- example: fires", "-- example: fires\n-- locked: 1 abc"), FIRING_CASE, "belongs in queries/LOCK.toml"),
    (("-- example: fires\n", ""), FIRING_CASE, "a detector needs `-- example: ...`"),
    (("", ""), GOOD_TESTS, "catalog.demo has no [[case]] that fires"),
    (("", ""), FIRING_CASE.replace("expect_count = 1", "expect_count = 0"), "is a case that does not fire"),
    (("", ""), None, "no test file demo.test.toml beside the rule"),
])
def test_lint_holds_a_detector_to_its_doc_page_and_a_firing_case(tmp_path, edit, tests, message):
    problems = _lint_one(tmp_path, "catalog/demo.sql", DETECTOR.replace(*edit), tests)
    assert any(message in p for p in problems), problems


def test_a_documented_detector_with_a_firing_case_passes_those_checks(tmp_path):
    problems = _lint_one(tmp_path, "catalog/demo.sql", DETECTOR, FIRING_CASE)
    assert not any("TODO" in p or "example" in p or "fires" in p or "needs `--" in p for p in problems), problems


def test_update_lock_refuses_a_forgotten_bump(tmp_path):
    root = tmp_path / "kineto"
    (root / "reading").mkdir(parents=True)
    query = root / "reading" / "demo.sql"
    query.write_text(GOOD)
    assert [i.message for i in versions.lock_issues(root)] == [
        "not locked yet; run `kineto-sql lint --update-lock reading.demo`"]
    assert versions.update_lock(root) == []
    lock = tomllib.loads((tmp_path / "LOCK.toml").read_text())
    assert lock["reading.demo"]["version"] == 1 and len(lock["reading.demo"]["sql"]) == 16
    assert "locked" not in query.read_text() and versions.lock_issues(root) == []
    query.write_text(query.read_text().replace("LIMIT $top_n", "LIMIT $top_n + 1"))
    [issue] = versions.lock_issues(root)
    assert "bump `-- version:` to 2" in issue.message and issue.needs_bump
    assert versions.update_lock(root) != []
    query.write_text(query.read_text().replace("version: 1", "version: 2"))
    assert versions.update_lock(root) == []
    assert versions.lock_issues(root) == []
    assert tomllib.loads((tmp_path / "LOCK.toml").read_text())["reading.demo"]["version"] == 2


def test_a_lib_change_bumps_only_the_lib_module_and_a_changed_case_bumps_the_rule(tmp_path):
    root = tmp_path / "kineto"
    (root / "lib").mkdir(parents=True)
    (root / "reading").mkdir(parents=True)
    lib = root / "lib" / "names.sql"
    lib.write_text("-- version: 1\n\n-- Names.\nCREATE OR REPLACE PERFETTO TABLE kineto_names(\n  -- A name.\n"
                   "  name STRING\n) AS\nSELECT name FROM slice;\n")
    query = root / "reading" / "demo.sql"
    query.write_text(GOOD.replace("-- The demo.", "INCLUDE PERFETTO MODULE kineto.lib.names;\n\n-- The demo."))
    case = root / "reading" / "demo.test.toml"
    case.write_text('[[case]]\nname = "one"\nevents = []\nexpect_count = 0\n')
    assert versions.update_lock(root) == []
    lock = tomllib.loads((tmp_path / "LOCK.toml").read_text())
    assert lock["reading.demo"]["lib"] == ["lib.names@1"] and list(lock["reading.demo"]["cases"]) == ["one"]
    assert lock["lib.names"] == {"version": 1, "sql": lock["lib.names"]["sql"]}
    lib.write_text(lib.read_text().replace("FROM slice", "FROM slice WHERE dur > 0"))
    assert [(i.id, i.needs_bump) for i in versions.lock_issues(root)] == [("lib.names", True)]
    lib.write_text(lib.read_text().replace("version: 1", "version: 2"))
    assert versions.update_lock(root, ["lib.names"]) == []
    [issue] = versions.lock_issues(root)
    assert issue.id == "reading.demo" and not issue.needs_bump and "lib.names@1 -> lib.names@2" in issue.message
    before = {p: p.read_text() for p in root.rglob("*.sql")}
    assert versions.update_lock(root) == []
    # a lib bump touches one file: LOCK.toml, never the header of a query that includes the module
    assert {p: p.read_text() for p in root.rglob("*.sql")} == before
    assert tomllib.loads((tmp_path / "LOCK.toml").read_text())["reading.demo"]["lib"] == ["lib.names@2"]
    case.write_text(case.read_text() + '\n[[case]]\nname = "two"\nevents = []\nexpect_count = 0\n')
    [issue] = versions.lock_issues(root)
    assert not issue.needs_bump
    assert versions.update_lock(root) == []
    case.write_text(case.read_text().replace("expect_count = 0", "expect_count = 1", 1))
    [issue] = versions.lock_issues(root)
    assert issue.needs_bump and "case(s) one changed" in issue.message


@pytest.mark.parametrize(("raw", "ns"), [(1500, 1500), ("50us", 50_000), ("1ms", 1_000_000), ("2.5 ms", 2_500_000),
                                         ("1_000", 1000), ("1s", 1_000_000_000)])
def test_duration_params_are_ns_with_optional_units(raw, ns):
    assert coerce_value("DURATION", raw) == ns


@pytest.mark.parametrize("raw", ["fast", "1.5", "1h", True])
def test_duration_params_refuse_what_is_not_a_duration(raw):
    with pytest.raises(QueryError, match="wants a DURATION value"):
        coerce_value("DURATION", raw)


def test_a_lib_module_without_its_version_line_is_a_problem(tmp_path):
    root = tmp_path / "kineto"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "names.sql").write_text("-- Names.\nCREATE OR REPLACE PERFETTO TABLE kineto_names(\n  -- A name.\n"
                                            "  name STRING\n) AS\nSELECT name FROM slice;\n")
    assert any("a lib module starts with its own `-- version: N` line" in p.message
               for p in lint.lint(root, check_lock=False))


VOCAB = GOOD.replace("SELECT name FROM slice LIMIT $top_n;", "SELECT name FROM slice AS s WHERE {cond} LIMIT $top_n;")


def test_vocabulary_lint_rejects_a_runtime_call_name_with_one_clear_message(tmp_path):
    root = tmp_path / "kineto"
    (root / "reading").mkdir(parents=True)
    (root / "reading" / "demo.sql").write_text(VOCAB.format(cond="s.name = 'cudaStreamSynchronize'"))
    (root / "reading" / "demo.test.toml").write_text(GOOD_TESTS)
    [problem] = lint.lint(root, check_lock=False)
    assert str(problem) == (
        f"{root / 'reading' / 'demo.sql'}:19: kineto_reading_demo: raw runtime-call name 'cudaStreamSynchronize' in a "
        "comparison: runtime calls are classified once by the rule table of kineto.lib.runtime_calls; read "
        "kineto_runtime_calls.class (add a rule there if no class fits)")


@pytest.mark.parametrize(("cond", "literal"), [
    ("s.name GLOB 'hip*'", "'hip*'"),
    ("s.name IN ('aten::mm', 'cuLaunchKernel')", "'cuLaunchKernel'"),
    ("s.category = 'python_function'", "'python_function'"),
    ("s.category != 'gpu_user_annotation'", "'gpu_user_annotation'"),
    ("s.category IN ('cpu_op', 'Operator')", "'cpu_op'"),
    ("s.category IN ('cpu_op', 'Operator')", "'Operator'"),
    ("s.name = 'x' AND s.category = 'kernel'", "'kernel'"),
    ("CASE s.category WHEN 'ac2g' THEN 1 END = 1", "'ac2g'"),
])
def test_vocabulary_lint_rejects_raw_categories_and_runtime_names(tmp_path, cond, literal):
    problems = _lint_one(tmp_path, "reading/demo.sql", VOCAB.format(cond=cond))
    assert problems and all(" raw " in p for p in problems), problems
    assert sum(literal in p for p in problems) == 1, problems


@pytest.mark.parametrize("cond", [
    "s.name GLOB '*cutlass*'",                 # a kernel name, not a runtime call
    "s.name = 'aten::copy_'",
    "'cudaLaunchKernel' IS NOT NULL",          # not a comparison of a column with a name
    "s.name IN (SELECT 'kernel' AS source)",   # an output value, not a comparison
])
def test_vocabulary_lint_leaves_lib_vocabulary_and_other_strings_alone(tmp_path, cond):
    assert _lint_one(tmp_path, "reading/demo.sql", VOCAB.format(cond=cond)) == []


def test_vocabulary_lint_accepts_lib_vocabulary_values(tmp_path):
    text = VOCAB.format(cond="s.id IN (SELECT r.id FROM kineto_runtime_calls AS r WHERE r.class = 'launch')"
                             " AND s.category IN (SELECT c.category FROM kineto_event_categories AS c"
                             " WHERE c.event_class = 'cpu_op' AND NOT c.is_annotation)")
    assert _lint_one(tmp_path, "reading/demo.sql", text) == []


def test_vocabulary_lint_allows_raw_names_in_lib(tmp_path):
    text = textwrap.dedent("""\
        -- version: 1

        -- Demo.
        CREATE OR REPLACE PERFETTO TABLE kineto_demo(
          -- Id.
          id LONG
        ) AS
        SELECT s.id FROM slice AS s WHERE s.name = 'cudaStreamSynchronize' AND s.category = 'cuda_runtime';
        """)
    root = tmp_path / "kineto"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "demo.sql").write_text(text)
    assert [p.message for p in lint.lint(root, check_lock=False)] == []


def test_vocabulary_allow_list_names_live_files_with_a_reason():
    from kineto_sql.devtools.vocabulary_lint import ALLOWED
    for rel, reason in ALLOWED.items():
        assert (package_dir() / rel).is_file(), rel
        assert len(reason) > 40, rel


def test_the_repo_passes_the_vocabulary_lint():
    problems = [str(p) for p in lint.lint(check_lock=False) if "raw " in p.message]
    assert problems == []


CLAIMING = (DETECTOR.replace("-- example: fires", "-- example: fires\n-- claims: idle.sync, host.sync_read")
            .replace("INCLUDE", "INCLUDE"))


@pytest.mark.parametrize(("body", "message"), [
    ("SELECT name FROM kineto_ledger_claim('idle.sync') LIMIT $top_n;", "differs from the header's `-- claims:"),
    ("SELECT name FROM kineto_ledger_claim('idle.sync,host.sync_read') LIMIT $top_n;", "differs from the header's"),
    ("SELECT name FROM kineto_ledger LIMIT $top_n;", "read its claim through kineto_ledger_claim('idle.sync, host.sync_read')"),
    ("SELECT name FROM kineto_ledger WHERE bucket = 'idle.sync' LIMIT $top_n;", "names no ledger bucket"),
])
def test_lint_holds_a_claim_to_the_header_line(tmp_path, body, message):
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert any(message in p for p in problems), problems


def test_lint_accepts_the_claims_line_passed_verbatim(tmp_path):
    body = "SELECT name FROM kineto_ledger_claim('idle.sync, host.sync_read') LIMIT $top_n;"
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert not any("claim" in p for p in problems), problems


@pytest.mark.parametrize(("body", "message"), [
    ("SELECT name FROM kineto_ledger_claim_buckets('idle.sync') LIMIT $top_n;",
     "kineto_ledger_claim_buckets('idle.sync') differs from the header's `-- claims: idle.sync, host.sync_read`"),
    ("SELECT name FROM kineto_ledger_claim_buckets($claims) LIMIT $top_n;",
     "pass kineto_ledger_claim_buckets the header's claims line as one string literal"),
    ("SELECT name FROM kineto_ledger_claim_buckets('idle.sync, host.sync_read') WHERE bucket = 'idle.sync' LIMIT $top_n;",
     "names no ledger bucket"),
])
def test_lint_holds_the_per_bucket_claim_to_the_header_line(tmp_path, body, message):
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert any(message in p for p in problems), problems


def test_lint_accepts_the_per_bucket_claim_passed_verbatim(tmp_path):
    body = "SELECT name FROM kineto_ledger_claim_buckets('idle.sync, host.sync_read') LIMIT $top_n;"
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert not any("claim" in p or "bucket" in p for p in problems), problems


HELPER = "SELECT name FROM kineto_ledger_claim('idle.sync, host.sync_read')"


@pytest.mark.parametrize("body", [
    f"{HELPER} WHERE bucket != 'idle.sync' LIMIT $top_n;",
    f"{HELPER} WHERE bucket <> 'idle.sync' LIMIT $top_n;",
    f"{HELPER} WHERE bucket GLOB 'idle.*' LIMIT $top_n;",
    f"{HELPER} WHERE bucket NOT GLOB 'busy.*' LIMIT $top_n;",
    f"{HELPER} WHERE bucket LIKE 'idle.%' LIMIT $top_n;",
    f"{HELPER} WHERE l.bucket NOT IN ('busy.gemm', 'idle.sync') LIMIT $top_n;",
    f"{HELPER} WHERE bucket == 'idle.sync' LIMIT $top_n;",
])
def test_lint_sees_every_comparison_of_a_bucket_with_a_literal(tmp_path, body):
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert any("names no ledger bucket" in p for p in problems), problems


def test_lint_lets_a_bucket_be_compared_with_a_column(tmp_path):
    """Joining on a bucket column or comparing two buckets names no bucket: silent."""
    body = (f"{HELPER} AS c JOIN kineto_ledger_buckets AS b ON b.bucket = c.name "
            "WHERE b.bucket != c.name AND b.bucket NOT IN (SELECT bucket FROM kineto_ledger_buckets) LIMIT $top_n;")
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert not any("bucket" in p for p in problems), problems


def test_lint_holds_a_rule_that_calls_the_helper_and_reads_the_ledger_beside_it(tmp_path):
    """Calling the claim helper once does not license a second, direct read of kineto_ledger (what
    catalog.cold_start did before it read kineto_ledger_window_buckets)."""
    body = (f"{HELPER} UNION ALL SELECT bucket AS name FROM kineto_ledger WHERE NOT is_cold LIMIT $top_n;")
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert any("reads kineto_ledger: read its claim through kineto_ledger_claim('idle.sync, host.sync_read')" in p
               for p in problems), problems
    beside = f"{HELPER} UNION ALL SELECT bucket AS name FROM kineto_ledger_window_buckets WHERE NOT is_cold LIMIT $top_n;"
    problems = _lint_one(tmp_path, "catalog/demo.sql", CLAIMING.replace("SELECT name FROM slice LIMIT $top_n;", beside),
                         FIRING_CASE)
    assert not any("claim" in p for p in problems), problems


RESIDUAL = CLAIMING.replace("-- claims: idle.sync, host.sync_read", "-- claims: rest of idle.*, rest of host.gc")
LEDGER_BY_BUCKET = "SELECT name FROM kineto_ledger WHERE bucket IN ('busy.gemm', 'idle.sync') LIMIT $top_n;"


def test_lint_lets_a_residual_explainer_read_the_ledger_by_bucket(tmp_path):
    """Every claim `rest of X`: the rule describes the ledger (shares of every lane), so it reads
    kineto_ledger and names buckets outside its claim; lint stays silent."""
    problems = _lint_one(tmp_path, "catalog/demo.sql", RESIDUAL.replace("SELECT name FROM slice LIMIT $top_n;",
                                                                        LEDGER_BY_BUCKET), FIRING_CASE)
    assert not any("claim" in p or "bucket" in p for p in problems), problems


@pytest.mark.parametrize(("claims", "body", "message"), [
    # one named claim among the residual ones: held to the helper
    ("rest of idle.*, host.gc", LEDGER_BY_BUCKET, "names no ledger bucket"),
    ("rest of idle.*, host.gc", "SELECT name FROM kineto_ledger LIMIT $top_n;",
     "reads kineto_ledger: read its claim through kineto_ledger_claim('rest of idle.*, host.gc')"),
    # a residual explainer that calls the helper still passes its claims line verbatim
    ("rest of idle.*, rest of host.gc", "SELECT name FROM kineto_ledger_claim_buckets('rest of idle.*') LIMIT $top_n;",
     "differs from the header's `-- claims: rest of idle.*, rest of host.gc`"),
])
def test_lint_holds_a_named_claim_beside_residual_ones(tmp_path, claims, body, message):
    text = CLAIMING.replace("-- claims: idle.sync, host.sync_read", f"-- claims: {claims}")
    problems = _lint_one(tmp_path, "catalog/demo.sql", text.replace("SELECT name FROM slice LIMIT $top_n;", body),
                         FIRING_CASE)
    assert any(message in p for p in problems), problems


def test_every_claiming_detector_passes_its_claims_line():
    """The shipped rules: each kineto_ledger_claim / kineto_ledger_claim_buckets call carries its header's
    claims line (lint enforces it; this pins which detectors read their claim that way)."""
    readers = sorted(s.id for s in load_catalog().by_kind("detector")
                     if "kineto_ledger_claim(" in s.sql or "kineto_ledger_claim_buckets(" in s.sql)
    assert readers == ["catalog.blocking_copy", "catalog.cold_start", "catalog.dataloader_workers_missing",
                       "catalog.exposed_communication", "catalog.gc_gil_stall", "catalog.host_composition",
                       "catalog.host_compute_gaps", "catalog.implicit_dtype_casts", "catalog.input_bound",
                       "catalog.memory_churn", "catalog.optimizer_step_dominance", "catalog.small_op_storm",
                       "catalog.sync_forcing_op", "catalog.unexplained_time", "catalog.with_stack_overhead"]
    # a detector that reads the ledger directly, with or without the helper, is a residual explainer (every
    # claim `rest of X`); the others read it only through the helper and kineto_ledger_window_buckets
    direct = {s.id: s.header.get("claims") for s in load_catalog().by_kind("detector")
              if re.search(r"\bkineto_ledger\b", s.sql)}
    assert sorted(direct) == ["catalog.device_composition", "catalog.host_composition", "catalog.unexplained_time"]
    assert all(c.strip().startswith("rest of ") for claims in direct.values() for c in claims.split(",")), direct
    for spec in load_catalog().by_kind("detector"):
        assert lint.check_claims(spec.path, spec) == [], spec.id


def test_the_words_of_a_ledger_bucket_are_written_once():
    """What each idle / host bucket means is defined in kineto.lib.ledger_buckets only: no other query
    or lib module repeats its words (reading.verdict's sentence reads them from there)."""
    lib = package_dir() / "lib" / "ledger_buckets.sql"
    words = re.findall(r"\('(?:idle|host)\.\w+', '([^']+)',", lib.read_text())
    assert len(words) >= 18
    again = sorted(f"{path.relative_to(package_dir())}: {w}" for path in package_dir().rglob("*.sql") if path != lib
                   for w in set(words) if f"'{w}'" in path.read_text())
    assert again == []


def test_a_kernel_class_is_mapped_to_its_ledger_bucket_once():
    """kineto.lib.kernel_class_buckets is the one class -> busy bucket map: it covers every class
    kineto.lib.kernel_classes documents, and no other query or lib module maps a class to a bucket."""
    lib = package_dir() / "lib"
    documented = re.search(r"-- gemm, conv, attention.*?-- (communication.*?)\n\s*class STRING",
                           (lib / "kernel_classes.sql").read_text(), re.S)
    classes = set(re.findall(r"[a-z_]+", "gemm, conv, attention" + documented.group(0).split("attention", 1)[1]
                             .replace("class STRING", "").replace("--", " ")))
    mapped = dict(re.findall(r"\('([a-z_]+)', '(busy\.[a-z_]+)', [01]\)", (lib / "kernel_class_buckets.sql").read_text()))
    assert set(mapped) == classes and len(classes) == 16, (sorted(classes), sorted(mapped))
    again = sorted(str(path.relative_to(package_dir())) for path in package_dir().rglob("*.sql")
                   if path.name != "kernel_class_buckets.sql"
                   and re.search(r"WHEN '(?:%s)' THEN '(?:busy\.[a-z_]+|\d+)'" % "|".join(sorted(classes)), path.read_text()))
    assert again == []
