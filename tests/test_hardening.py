"""Hostile input outside the loader: every case ends in one sentence and a known exit status, never a
traceback, a hang or a half-written file.

Names, FIFOs and rank directories (kineto_sql/inputs.py), atomic outputs on a full disk (kineto_sql/outputs.py,
fleet/dataset.py), fsspec URLs (fleet/urls.py), dask addresses and local workers (fleet/executors.py), Ctrl-C
inside the engine (cli/interrupt.py), Markdown escaping (diagnose/render_text.py), the exit status of an
unmatched B event (trace_info.py) and fleet resume however the directory is spelled (fleet/run.py).
"""
from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from kineto_sql.cli.main import cli
from tests.conftest import GOLDEN
from tests.kineto_builder import CpuOp, KinetoTrace, Kernel, Launch, ProfilerStep

KINETO_SQL = str(Path(sys.executable).with_name("kineto-sql"))
SMALL = GOLDEN / "traces" / "sync_item_planted.json.gz"
LOOP_SQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
NON_UTF8 = b"caf\xe9.json.gz"


def tiny_trace(directory: Path, name: str = "trace.json.gz", rank: int | None = None, op: str = "aten::mm") -> Path:
    trace = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=1000), CpuOp(op, ts_us=10, dur_us=100),
                         Launch(correlation=1, ts_us=20, dur_us=8), Kernel(correlation=1, ts_us=50, dur_us=30),
                         ProfilerStep(2, ts_us=1000, dur_us=1000), CpuOp(op, ts_us=1010, dur_us=100),
                         Launch(correlation=2, ts_us=1020, dur_us=8), Kernel(correlation=2, ts_us=1050, dur_us=30)])
    if rank is not None:
        trace.metadata["distributedInfo"] = {"rank": rank, "world_size": 4}
    return trace.write(directory, name)


