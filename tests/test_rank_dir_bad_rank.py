"""A rank directory with a bad rank: the good ranks finish, the bad one is named, exit status 1."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kineto_sql.cli.main import cli

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "traces" / "ddp_allreduce_planted"


@pytest.fixture()
def rank_dir(tmp_path):
    for name in ("rank0.json.gz", "rank1.json.gz"):
        shutil.copy(GOLDEN / name, tmp_path / name)
    (tmp_path / "rank2.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"')[:30])
    return tmp_path


def _errors(result) -> list[str]:
    assert "Traceback" not in result.output
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def test_ranks_command_reports_the_good_ranks_and_names_the_bad_one(rank_dir):
    result = CliRunner().invoke(cli, ["ranks", str(rank_dir), "--format", "json", "-q"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)["result"]
    assert out["ranks"] == [0, 1]
    assert [f["path"] for f in out["failed_ranks"]] == [str(rank_dir / "rank2.json.gz")]
    assert _errors(result) == [f"error: rank file not loaded: {rank_dir / 'rank2.json.gz'} is a corrupt or "
                               "truncated gzip file; re-copy or re-export the trace"]
    table = CliRunner().invoke(cli, ["ranks", str(rank_dir), "-q"])
    assert table.exit_code == 1 and "Distribution across ranks" in table.stdout
    assert len(_errors(table)) == 1 and "rank2.json.gz" in _errors(table)[0]


def test_diagnose_directory_with_a_bad_rank(rank_dir):
    result = CliRunner().invoke(cli, ["diagnose", str(rank_dir), "--format", "json", "-q"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)["result"]
    assert [t["rank"] for t in out["traces"]] == [0, 1]
    assert len(out["failed_ranks"]) == 1 and "rank2.json.gz is a corrupt or truncated gzip" in out["failed_ranks"][0]
    assert len(_errors(result)) == 1
    text = CliRunner().invoke(cli, ["diagnose", str(rank_dir), "-q"])
    assert text.exit_code == 1 and "NOT LOADED: " in text.stdout and "rank0.json.gz" in text.stdout


def test_info_directory_with_a_bad_rank(rank_dir):
    result = CliRunner().invoke(cli, ["info", str(rank_dir), "--format", "json", "-q"])
    assert result.exit_code == 1
    assert [i["rank"] for i in json.loads(result.stdout)["result"]["traces"]] == [0, 1]
    assert len(_errors(result)) == 1 and "rank2.json.gz" in _errors(result)[0]


def test_every_rank_bad_is_one_sentence_and_exit_2(tmp_path):
    for i in range(2):
        (tmp_path / f"rank{i}.json").write_text("not json")
    result = CliRunner().invoke(cli, ["ranks", str(tmp_path), "-q"])
    assert result.exit_code == 2
    assert _errors(result) == [f"error: no rank could be loaded: {tmp_path / 'rank0.json'} is not valid JSON at line 1 "
                               "column 5 (byte 4): invalid character near 'not json'; "
                               "re-export the trace from torch.profiler (and 1 more rank file(s) failed)"]


def test_collectives_directory_with_a_bad_rank(rank_dir):
    result = CliRunner().invoke(cli, ["collectives", str(rank_dir), "--format", "json", "-q"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)["result"]
    assert out["ranks"] == [0, 1] and len(out["failed_ranks"]) == 1
    assert len(_errors(result)) == 1 and "rank2.json.gz" in _errors(result)[0]
