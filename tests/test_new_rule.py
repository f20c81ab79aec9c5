"""Proof of issue 14: a new rule is two new files. In a temporary copy of queries/, `kineto-sql new`
scaffolds a detector; lint names exactly what is left to write; after filling its page and adding one
case, `lint --update-lock ID`, `lint`, `try --write-cases` and the generic runner (tests/test_rules.py)
all pass, and nothing but the rule, its test file and the generated REFERENCE.md changed."""
from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kineto_sql.sql.package import QUERIES_ENV, queries_root
from tests.conftest import GOLDEN, REPO, SHARED

RULE = "catalog.long_host_op"
CASE = '''
[[case]]
name = "long_op_fires"
events = [
  { type = "ProfilerStep", step = 1, ts_us = 0, dur_us = 5000 },
  { type = "CpuOp", name = "aten::slow", ts_us = 10, dur_us = 2000 },
  { type = "CpuOp", name = "aten::fast", ts_us = 3000, dur_us = 5 },
]
expect_count = 1
columns = ["step", "dur"]
rows = [[1, 2000000]]
'''
PAGE = {
    "example": "long_op_fires",
    "title": "Long host op: one ATen call holding the host for a millisecond or more",
    "references": "PyTorch profiler documentation (https://pytorch.org/docs/stable/profiler.html)",
}


def _run(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not (GOLDEN / "traces" / "sync_item_planted.json.gz").exists(), reason="golden traces absent")
def test_a_new_rule_touches_no_shared_file(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(queries_root(), repo / "queries", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "golden").symlink_to(GOLDEN)
    (tmp_path / "shared").symlink_to(SHARED)
    before = _snapshot(repo / "queries")
    env = {**os.environ, QUERIES_ENV: str(repo / "queries")}
    cli = [sys.executable, "-m", "kineto_sql.cli.main"]

    made = _run(cli + ["new", RULE], env, repo)
    assert made.returncode == 0, made.stderr
    sql = repo / "queries" / "kineto" / "catalog" / "long_host_op.sql"
    tests = sql.with_name("long_host_op.test.toml")
    assert sql.exists() and tests.exists()

    linted = _run(cli + ["lint"], env, repo)
    assert linted.returncode == 1
    assert "replace the TODO" in linted.stdout and "has no [[case]] that fires" in linted.stdout

    text = sql.read_text()
    for key, value in PAGE.items():
        text = re.sub(rf"^-- {key}: TODO.*$", f"-- {key}: {value}", text, flags=re.MULTILINE)
    text = re.sub(r"TODO ", "", text)
    sql.write_text(text)
    tests.write_text(tests.read_text() + CASE)

    locked = _run(cli + ["lint", "--update-lock", RULE], env, repo)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    assert "lint: clean" in locked.stderr

    golden = repo / "golden" / "traces"
    tried = _run(cli + ["try", RULE, str(golden / "sync_item_planted.json.gz"), str(golden / "sync_item_fixed.json.gz"),
                        "--write-cases"], env, repo)
    assert tried.returncode == 0, tried.stderr
    assert re.search(r"^(fires|silent)\s+golden:sync_item_planted", tried.stdout, re.MULTILINE), tried.stdout
    assert "golden:sync_item_fixed" in tests.read_text()

    def outcome(stem: str) -> str:
        return re.search(rf"^(fires|silent)\s+golden:{stem}\b", tried.stdout, re.MULTILINE)[1]

    runner = _run([sys.executable, "-m", "pytest", "-v", "-p", "no:randomly", "-p", "no:cacheprovider",
                   str(REPO / "tests" / "test_rules.py"),
                   "-k", f"{RULE} or readable or every_rule or without_its_rule or reference"], env, REPO)
    assert runner.returncode == 0, runner.stdout[-3000:]
    passed = sorted(re.findall(r"::(\S+) PASSED", runner.stdout))
    assert [p for p in passed if RULE in p] == [
        f"test_case[{RULE}:long_op_fires]",
        f"test_trace_check[{RULE}:default-{outcome('sync_item_fixed')}-golden:sync_item_fixed]",
        f"test_trace_check[{RULE}:default-{outcome('sync_item_planted')}-golden:sync_item_planted]"], runner.stdout
    assert {"test_every_rule_has_a_readable_test_file", "test_every_rule_is_checked_on_traces_or_cases",
            "test_no_test_file_without_its_rule", "test_reference_is_current"} <= set(passed), runner.stdout

    after = _snapshot(repo / "queries")
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    # the two new files, and the two generated ones (`lint --update-lock` writes both; a merge conflict in
    # either is resolved by rerunning it)
    assert changed == ["LOCK.toml", "REFERENCE.md", "kineto/catalog/long_host_op.sql",
                       "kineto/catalog/long_host_op.test.toml"]
    lock = tomllib.loads((repo / "queries" / "LOCK.toml").read_text())
    assert lock[RULE]["version"] == 1 and set(lock[RULE]["cases"]) == {"long_op_fires"}