def run_cli(*args, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """The console script, as a user runs it (bytes arguments allowed), with progress lines off."""
    return subprocess.run([KINETO_SQL, *args], capture_output=True, timeout=timeout, **kwargs)


def one_sentence(stderr: bytes | str, *needles: str) -> str:
    """The only line of stderr that is not a progress line: one `error:` sentence, no traceback."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("kineto-sql: [")]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def no_temporaries(directory: Path) -> list[str]:
    return [str(p) for p in Path(directory).rglob("*") if p.name.endswith(".tmp")]


# -- 2. tracebacks: names, full disks, URLs, addresses -----------------------------------------------------
@pytest.mark.parametrize("command", [["info"], ["sql", "SELECT 1"], ["diagnose", "--jobs", "1"], ["open", "--no-browser"]])
def test_a_file_name_that_is_not_utf8_is_one_sentence(tmp_path, command):
    path = os.path.join(os.fsencode(tmp_path), NON_UTF8)
    Path(os.fsdecode(path)).write_bytes(SMALL.read_bytes())
    args = [command[0], path, *command[1:]]
    result = run_cli(*args)
    assert result.returncode == 2
    one_sentence(result.stderr, "caf\\xe9.json.gz", "not valid UTF-8", "rename it")
    assert result.stdout == b""


def test_diagnose_output_on_a_full_disk_is_one_sentence_and_leaves_nothing_half_written(tmp_path, monkeypatch):
    from kineto_sql import outputs

    target = tmp_path / "report.md"
    target.write_text("the previous report\n")
    real_fsync = os.fsync

    def full(fd):  # the bytes went to the page cache; the disk cannot take them
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outputs.os, "fsync", full)
    result = CliRunner().invoke(cli, ["diagnose", str(SMALL), "--jobs", "1", "--format", "markdown", "-o", str(target)])
    monkeypatch.setattr(outputs.os, "fsync", real_fsync)
    assert result.exit_code == 2, result.output
    one_sentence(result.stderr, f"cannot write {target}", "no space left", "nothing was written there")
    assert target.read_text() == "the previous report\n"  # whole: the old one, never a truncated new one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_an_output_that_is_no_regular_file_is_written_to_not_replaced(tmp_path):
    # `-o /dev/null` as root once renamed a plain file over /dev/null; a FIFO stands in for the device here
    import stat

    from kineto_sql.outputs import write_atomically

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomically(fifo, "the report\n")
    reader.join(10)
    assert got == [b"the report\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_an_output_through_a_link_keeps_the_link(tmp_path):
    from kineto_sql.outputs import write_atomically

    (tmp_path / "reports").mkdir()
    real = tmp_path / "reports" / "report.md"
    real.write_text("the previous report\n")
    link = tmp_path / "latest.md"
    link.symlink_to(real)
    write_atomically(link, "the new report\n")
    assert link.is_symlink() and real.read_text() == "the new report\n"


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="a real full disk needs a small tmpfs: mount needs root")
def test_diagnose_html_onto_a_real_full_tmpfs(tmp_path):
    disk = tmp_path / "disk"
    if not _tmpfs(disk, "4k"):
        pytest.skip("this container may not mount a tmpfs (the fault-injection test above covers the code)")
    try:
        result = run_cli("diagnose", str(SMALL), "--jobs", "1", "--format", "html", "-o", str(disk / "r.html"))
        assert result.returncode == 2
        one_sentence(result.stderr, "no space left")
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_fleet_out_on_a_full_disk_is_one_sentence_and_every_file_is_whole(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for r in range(2):
        tiny_trace(ranks, f"rank{r}.json.gz", rank=r)
    out = tmp_path / "fleet"
    real = pq.write_table
    calls = []

    def write_table(table, where, *args, **kwargs):
        calls.append(where)
        if len(calls) == 4:  # the disk fills in the middle of the first rank's tables
            Path(where).write_bytes(b"PAR1 half a file")
            raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", write_table)
    result = CliRunner().invoke(cli, ["fleet", str(ranks), "--out", str(out), "--parts", "hta", "--quiet"])
    assert result.exit_code == 2, result.output
    one_sentence(result.stderr, "cannot write", "no space left", "nothing was written there")
    assert no_temporaries(out) == []
    for file in out.rglob("*.parquet"):  # what is there is whole
        pq.read_table(file)
    assert not (out / "load").exists() or not list((out / "load").iterdir())  # no rank counts as done
    monkeypatch.setattr(pq, "write_table", real)
    again = CliRunner().invoke(cli, ["fleet", str(ranks), "--out", str(out), "--parts", "hta", "--quiet",
                                     "--format", "json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["result"]["read"] == 2


@pytest.mark.parametrize("url, needle", [
    ("s3://bucket/job/", "pip install s3fs"),
    ("gcs://bucket/job/", "pip install gcsfs"),
    ("gs://bucket/job/", "pip install gcsfs"),
    ("http://127.0.0.1:9/job/", "pip install aiohttp requests"),
    ("https://example.invalid/job/", "pip install aiohttp requests"),
    ("abfs://container/job/", "pip install adlfs"),
    ("nosuch://bucket/job/", "nosuch:// is not a protocol fsspec knows"),
])
def test_fleet_url_without_its_package_names_the_package(url, needle):
    from kineto_sql.fleet.urls import package_for, protocol

    module = package_for(protocol(url)).split(" ")[0]
    if needle.startswith("pip") and _importable(module):
        pytest.skip(f"{module} is installed here: the listing would be tried for real")
    result = CliRunner().invoke(cli, ["fleet", url])
    assert result.exit_code == 2
    one_sentence(result.stderr, url, needle)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_fleet_missing_zip_is_one_sentence(tmp_path):
    missing = tmp_path / "ranks.zip"
    result = CliRunner().invoke(cli, ["fleet", f"zip://*::{missing}"])
    assert result.exit_code == 2
    one_sentence(result.stderr, str(missing), "does not exist")


@pytest.mark.parametrize("address, needle", [
    ("http://127.0.0.1:8787", "speaks tcp:// (or tls://), not http://"),
    ("https://scheduler:8786", "not https://"),
    ("tls://127.0.0.1:8786", "tls:// needs the cluster's certificates"),
    ("scheduler", "has no host and port"),
    ("tcp://scheduler", "has no host and port"),
])
def test_dask_address_dask_cannot_use_is_one_sentence(tmp_path, address, needle):
    tiny_trace(tmp_path, "rank0.json.gz", rank=0)
    t0 = time.monotonic()
    result = CliRunner().invoke(cli, ["fleet", str(tmp_path), "--executor", "dask", "--address", address])
    assert result.exit_code == 2
    one_sentence(result.stderr, f"--address {address}", needle)
    assert time.monotonic() - t0 < 5


# -- 6. hangs -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["info"], ["sql", "SELECT 1"], ["diagnose"], ["diagnose", "--jobs", "1"]])
def test_a_fifo_is_refused_not_read(tmp_path, command):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    result = run_cli(command[0], str(fifo), *command[1:], timeout=60)
    assert result.returncode == 2
    one_sentence(result.stderr, f"{fifo} is a FIFO (named pipe), not a regular file")


def test_a_port_that_does_not_speak_dask_times_out_with_a_sentence(tmp_path, monkeypatch):
    """A listener that accepts and never answers (a dashboard, an HTTP server): dask's Client waited minutes."""
    from kineto_sql.fleet import executors

    tiny_trace(tmp_path, "rank0.json.gz", rank=0)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []
    threading.Thread(target=lambda: [held.append(listener.accept()) for _ in range(8)], daemon=True).start()
    monkeypatch.setattr(executors, "CONNECT_S", 2)
    address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    t0 = time.monotonic()
    try:
        result = CliRunner().invoke(cli, ["fleet", str(tmp_path), "--executor", "dask", "--address", address])
    finally:
        listener.close()
    assert result.exit_code == 2
    one_sentence(result.stderr, f"no dask scheduler answered at {address} within 7 s")
    assert time.monotonic() - t0 < 20


def test_a_closed_port_is_said_at_once(tmp_path):
    tiny_trace(tmp_path, "rank0.json.gz", rank=0)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    result = CliRunner().invoke(cli, ["fleet", str(tmp_path), "--executor", "dask", "--address", f"tcp://127.0.0.1:{port}"])
    assert result.exit_code == 2
    one_sentence(result.stderr, "cannot reach the dask scheduler", "Connection refused")
    assert time.monotonic() - t0 < 5


def test_a_killed_fleet_driver_leaves_no_worker_running(tmp_path):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for r in range(6):
        (ranks / f"rank{r}.json.gz").write_bytes(SMALL.read_bytes())
    driver = subprocess.Popen([KINETO_SQL, "fleet", str(ranks), "--jobs", "2", "--out", str(tmp_path / "out")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers: list[psutil.Process] = []
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline and driver.poll() is None:
            workers = [c for c in psutil.Process(driver.pid).children() if c.is_running()]
            time.sleep(0.1)
        assert len(workers) >= 2, "the pool never started two workers"
        time.sleep(0.5)  # the initializer has run: the workers are loading ranks
        driver.kill()
        driver.wait(10)
        gone, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == [], f"workers still running after the driver was killed: {[p.pid for p in alive]}"
    finally:
        if driver.poll() is None:
            driver.kill()


def test_ctrl_c_stops_a_runaway_query(tmp_path):
    """The query never ends on its own; SIGINT (what Ctrl-C sends) ends it with one line and exit 130."""
    def reset_sigint():  # a test runner's worker may ignore SIGINT; a shell's foreground job never does
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    proc = subprocess.Popen([KINETO_SQL, "sql", str(SMALL), LOOP_SQL], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=reset_sigint)
    lines = []
    try:
        for raw in proc.stderr:  # progress lines: the query starts right after "loaded"
            lines.append(raw.decode())
            if " loaded " in raw.decode():
                break
        time.sleep(2)
        assert proc.poll() is None, "".join(lines)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert time.monotonic() - t0 < 10
    one_sentence(err, "interrupted (Ctrl-C)")
    assert out == b""


# -- 8. injection -------------------------------------------------------------------------------------------
HOSTILE = "<img src=x onerror=alert(document.domain)>"


def test_markdown_escapes_trace_controlled_strings(tmp_path):
    doc = json.loads(gzip.decompress(SMALL.read_bytes()))
    doc["deviceProperties"] = [{"id": 0, "name": f"{HOSTILE} | GPU", "totalGlobalMem": 1 << 34}]
    text = json.dumps(doc).replace("sync_item.py(28): step", f"{HOSTILE}.py(28): step")
    assert HOSTILE in text
    path = tmp_path / "t`x.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    result = run_cli("diagnose", str(path), "--format", "markdown", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    md = result.stdout.decode()
    assert "<img" not in md and "onerror=alert(document.domain)>" not in md
    escaped = HOSTILE.replace("<", "&lt;").replace(">", "&gt;")
    assert f"Capture: {escaped} \\| GPU" in md  # the device name, shown as text; its | does not split a cell
    assert md.count(f"{escaped}.py(28): step") == 2  # the Python line in the evidence and where, said once
    assert "## ``" in md and "t`x.json.gz" in md  # a backtick in the path does not end its code span


def test_markdown_escapes_every_field_of_a_finding():
    from kineto_sql.diagnose.render_text import md, md_code, render_markdown
    from tests.test_diagnose import _diagnosis_with, _finding

    f = _finding("catalog.a", 500, 25.0, "high")
    from dataclasses import replace

    f = replace(f, title=HOSTILE, evidence=(f"{HOSTILE} a | b",), narration=HOSTILE, fix=HOSTILE, confirming=HOSTILE,
                reproduce=(f"kineto-sql run x '{HOSTILE}```'",))
    out = render_markdown(_diagnosis_with([f]))
    assert "<img" not in out.replace("```", "").split("reproduce")[0]
    assert "a \\| b" in out
    block = out.split("reproduce (each line is one command):")[1]
    assert block.lstrip().startswith("````")  # longer than the ``` inside the command
    assert md("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert md_code("a``b") == "```a``b```"


# -- 9. small ---------------------------------------------------------------------------------------------
UNMATCHED_B = {"traceEvents": [{"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1},
                               {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}


@pytest.mark.parametrize("events", ["unmatched_b", "matched_b_e"])
def test_info_sql_and_diagnose_agree_on_b_events(tmp_path, events):
    doc = json.loads(json.dumps(UNMATCHED_B))
    if events == "matched_b_e":
        doc["traceEvents"].insert(1, {"ph": "E", "pid": 1, "tid": 1, "ts": 3})
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    codes = {name: run_cli(*args).returncode for name, args in {
        "info": ["info", str(path)], "sql": ["sql", str(path), "SELECT count(*) FROM slice"],
        "diagnose": ["diagnose", str(path), "--jobs", "1"]}.items()}
    assert codes == {"info": 0, "sql": 0, "diagnose": 0}
    doc = json.loads(run_cli("info", str(path), "--format", "json").stdout)["result"]["traces"][0]
    assert doc["conserved"] is True and doc["counts"]["slices"] == doc["expected_slices"] == 2


def _rank_dir_with_odd_entries(tmp_path: Path) -> tuple[Path, list[str]]:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    tiny_trace(ranks, "rank0.json.gz", rank=0)
    (ranks / "rank1.json.gz").symlink_to(tmp_path / "gone.json.gz")
    (ranks / "rank2.json.gz").symlink_to(tmp_path)
    os.mkfifo(ranks / "rank3.json")
    Path(os.fsdecode(os.path.join(os.fsencode(ranks), b"rank4\xe9.json.gz"))).write_bytes(
        tiny_trace(tmp_path, "r4.json.gz", rank=4).read_bytes())
    named = [f"{ranks}/rank1.json.gz is a symbolic link to {tmp_path}/gone.json.gz, which does not exist",
             f"{ranks}/rank2.json.gz is a directory", f"{ranks}/rank3.json is a FIFO",
             f"{ranks}/rank4\\xe9.json.gz: the file name is not valid UTF-8"]
    return ranks, named


@pytest.mark.parametrize("command", [["info"], ["fleet", "--parts", "hta"]])
def test_rank_entries_no_load_can_read_are_named(tmp_path, command):
    ranks, named = _rank_dir_with_odd_entries(tmp_path)
    result = run_cli(command[0], str(ranks), *command[1:], timeout=180)
    assert result.returncode == 1
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("error: rank file not loaded: ")]
    for sentence in named:
        assert sum(sentence in ln for ln in errors) == 1, (sentence, errors)


def test_fleet_resume_is_the_same_dataset_however_the_directory_is_spelled(tmp_path, monkeypatch):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for r in range(2):
        tiny_trace(ranks, f"rank{r}.json.gz", rank=r)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fleet"
    first = CliRunner().invoke(cli, ["fleet", "ranks", "--out", str(out), "--parts", "hta", "--format", "json", "--quiet"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["result"]["read"] == 2
    for spelled in ("./ranks/", str(ranks), "ranks"):
        again = CliRunner().invoke(cli, ["fleet", spelled, "--out", str(out), "--parts", "hta", "--format", "json",
                                         "--quiet"])
        assert again.exit_code == 0, again.output
        doc = json.loads(again.stdout)["result"]
        assert (doc["read"], doc["resumed"]) == (0, 2), (spelled, doc["read"], doc["resumed"])


@pytest.mark.parametrize("command", [["diagnose", str(SMALL), "--jobs", "1", "-o"], ["fleet", str(GOLDEN / "traces"), "--out"]])
def test_an_output_name_that_is_not_utf8_is_one_sentence(tmp_path, command):
    target = os.path.join(os.fsencode(tmp_path), b"out\xe9")
    result = run_cli(*command, target)
    assert result.returncode == 2
    one_sentence(result.stderr, "out\\xe9: the file name is not valid UTF-8", "write to a UTF-8")
    assert os.listdir(os.fsencode(tmp_path)) == []


@pytest.mark.parametrize("command", [["diagnose", str(SMALL), "--jobs", "1"], ["sql", str(SMALL), "SELECT 1 AS x"]])
def test_stdout_on_a_full_disk_is_one_sentence_and_not_exit_0(command):
    with open("/dev/full", "wb") as full:
        result = subprocess.run([KINETO_SQL, *command], stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 2
    one_sentence(result.stderr, "cannot write the output: no space left")
