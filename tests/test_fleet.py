"""kineto-sql fleet: per-rank tasks on local processes and on a real dask.distributed cluster, the Parquet
dataset, resume by content hash, a corrupt rank among good ones, and the cross-rank SQL (the one reading of
many ranks: `ranks`, `collectives` and `diagnose RANK_DIR` come through it too).

Cost: one 32-rank set (dlrm_8rank x 4, built once per session), read once with --jobs 2 and once on a
2-worker LocalCluster (hta part only: what the straggler reading needs); the other tests use two small
golden ranks."""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kineto_sql.cli.main import cli
from kineto_sql.fleet import dataset
from kineto_sql.fleet.executors import DaskExecutor, LocalExecutor
from kineto_sql.fleet.replicate import replicate_ranks, shifted
from kineto_sql.fleet.run import read_dataset, run_fleet
from tests.conftest import CORPUS, GOLDEN, needs_corpus

DLRM = CORPUS / "dlrm_8rank"
DDP = GOLDEN / "traces" / "ddp_allreduce_planted"
TIMING = ("load_s", "query_s")

try:
    import distributed
except ImportError:  # CI installs it (the test extra pulls kineto-sql[fleet])
    distributed = None
needs_dask = pytest.mark.skipif(distributed is None, reason="dask.distributed is not installed "
                                                            "(pip install 'kineto-sql[fleet]')")


@pytest.fixture(scope="module")
def cluster():
    if distributed is None:
        pytest.skip("dask.distributed is not installed (pip install 'kineto-sql[fleet]')")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, memory_limit=0) as c:
        yield c


@pytest.fixture(scope="session")
def fleet32(tmp_path_factory):
    if not DLRM.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    out = tmp_path_factory.mktemp("fleet32")
    replicate_ranks(DLRM, 4, out)
    return out


@pytest.fixture(scope="module")
def two_runs(fleet32, cluster, tmp_path_factory):
    """The 32 ranks read by 2 local processes and by the 2-worker cluster, each into its own dataset."""
    local, remote = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("dask")
    a = CliRunner().invoke(cli, ["fleet", str(fleet32), "-j", "2", "--parts", "hta", "--out", str(local),
                                 "--format", "json", "-q"])
    b = CliRunner().invoke(cli, ["fleet", str(fleet32), "--executor", "dask", "--address",
                                 cluster.scheduler_address, "--parts", "hta", "--out", str(remote),
                                 "--format", "json", "-q"])
    assert a.exit_code == 0, a.output
    assert b.exit_code == 0, b.output
    return local, json.loads(a.stdout)["result"], remote, json.loads(b.stdout)["result"]


def _table(directory: Path, name: str) -> pd.DataFrame:
    import duckdb

    frame = duckdb.read_parquet(str(directory / name / "*.parquet"), union_by_name=True).df()
    return frame.drop(columns=[c for c in TIMING if c in frame]).sort_values(["rank", "row_index"]) \
        .reset_index(drop=True)


def test_replicated_set_keeps_rank_7s_lag(fleet32):
    files = sorted(fleet32.glob("*.json.gz"))
    assert len(files) == 32
    trace = json.loads(gzip.decompress(files[31].read_bytes()))
    assert trace["distributedInfo"]["rank"] == 31 and trace["distributedInfo"]["world_size"] == 32


@needs_corpus
@needs_dask
def test_dask_cluster_gives_the_local_tables_and_straggler(two_runs, fleet32):
    local, a, remote, b = two_runs
    assert a["ranks"] == list(range(32)) == b["ranks"]
    assert a["read"] == 32 and b["read"] == 32
    # copy k's clock runs k x 10 us early: rank 25 (copy 3 of rank 1) starts first, rank 7 keeps the
    # original's 7.513 ms lag plus copy 3's 30 us, the largest of all 32
    lag = {r["rank"]: r["step_start_lag_us"] for r in a["summary"]}
    # (timestamps near 1.7e15 us carry 0.25 us of float precision)
    assert lag[25] == 0 and lag[7] == pytest.approx(7543.0, abs=0.5) and lag[31] == pytest.approx(7513.0, abs=0.5)
    assert max(lag, key=lag.get) == 7
    for out in (a, b):
        assert out["straggler"] == 7 and out["straggler_quantity"] == "comm_us"
        assert out["narration"].startswith("Rank 7 is the straggler: its communication kernel time is the "
                                           "lowest of 32 ranks, 1.75 ms against a median of 6.02 ms.")
    assert a["distribution"] == b["distribution"] and a["summary"] == b["summary"]
    names = sorted(p.name for p in local.iterdir() if p.is_dir())
    assert names == ["balance_steps", "hta_balance", "hta_idle", "hta_kernel_types", "hta_launches", "hta_overlap",
                     "hta_steps", "hta_temporal", "load", "op_shapes"]
    assert sorted(p.name for p in remote.iterdir() if p.is_dir()) == names
    for name in names:
        left, right = _table(local, name), _table(remote, name)
        assert len(left) >= 32
        pd.testing.assert_frame_equal(left, right)
    load = _table(local, "load")
    assert set(load.columns) >= {"rank", "trace_path", "content_hash", "kineto_sql_version"}
    assert load.loc[7, "content_hash"] == hashlib.sha256((fleet32 / "rank-0007.pt.trace.json.gz").read_bytes()).hexdigest()


