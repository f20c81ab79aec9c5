"""Under an address-space cap the loader refuses with the need and the cap, never a traceback or a signal."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kineto_sql.engine import memory
from kineto_sql.errors import EngineError

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "golden" / "traces" / "guide_matmul_size_fixed.json.gz"
GIB = 1 << 30
KINETO_SQL = str(Path(sys.executable).parent / "kineto-sql")
needs_prlimit = pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")


def _kineto_sql(prefix: list[str], *args: str) -> subprocess.CompletedProcess:
    command = prefix + [KINETO_SQL, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@needs_prlimit
def test_capped_below_the_engine_reservation_refuses_in_one_sentence():
    done = _kineto_sql(["prlimit", f"--as={3 * GIB}"], "info", str(SMALL))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("kineto-sql: [")]
    assert len(lines) == 1
    assert lines[0].startswith("error: loading ") and "needs about 4." in lines[0]
    assert "capped at 3.0 GiB (ulimit -v / prlimit --as)" in lines[0]


def test_ulimit_v_in_a_shell_is_the_same_cap():
    done = subprocess.run(["bash", "-c", f"ulimit -v {3 * 1024 * 1024}; exec {KINETO_SQL} info {SMALL}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "capped at 3.0 GiB" in done.stderr and "Traceback" not in done.stderr


@needs_prlimit
def test_a_cap_with_room_loads():
    done = _kineto_sql(["prlimit", f"--as={8 * GIB}"], "info", str(SMALL), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert '"conserved": true' in done.stdout


def test_the_memory64_engine_on_a_large_trace_under_20_gb(monkeypatch):
    """The issue's case: a 1.25 GB trace under `ulimit -v 20000000` segfaulted; now it is refused up front."""
    monkeypatch.setattr(memory, "address_space_cap", lambda: 20_000_000 * 1024)
    monkeypatch.setattr(memory, "_vm_size", lambda: 300_000_000)
    with pytest.raises(EngineError, match=r"1\.25 GB of JSON\) needs about 19\.4 GiB .* capped at 19\.1 GiB"):
        memory.check(1_250_000_000, memory64=True)
    memory.check(1_250_000_000 // 4, memory64=False)  # 312 MB in the 32-bit engine: 5.8 GiB, fits


def test_estimate_model():
    small = memory.estimate(100_000_000, memory64=False)
    assert small.address_space - memory._vm_size() == pytest.approx(5 * 100_000_000 + 0x104000000, rel=0.01)
    big = memory.estimate(2 * 10**9, memory64=True)
    assert big.address_space - memory._vm_size() == pytest.approx(10e9 + 16e9 + 4 * GIB, rel=0.01)


def test_a_cgroup_v1_limit_is_a_cap(monkeypatch, tmp_path):
    group = tmp_path / "memory" / "job"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(str(2 * GIB))
    (group / "memory.usage_in_bytes").write_text(str(GIB))
    real_path = memory.Path

    def fake_path(p, *rest):
        text = str(p)
        if text == "/proc/self/cgroup":
            cgroup = tmp_path / "cgroup"
            cgroup.write_text("4:memory:/job\n0::/\n")
            return cgroup
        return real_path(text.replace("/sys/fs/cgroup", str(tmp_path)), *rest)

    monkeypatch.setattr(memory, "Path", fake_path)
    monkeypatch.setattr(memory, "_rss", lambda: 0)
    monkeypatch.setattr(memory, "_available", lambda: None)
    monkeypatch.setattr(memory, "address_space_cap", lambda: None)
    room, what = memory.memory_cap()
    assert room == GIB and what.endswith("memory.limit_in_bytes)")
    with pytest.raises(EngineError, match=r"needs about 1\.5 GiB of memory but the cgroup memory limit .* allows 1\.0 GiB"):
        memory.check(300_000_000, memory64=False)  # 100 MB + 5.0 x 300 MB in one process
    memory.check(190_000_000, memory64=False)  # 100 MB + 950 MB = 0.98 GiB: fits


@needs_prlimit
def test_a_gzip_bomb_is_refused_while_it_inflates(tmp_path):
    """A 3 MB file of repeated gzip members that inflates to 600 MB: under a 6 GiB cap the load is refused
    once the inflated bytes so far would not fit (memory.check on every INFLATE_BLOCK), long before the end."""
    import gzip
    import re

    member = gzip.compress(b" " * (1 << 20), compresslevel=9)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents":[') + member * 600
                     + gzip.compress(b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}'))
    assert bomb.stat().st_size < 3_000_000
    done = _kineto_sql(["prlimit", f"--as={6 * GIB}"], "info", str(bomb))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("kineto-sql: [")]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    found = re.search(r"\(inflating it\) \(([\d.]+) MB of JSON\) needs about [\d.]+ GiB .* capped at 6\.0 GiB", lines[0])
    assert found and float(found.group(1)) < 600, lines[0]  # refused with the need and the cap, before the end


def test_a_corrupt_or_truncated_gzip_is_one_sentence_with_the_check_too(tmp_path):
    from kineto_sql.errors import TraceInputError
    from kineto_sql.loading.source import read_bytes

    whole = __import__("gzip").compress(b'{"traceEvents": []}')
    for name, data in (("cut", whole[:-12]), ("tail", whole + b"junk")):
        path = tmp_path / f"{name}.json.gz"
        path.write_bytes(data)
        with pytest.raises(TraceInputError, match="corrupt or truncated gzip file"):
            read_bytes(path, check=lambda size: None)
    path = tmp_path / "ok.json.gz"
    path.write_bytes(whole + __import__("gzip").compress(b" "))
    assert read_bytes(path, check=lambda size: None) == b'{"traceEvents": []} '
