"""The load's memory model: measured factors, checked once before the decode, against every memory limit
(KINETO_SQL_MEMORY_LIMIT, a cgroup's, the machine's available memory); gzip bombs of every shape refused
while they inflate, under a low limit (never a real 20 GB inflate here: bench/bombs.py does that)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kineto_sql.engine import memory
from kineto_sql.errors import EngineError
from kineto_sql.loading import load
from tests.gzip_bombs import KINDS, build

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "golden" / "traces" / "guide_matmul_size_fixed.json.gz"
GIB = 1 << 30
KINETO_SQL = str(Path(sys.executable).parent / "kineto-sql")


@pytest.fixture
def only(monkeypatch):
    """Makes the given (room, what) the only memory limit, with nothing held now and no address-space cap."""
    def set_limit(room, what="the cgroup memory limit (/sys/fs/cgroup/job/memory.max)"):
        monkeypatch.setattr(memory, "_cgroup_limit", lambda: None if room is None else (room, what))
        monkeypatch.setattr(memory, "_available", lambda: None)
        monkeypatch.delenv(memory.LIMIT_ENV, raising=False)
        monkeypatch.setattr(memory, "_rss", lambda: 0)
        monkeypatch.setattr(memory, "address_space_cap", lambda: None)
    return set_limit


def _sentence(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("kineto-sql: [")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_the_resident_need_is_the_measured_factor_per_byte_of_json(monkeypatch, only):
    only(None)
    json_bytes = 100_000_000  # plus the processes' own: 100 MB in one process, 150 MB in two
    assert memory.estimate(json_bytes, memory64=False, processes=1).resident == 600_000_000
    assert memory.estimate(json_bytes, memory64=False, processes=2).resident == 700_000_000
    # the decode's peak, not the engine's, sets it: the same with the memory64 engine (which moves its heap)
    assert memory.estimate(2 * 10**9, memory64=True, processes=2).resident == 11_150_000_000
    assert memory.estimate(2 * 10**9, memory64=False, processes=2).resident == 11_150_000_000
    # a process already larger than the base counts what it holds, less the JSON in hand (in the factor)
    monkeypatch.setattr(memory, "_rss", lambda: 400_000_000)
    assert memory.estimate(json_bytes, memory64=False, processes=2).resident == 850_000_000


def test_at_the_limit_loads_and_one_byte_under_it_is_refused(only):
    json_bytes = 100_000_000
    only(700_000_000)
    memory.check(json_bytes, memory64=False, processes=2)  # need == room: fits
    only(700_000_000 - 1)
    with pytest.raises(EngineError, match=r"\(100\.0 MB of JSON\) needs about 668 MiB of memory but the cgroup "
                                          r"memory limit \(/sys/fs/cgroup/job/memory\.max\) allows 667 MiB"):
        memory.check(json_bytes, memory64=False, processes=2)


def test_a_1_14_gb_trace_fits_a_9_gib_cgroup(only):
    """The case the old model refused ("needs about 9.6 GiB ... allows 5.8 GiB"): 1.14 GB of JSON peaking
    at 3.9 GB, under a 9 GiB limit with 0.35 GiB in use when the child checks, before its decode."""
    json_bytes = 1_140_000_000
    room = 9 * GIB - int(0.35 * GIB)
    only(room)
    memory.check(json_bytes, memory64=True, processes=2)
    need = memory.estimate(json_bytes, memory64=True, processes=2).resident
    assert 3.9e9 < need < room  # above the measured peak (it errs high), below the limit
    assert 2 * 4.5 * json_bytes > room  # what counting the decode twice asked for


def test_the_engine_process_does_not_count_the_childs_decode_again(monkeypatch):
    """With --jobs 2 the child checks the memory of the whole load before it decodes; by the time the
    engine's process learns the size the child's decode is in use, so a second check there would count it
    twice. Simulated: a cgroup that has no room left as the engine's process sees it, and room in the child."""
    parent = os.getpid()
    monkeypatch.setattr(memory, "_cgroup_limit",
                        lambda: (0 if os.getpid() == parent else 8 * GIB, "the cgroup memory limit (test)"))
    monkeypatch.setattr(memory, "_available", lambda: None)
    monkeypatch.delenv(memory.LIMIT_ENV, raising=False)
    with load.open_trace(SMALL, jobs=2) as tp:
        assert tp.loaded.report.expected_slices > 0
    # in one process the same view refuses: the check is live there, before the decode
    with pytest.raises(EngineError, match=r"needs about .* of memory but the cgroup memory limit \(test\) allows 0 MiB"):
        load.open_trace(SMALL, jobs=1)


@pytest.mark.parametrize(("text", "size"), [("8G", 8 * GIB), ("1500M", 1500 << 20), ("123456", 123456),
                                            ("2.5GiB", int(2.5 * GIB)), ("512k", 512 << 10)])
def test_the_setting_reads_sizes(monkeypatch, text, size):
    monkeypatch.setenv(memory.LIMIT_ENV, text)
    assert memory._setting_limit() == (size, memory.LIMIT_ENV)


def test_a_bad_setting_is_one_sentence(monkeypatch):
    monkeypatch.setenv(memory.LIMIT_ENV, "lots")
    with pytest.raises(EngineError, match=r"KINETO_SQL_MEMORY_LIMIT='lots' is not a size; write bytes or a size such as 8G"):
        memory.memory_cap()