def _pid(i):
    import os

    return i, os.getpid()


def test_local_pools_are_renewed_every_batch():
    """tasks_per_worker=1 with 2 jobs: 5 calls in batches of 2, 2, 1, each on fresh worker processes."""
    got = dict(LocalExecutor(2, 1).run(_pid, [(i,) for i in range(5)]))
    assert sorted(got) == list(range(5)) and all(got[i][0] == i for i in got)
    batches = [{got[0][1], got[1][1]}, {got[2][1], got[3][1]}, {got[4][1]}]
    assert not batches[0] & batches[1] and not batches[1] & batches[2] and not batches[0] & batches[2]


@pytest.fixture()
def bad_set(tmp_path):
    for name in ("rank0.json.gz", "rank1.json.gz"):
        shutil.copy(DDP / name, tmp_path / name)
    (tmp_path / "rank2.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"')[:30])
    return tmp_path


@needs_dask
def test_a_corrupt_rank_is_named_and_the_others_finish(bad_set, cluster, tmp_path_factory):
    bad = str(bad_set / "rank2.json.gz")
    sentence = f"{bad} is a corrupt or truncated gzip file; re-copy or re-export the trace"
    out = tmp_path_factory.mktemp("bad")
    result = CliRunner().invoke(cli, ["fleet", str(bad_set), "--parts", "hta", "--out", str(out), "--format",
                                      "json", "-q"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["result"]["ranks"] == [0, 1]
    assert json.loads(result.stdout)["result"]["failed_ranks"] == [{"path": bad, "error": sentence}]
    assert result.stderr.splitlines() == [f"error: rank file not loaded: {sentence} (1 of 3 rank files; the report "
                                          "covers the others)"]
    assert dataset.read_failures(out) == [(bad, sentence)]
    assert sorted(p.name for p in (out / "load").iterdir()) == ["rank=0.parquet", "rank=1.parquet"]
    with distributed.Client(cluster) as client:
        run = run_fleet(bad_set, ("hta",), DaskExecutor(client=client))
    assert run.report.ranks == [0, 1] and run.read == 2
    assert [(f.path, f.sentence()) for f in run.failures] == [(bad, sentence)]


def test_rerun_with_out_resumes_by_content_hash(tmp_path, monkeypatch):
    ranks_dir, out = tmp_path / "ranks", tmp_path / "out"
    ranks_dir.mkdir()
    for name in ("rank0.json.gz", "rank1.json.gz"):
        shutil.copy(DDP / name, ranks_dir / name)
    first = run_fleet(ranks_dir, ("hta",), LocalExecutor(1), out)
    assert (first.read, first.skipped) == (2, 0)
    again = run_fleet(ranks_dir, ("hta",), LocalExecutor(1), out)
    assert (again.read, again.skipped) == (0, 2)
    assert again.report.verdict.narration == first.report.verdict.narration
    old_hash = dataset.done(out)[str(ranks_dir / "rank1.json.gz")]["content_hash"]
    # rank 1's file changes (its clock moves 1 ms): only rank 1 is read again, under its new hash
    trace = json.loads(gzip.decompress((ranks_dir / "rank1.json.gz").read_bytes()))
    (ranks_dir / "rank1.json.gz").write_bytes(gzip.compress(json.dumps(shifted(trace, 1, 2, 1000)).encode()))
    changed = run_fleet(ranks_dir, ("hta",), LocalExecutor(1), out)
    assert (changed.read, changed.skipped) == (1, 1)
    new_hash = dataset.done(out)[str(ranks_dir / "rank1.json.gz")]["content_hash"]
    assert new_hash != old_hash
    assert new_hash == hashlib.sha256((ranks_dir / "rank1.json.gz").read_bytes()).hexdigest()
    lag = changed.report.summary.set_index("rank")["step_start_lag_us"]
    before = first.report.summary.set_index("rank")["step_start_lag_us"]
    assert lag[1] - lag[0] == pytest.approx(before[1] - before[0] + 1000.0)
    # a part the dataset lacks: every rank is read again
    more = run_fleet(ranks_dir, ("hta", "collectives"), LocalExecutor(1), out)
    assert (more.read, more.skipped) == (2, 0) and (out / "collectives" / "rank=1.parquet").is_file()
    # the report from the dataset alone: Parquet in, no trace loaded
    import kineto_sql.loading.load as load

    monkeypatch.setattr(load, "open_trace", lambda *a, **k: pytest.fail("a trace was loaded"))
    alone = read_dataset(out)
    assert alone.ranks == [0, 1] and alone.verdict.narration == more.report.verdict.narration
    result = CliRunner().invoke(cli, ["fleet", str(out), "-q"])
    assert result.exit_code == 0 and result.output.startswith("fleet: 2 ranks (from the dataset)")


def test_ranks_by_fsspec_url(tmp_path):
    pytest.importorskip("fsspec")
    for name in ("rank0.json.gz", "rank1.json.gz"):
        shutil.copy(DDP / name, tmp_path / name)
    run = run_fleet(tmp_path.as_uri(), ("hta", "collectives"), LocalExecutor(1), tmp_path / "out")
    assert run.report.ranks == [0, 1] and not run.failures
    load = _table(tmp_path / "out", "load")
    assert load["trace_path"].tolist() == [f"{tmp_path.as_uri()}/rank{r}.json.gz" for r in (0, 1)]
    assert load["content_hash"].tolist() == [hashlib.sha256((tmp_path / f"rank{r}.json.gz").read_bytes()).hexdigest()
                                             for r in (0, 1)]
    # the planted DDP pair (CPU, gloo): rank 0 starts its steps 9.1 ms late, so it arrives last at each of
    # the 3 all_reduce calls (steps 4-6) and rank 1 waits 87.6 ms in them in all. The gloo ops' ends put rank
    # 1's clock 63.3 us ahead of rank 0's, inside a band of 1.07 ms (the three ends disagree by up to 1 ms):
    # on the raw clocks the lag was 9145.5 us and the wait 87.42 ms
    clock = run.report.clock.set_index("rank")
    assert clock.loc[1, "offset_us"] == pytest.approx(63.322) and clock.loc[1, "band_us"] == pytest.approx(1074.975)
    assert run.report.summary["step_start_lag_us"].tolist() == pytest.approx([9145.5 + 63.322, 0.0], abs=0.5)
    skew = run.report.collective_skew
    assert skew["step"].tolist() == [4, 5, 6] and set(skew["collective"]) == {"all_reduce"}
    assert (skew["ranks"] == 2).all() and (skew["last_rank"] == 0).all() and (skew["first_rank"] == 1).all()
    late = run.report.rank_lateness.set_index("rank")
    assert late["arrived_last"].tolist() == [3, 0]
    assert late.loc[0, "wait_caused_us"] == pytest.approx(87422.191 + 3 * 63.322) == skew["wait_us"].sum()


def test_a_rank_diagnosed_keeps_its_ledger_and_steps_from_the_diagnosis_not_a_second_run(monkeypatch):
    """The rank task's ledger and steps tables are the rows the diagnosis already computed (one load, each
    query once): reading.step_ledger and reading.step_table are not run again, and hold what a run gives."""
    from kineto_sql import open_trace
    from kineto_sql.fleet import task
    from kineto_sql.run import runner

    trace = GOLDEN / "traces" / "checkpoint_fixed.json.gz"
    real, asked = runner.run_query, []

    def counted(tp, spec_or_id, params=None):
        asked.append(runner.resolve_spec(spec_or_id).id)
        return real(tp, spec_or_id, params)

    monkeypatch.setattr(runner, "run_query", counted)
    out = task.rank_task(str(trace), parts=("diagnose",), keep_diagnosis=True)
    assert out.diagnosis is not None and out.diagnosis.verdict.steps > 0
    # once each: by the diagnosis (which may bind the counted run_query), never again for the tables
    assert asked.count("reading.step_ledger") <= 1 and asked.count("reading.step_table") <= 1
    monkeypatch.setattr(runner, "run_query", real)
    with open_trace(trace) as tp:
        for name, query_id in (("ledger", "reading.step_ledger"), ("steps", "reading.step_table")):
            expected = real(tp, query_id).df
            got = out.tables[name].to_pandas()[list(expected.columns)]
            assert len(got) == len(expected) > 0
            pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True),
                                          check_dtype=False)
