"""Your own rules without a fork: `--rules DIR` and `[tool.kineto-sql] rules` (kineto_sql/catalog/user_rules.py).

A small user rule in tmp_path is listed, shown, linted, locked (in DIR/LOCK.toml, never the installed lock),
run, tried and diagnosed like a built-in rule; it fires at its threshold and stays silent just under it;
its cases run with the built-in rules' judge, from the command line too (`kineto-sql test --rules DIR`)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from kineto_sql.catalog import user_rules
from kineto_sql.catalog.cases import load_rule_tests
from kineto_sql.catalog.spec import load_catalog
from kineto_sql.cli.main import cli
from kineto_sql.sql.package import queries_root
from tests.kineto_builder import CpuOp, KinetoTrace, ProfilerStep

RULE_SQL = """\
-- id: catalog.slow_user_op
-- version: 1
-- kind: detector
-- title: Slow user op: one CPU op runs at least min_dur
-- references: PyTorch profiler recipe (https://pytorch.org/tutorials/recipes/recipes/profiler_recipe.html)
-- what: A CPU op (not an annotation) that runs at least min_dur.
-- confirming: The op's duration in the trace, against min_dur.
-- why: The host spends that time in one op; impact_dur is the op's self time.
-- known_problems: An op that waits on the device is long for another reason; check its children.
-- example: fires_at_the_threshold
-- use_instead: Find what the op does in its time and move it out of the step.
-- needs: cpu_ops
-- status: preview
-- default min_dur: 1ms

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- One finding per CPU op at least min_dur long. Silent (no rows) when every op is shorter.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_slow_user_op(
  -- An op at least this long (ns; default 1ms) is a finding.
  min_dur DURATION
)
RETURNS TABLE(
  -- When the finding starts.
  ts TIMESTAMP,
  -- How long it lasts.
  dur DURATION,
  -- Estimated step time lost to it.
  impact_dur DURATION,
  -- Step number of the ProfilerStep#N it is in, or NULL.
  step LONG,
  -- One plain-words sentence with the numbers.
  evidence STRING,
  -- Slice id of the op.
  op_id LONG
) AS
SELECT
  o.ts,
  o.dur,
  o.self_dur AS impact_dur,
  o.step,
  printf('%s ran %.1f us', o.name, o.dur / 1e3) AS evidence,
  o.id AS op_id
FROM kineto_cpu_ops AS o
WHERE
  o.dur >= $min_dur
  AND NOT o.is_annotation
ORDER BY o.ts;
"""

RULE_CASES = """\
# catalog.slow_user_op: a user rule's cases, in the built-in rules' format (kineto_sql/catalog/cases.py).

[[case]]
name = "fires_at_the_threshold"
events = [
  { type = "ProfilerStep", step = 1, ts_us = 0, dur_us = 5000 },
  { type = "CpuOp", name = "aten::slow", ts_us = 10, dur_us = 1000 },
]
expect_count = 1
columns = ["step", "dur"]
rows = [[1, 1000000]]

[[case]]
name = "silent_just_under"
events = [
  { type = "ProfilerStep", step = 1, ts_us = 0, dur_us = 5000 },
  { type = "CpuOp", name = "aten::slow", ts_us = 10, dur_us = 999 },
]
expect_count = 0
"""


@pytest.fixture(autouse=True)
def _builtin_rules_after():
    yield
    user_rules.deactivate()


@pytest.fixture
def rules(tmp_path) -> Path:
    directory = tmp_path / "my_rules"
    (directory / "catalog").mkdir(parents=True)
    (directory / "catalog" / "slow_user_op.sql").write_text(RULE_SQL)
    (directory / "catalog" / "slow_user_op.test.toml").write_text(RULE_CASES)
    return directory


@pytest.fixture
def trace(tmp_path) -> Path:
    """Step 1 holds an op of exactly 1 ms (the default threshold), step 2 one of 999 us (just under)."""
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=5000), CpuOp("aten::at_threshold", ts_us=10, dur_us=1000),
        ProfilerStep(2, ts_us=5000, dur_us=5000), CpuOp("aten::just_under", ts_us=5010, dur_us=999),
    ]).write(tmp_path)


def _cli(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def _json(*args):
    result = _cli(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["result"]


def test_listed_shown_linted_and_locked_in_its_own_directory(rules):
    lock_file = queries_root() / "LOCK.toml"
    builtin_lock = lock_file.read_bytes()
    ids = [r["id"] for r in _json("list", "--kind", "detector", "--rules", rules)]
    assert "catalog.slow_user_op" in ids and "catalog.gc_gil_stall" in ids  # beside the built-in ones
    page = _json("show", "catalog.slow_user_op", "--rules", rules)
    assert page["path"] == str((rules / "catalog" / "slow_user_op.sql").resolve()) and page["version"] == 1
    unlocked = _cli("lint", "--rules", rules)
    assert unlocked.exit_code == 1
    assert unlocked.stdout.splitlines() == [f"{rules.resolve() / 'catalog' / 'slow_user_op.sql'}:2: "
                                            "catalog.slow_user_op: not locked yet; run `kineto-sql lint "
                                            "--update-lock catalog.slow_user_op`"]
    assert unlocked.stderr.splitlines() == ["error: lint: 1 problem(s)"]
    locked = _cli("lint", "--update-lock", "catalog.slow_user_op", "--rules", rules)
    assert locked.exit_code == 0, locked.output
    assert f"in {rules.resolve() / 'LOCK.toml'}" in locked.stdout
    assert "catalog.slow_user_op" in (rules / "LOCK.toml").read_text()
    assert lock_file.read_bytes() == builtin_lock
    user_rules.deactivate()
    clean = _cli("lint", "--rules", rules)
    assert clean.exit_code == 0 and clean.stderr.strip() == "lint: clean"


def test_fires_at_the_threshold_and_stays_silent_just_under(rules, trace):
    (query,) = _json("run", "catalog.slow_user_op", trace, "--rules", rules, "-q")["queries"]
    assert [(r["step"], r["dur"], r["evidence"]) for r in query["rows"]] == [(1, 1_000_000, "aten::at_threshold ran 1000.0 us")]
    (higher,) = _json("run", "catalog.slow_user_op", trace, "--rules", rules, "-q", "-p", "min_dur", "1001us")["queries"]
    assert higher["rows"] == []
    (lower,) = _json("run", "catalog.slow_user_op", trace, "--rules", rules, "-q", "-p", "min_dur", "999us")["queries"]
    assert sorted(r["dur"] for r in lower["rows"]) == [999_000, 1_000_000]
    tried = _json("try", "catalog.slow_user_op", trace, "--rules", rules, "-q")
    assert [(t["outcome"], t["count"]) for t in tried["traces"]] == [("fires", 1)]
    report = _json("diagnose", trace, "--rules", rules, "-q")
    found = [f for t in report["traces"] for f in t["findings"] if f["query_id"] == "catalog.slow_user_op"]
    assert len(found) == 1 and found[0]["count"] == 1


def test_its_cases_run_as_the_built_in_rules_cases_do(rules, tmp_path):
    """The judge of tests/test_rules.py (kineto_sql/devtools/rule_tests.py) passes the user rule's cases."""
    from kineto_sql.devtools.rule_tests import run_case

    user_rules.activate([rules])
    spec = load_catalog().get("catalog.slow_user_op")
    tests = load_rule_tests(spec.id, spec.path)
    assert list(tests.problems) == [] and [c.name for c in tests.cases] == ["fires_at_the_threshold", "silent_just_under"]
    outcomes = [run_case(case, directory=tmp_path) for case in tests.cases]
    assert [(o.name, o.outcome, o.message) for o in outcomes] == [
        ("fires_at_the_threshold", "passed", ""), ("silent_just_under", "passed", "")]
    # the same judge fails a case whose pinned rows differ, and says how
    wrong = replace(tests.cases[0], rows=((1, 999_000),))
    assert run_case(wrong, directory=tmp_path).message == "step, dur: expected [1, 999000], got [1, 1000000]"


def test_pyproject_entry_without_the_option(rules, monkeypatch):
    project = rules.parent
    (project / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.kineto-sql]\nrules = ["my_rules"]\n')
    monkeypatch.chdir(project)
    assert "catalog.slow_user_op" in [r["id"] for r in _json("list", "--kind", "detector")]
    user_rules.deactivate()
    tested = _cli("test", "-q")   # the project's rules, not the built-in ones
    assert tested.exit_code == 0 and tested.stdout.splitlines() == [
        "passed  catalog.slow_user_op:fires_at_the_threshold", "passed  catalog.slow_user_op:silent_just_under"]
    user_rules.deactivate()
    (project / "pyproject.toml").write_text('[tool.kineto-sql]\nrules = "my_rules"\n')
    bad = _cli("list")
    assert bad.exit_code == 2 and bad.stderr.splitlines() == [
        f"error: {project / 'pyproject.toml'}: [tool.kineto-sql] rules must be a list of directories, "
        "e.g. rules = [\"my_rules\"]".replace("my_rules", "rules")]


def test_a_rule_may_not_shadow_a_built_in_one(rules):
    (rules / "catalog" / "gc_gil_stall.sql").write_text(RULE_SQL)
    result = _cli("list", "--rules", rules)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {rules.resolve() / 'catalog' / 'gc_gil_stall.sql'} has the same name as ")
    missing = _cli("list", "--rules", rules / "nope")
    assert missing.exit_code == 2 and "does not exist" in missing.stderr


FAILING_CASE = """
[[case]]
name = "wrongly_silent_at_the_threshold"
events = [
  { type = "ProfilerStep", step = 1, ts_us = 0, dur_us = 5000 },
  { type = "CpuOp", name = "aten::slow", ts_us = 10, dur_us = 1000 },
]
expect_count = 0
"""

TRACE_CHECKS = """
[traces]
fires_on = ["golden:matmul_tiny_vs_big_fixed"]     # aten::mm runs 50.3 ms
silent_on = ["golden:gc_stall_planted", "golden:not_recorded_here"]   # its longest op runs 237 us
"""


def test_its_cases_run_from_the_command_line(rules):
    """`kineto-sql test --rules DIR`: a pip user runs their rule's cases with the built-in rules' judge
    (kineto_sql/devtools/rule_tests.py, which tests/test_rules.py uses too); a failing case is named with
    why, and exits 1 with one error line."""
    passing = _cli("test", "--rules", rules, "-q")
    assert passing.exit_code == 0, passing.output
    assert passing.stdout.splitlines() == ["passed  catalog.slow_user_op:fires_at_the_threshold",
                                           "passed  catalog.slow_user_op:silent_just_under"]
    assert passing.stderr.splitlines() == ["2 case(s) and check(s) of 1 rule(s): 2 passed"]
    cases = rules / "catalog" / "slow_user_op.test.toml"
    cases.write_text(RULE_CASES + FAILING_CASE)
    failing = _cli("test", "--rules", rules, "-q")
    assert failing.exit_code == 1
    assert failing.stdout.splitlines() == ["passed  catalog.slow_user_op:fires_at_the_threshold",
                                           "passed  catalog.slow_user_op:silent_just_under",
                                           "failed  catalog.slow_user_op:wrongly_silent_at_the_threshold  "
                                           "expected 0 row(s), got 1"]
    assert failing.stderr.splitlines() == [
        "error: test: 1 of 3 failed (3 case(s) and check(s) of 1 rule(s): 2 passed, 1 failed): "
        "catalog.slow_user_op:wrongly_silent_at_the_threshold"]
    doc = json.loads(_cli("test", "catalog.slow_user_op", "--rules", rules, "-q", "--format", "json").stdout)
    assert doc["exit"] == {"code": 1, "reason": failing.stderr.splitlines()[-1].removeprefix("error: ")}
    assert doc["result"]["counts"]["failed"] == 1 and doc["result"]["rules"] == ["catalog.slow_user_op"]
    assert [(o["name"], o["outcome"]) for o in doc["result"]["outcomes"]] == [
        ("fires_at_the_threshold", "passed"), ("silent_just_under", "passed"),
        ("wrongly_silent_at_the_threshold", "failed")]


def test_its_trace_checks_and_a_broken_case(rules):
    """[traces] checks run where their trace is present (fires on the 50 ms op, silent where the longest op
    is 237 us), an absent trace is skipped and said; a case naming an event type that does not exist is one
    failed outcome with the sentence, never a traceback; the cases alone with --cases-only."""
    cases = rules / "catalog" / "slow_user_op.test.toml"
    cases.write_text(RULE_CASES + TRACE_CHECKS)
    run = _cli("test", "--rules", rules, "-q")
    assert run.exit_code == 0, run.output
    assert run.stdout.splitlines()[2:] == [
        "passed  catalog.slow_user_op:default-fires-golden:matmul_tiny_vs_big_fixed",
        "passed  catalog.slow_user_op:default-silent-golden:gc_stall_planted",
        "skipped catalog.slow_user_op:default-silent-golden:not_recorded_here  golden:not_recorded_here is not "
        f"present ({Path(__file__).resolve().parents[1] / 'golden' / 'traces' / 'not_recorded_here.json.gz'})"]
    assert run.stderr.splitlines() == ["5 case(s) and check(s) of 1 rule(s): 4 passed, 1 skipped"]
    assert len(_cli("test", "--rules", rules, "-q", "--cases-only").stdout.splitlines()) == 2
    cases.write_text(RULE_CASES.replace('type = "CpuOp", name = "aten::slow", ts_us = 10, dur_us = 999',
                                        'type = "CpuOps", name = "aten::slow", ts_us = 10, dur_us = 999'))
    broken = _cli("test", "--rules", rules, "-q", "--cases-only")
    assert broken.exit_code == 1
    assert broken.stdout.splitlines()[1] == (
        "failed  catalog.slow_user_op:silent_just_under  event 2: type 'CpuOps' is not one of CpuOp, PythonFrame, "
        "ProfilerStep, Launch, Kernel, MemoryEvent")
    (rules / "catalog" / "slow_user_op.test.toml").unlink()
    missing = _cli("test", "--rules", rules, "-q")
    assert missing.exit_code == 1 and missing.stdout.startswith(
        "failed  catalog.slow_user_op:slow_user_op.test.toml  no test file slow_user_op.test.toml beside the rule")