def test_the_machines_available_memory_is_a_limit(monkeypatch, only):
    only(None)
    monkeypatch.setattr(memory, "_available", lambda: (2 * GIB, memory.MACHINE))
    with pytest.raises(EngineError, match=r"\(1\.00 GB of JSON\) needs about 5\.3 GiB of memory but this machine has "
                                          r"2\.0 GiB available; free memory, load it on a larger machine "
                                          r"or load a shorter capture \(KINETO_SQL_MEMORY_LIMIT=SIZE replaces this check\)"):
        memory.check(10**9, memory64=False, processes=2)


def test_the_real_available_memory_is_read():
    room, what = memory._available()
    assert what == memory.MACHINE and 0 < room < os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") + 4 * GIB


def test_the_tightest_limit_wins(monkeypatch):
    monkeypatch.setattr(memory, "_cgroup_limit", lambda: (6 * GIB, "the cgroup memory limit (x)"))
    monkeypatch.setattr(memory, "_available", lambda: (5 * GIB, memory.MACHINE))
    monkeypatch.delenv(memory.LIMIT_ENV, raising=False)
    assert memory.memory_cap() == (5 * GIB, memory.MACHINE)
    monkeypatch.setenv(memory.LIMIT_ENV, "4G")
    assert memory.memory_cap() == (4 * GIB, memory.LIMIT_ENV)
    # the setting replaces the machine's available memory, never the cgroup's limit
    monkeypatch.setenv(memory.LIMIT_ENV, "7G")
    assert memory.memory_cap() == (6 * GIB, "the cgroup memory limit (x)")
    monkeypatch.setattr(memory, "_cgroup_limit", lambda: None)
    assert memory.memory_cap() == (7 * GIB, memory.LIMIT_ENV)


def _run(*args: str, limit: str | None = "1G", cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(memory.LIMIT_ENV, None)
    if limit:
        env[memory.LIMIT_ENV] = limit
    return subprocess.run([KINETO_SQL, *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def test_the_cli_under_the_setting_refuses_with_the_need_and_loads_with_room():
    done = _run("info", str(SMALL), limit="50M")
    assert done.returncode == 2
    assert re.fullmatch(r"error: loading \S+ \(inflating it\) \([\d.]+ MB of JSON\) needs about \d+ MiB of memory "
                        r"but KINETO_SQL_MEMORY_LIMIT allows 50 MiB; raise the limit, or load a shorter capture",
                        _sentence(done.stderr)), done.stderr
    done = _run("info", str(SMALL), "--format", "json", limit="4G")
    assert done.returncode == 0 and '"conserved": true' in done.stdout, done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_gzip_bomb_is_refused_while_it_inflates(tmp_path, kind):
    """Each shape inflates to 500-800 MB from at most 2.5 MB; under a 1 GiB limit the load is refused once the bytes
    inflated so far would need more (5.5x each, plus what the processes hold), long before the end."""
    bomb = tmp_path / f"{kind}.json.gz"
    inflated = build(kind, 800, bomb)
    assert bomb.stat().st_size < 2_500_000 and inflated > 500_000_000
    done = _run("info", str(bomb), limit="1G")
    assert done.returncode == 2
    found = re.fullmatch(r"error: loading \S+ \(inflating it\) \(([\d.]+) MB of JSON\) needs about 1\.\d GiB of memory "
                         r"but KINETO_SQL_MEMORY_LIMIT allows 1\.0 GiB; raise the limit, or load a shorter capture",
                         _sentence(done.stderr))
    assert found, done.stderr
    assert 32 <= float(found.group(1)) < 0.5 * inflated / 1e6  # some 32 MiB blocks, far from the whole


def test_a_bomb_under_diagnose_jobs_1_is_refused_and_writes_nothing(tmp_path):
    bomb = tmp_path / "whitespace.json.gz"
    build("whitespace", 400, bomb)
    out = tmp_path / "report.json"
    done = _run("diagnose", str(bomb), "--jobs", "1", "--format", "json", "-o", str(out), limit="1G")
    assert done.returncode == 2
    assert "(inflating it)" in _sentence(done.stderr) and "allows 1.0 GiB" in done.stderr
    assert list(tmp_path.iterdir()) == [bomb]


def test_deeply_nested_args_are_one_sentence_without_a_limit(tmp_path):
    bomb = tmp_path / "nested.json.gz"
    build("nested", 4, bomb)
    done = _run("info", str(bomb), limit=None)
    assert done.returncode == 2
    assert _sentence(done.stderr) == (f"error: {bomb} is not valid JSON as read here: it nests deeper than a JSON "
                                      "reader goes; re-export the trace from torch.profiler")


def test_a_4_gb_trace_over_the_limit_is_refused_before_it_is_read(tmp_path):
    """A 4 GB plain JSON file under a 12 GiB limit: the model's need (5.5x) is refused from the file's size,
    before a byte of it is read into memory (a sparse file: only its first bytes are on disk)."""
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.write(b'{"traceEvents":[')
        f.truncate(4 * 10**9)
    env = {k: v for k, v in os.environ.items() if k != memory.LIMIT_ENV}
    env[memory.LIMIT_ENV] = "12G"
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(done.returncode); "
             "sys.stdout.write(done.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, KINETO_SQL, "info", str(big)], capture_output=True, text=True,
                          timeout=300, env=env)
    max_rss_kb, code, *stderr = done.stdout.splitlines()
    assert int(code) == 2
    assert _sentence("\n".join(stderr)) == (
        f"error: loading {big} (4.00 GB of JSON) needs about 20.7 GiB of memory but KINETO_SQL_MEMORY_LIMIT allows "
        "12.0 GiB; raise the limit, or load a shorter capture")
    assert int(max_rss_kb) < 1_000_000  # no process of the load read the 4 GB
