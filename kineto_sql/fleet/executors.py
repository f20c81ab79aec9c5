"""Where the per-rank tasks run: local worker processes (the default) or a dask.distributed cluster.

Both take `fn(*args)` calls whose first argument is the rank file and yield (index, result) or
(index, RankFailure) as tasks finish, so that one bad rank is named and never sinks the others.

Why dask.distributed (not ray) for the cluster: it installs light from PyPI (pure Python on top of
tornado / msgpack, no 80 MB wheel), a LocalCluster of 2 workers starts in about 2 s on 2 cores where
ray.init spawns a dozen helper processes, and its workers read fsspec URLs (s3://, gs://, ...) the way the
tasks open them. The cluster is driven only through its own API (Client.submit, as_completed); there is no
home-made scheduler here: dask places the tasks, and a worker that dies is the scheduler's KilledWorker.
"""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as pool_completed
from concurrent.futures.process import BrokenProcessPool
import os
import signal
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

from kineto_sql.errors import KinetoSqlError

DIED = ("its worker process died before finishing (a crash, or the system ran out of memory); "
        "load it alone to see why")
INSTALL_DASK = "the dask executor needs dask.distributed: pip install 'kineto-sql[fleet]'"
# How long the driver waits for the scheduler's handshake. dask's own connect timeout covers the TCP connect,
# not a port that accepts and then never speaks dask's protocol (an HTTP server, a dashboard): Client()
# waited there for minutes, so the wait is bounded from outside.
CONNECT_S = 10
DASK_SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")


@dataclass(frozen=True, order=True)
class RankFailure:
    path: str
    reason: str

    def sentence(self) -> str:
        from kineto_sql.inputs import one_line  # a file name with a newline stays on one line

        return one_line(self.reason if self.path in self.reason else f"{self.path}: {self.reason}")


def failure(path: str, exc: BaseException) -> RankFailure:
    """One sentence for one failed rank: its own error, or what became of its worker."""
    if isinstance(exc, KinetoSqlError):
        return RankFailure(path, str(exc))
    if isinstance(exc, BrokenProcessPool) or type(exc).__name__ == "KilledWorker":
        return RankFailure(path, DIED)
    return RankFailure(path, f"failed with {type(exc).__name__}: {exc}")


class LocalExecutor:
    """`jobs` worker processes on this machine (each holds at most one engine at a time).

    `tasks_per_worker`: the calls run in batches of jobs x tasks_per_worker, each batch in a fresh pool, so
    that a worker process lives for at most one batch of ranks. A closed engine does not give all of its memory
    back to the worker process (about 15 MB per 1 MB dlrm rank with wasmtime 50), so a worker that reads
    hundreds of ranks would grow by gigabytes. (Not ProcessPoolExecutor's max_tasks_per_child: on Python
    3.11 the pool stops starting replacement workers and the run hangs.) None: one pool for every call."""

    name = "local"

    def __init__(self, jobs: int = 1, tasks_per_worker: int | None = None):
        self.jobs = max(1, int(jobs))
        self.tasks_per_worker = tasks_per_worker

    def run(self, fn: Callable, calls: list[tuple]) -> Iterator[tuple[int, object]]:
        size = self.jobs * self.tasks_per_worker if self.tasks_per_worker else len(calls)
        for first in range(0, len(calls), max(1, size)):
            yield from self._batch(fn, calls, range(first, min(first + size, len(calls))))

    def _batch(self, fn: Callable, calls: list[tuple], indices: range) -> Iterator[tuple[int, object]]:
        if not indices:
            return
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(indices)), initializer=die_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            futures = {pool.submit(fn, *calls[i]): i for i in indices}
            for future in pool_completed(futures):
                i = futures.pop(future)
                try:
                    yield i, future.result()
                except Exception as exc:  # noqa: BLE001 - each rank's own error, named, the others go on
                    yield i, failure(str(calls[i][0]), exc)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """Runs first in each local worker: the kernel kills the worker when the driver dies (a SIGKILL, an OOM
    kill), so no worker goes on loading ranks for nobody. A worker whose driver died before this ran exits."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pool's own check (a broken pipe) ends it later
        pass
    if os.getppid() != parent:
        os._exit(1)


class DaskExecutor:
    """The tasks on a dask.distributed cluster: an address (tcp://host:8786) or an existing Client.

    Every worker must see the rank files at the same path (shared disk, NFS) or read them by URL (fsspec).
    Results are released as soon as they are fetched, so the scheduler keeps nothing for the driver. Start
    the workers with a memory limit (`dask worker --memory-limit 4GB`, or `--lifetime 1h --lifetime-restart`):
    a worker keeps part of each closed engine's memory (see LocalExecutor), and its nanny restarts it
    at the limit, the scheduler running its tasks again elsewhere."""

    name = "dask"

    def __init__(self, address=None, client=None):
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise KinetoSqlError(INSTALL_DASK) from None
        self.address = address
        self.client = client

    def _client(self):
        from distributed import Client

        if self.client is not None:
            return self.client, False
        _probe(self.address)
        box: dict = {}

        def connect():
            try:
                box["client"] = Client(self.address, timeout=f"{CONNECT_S}s")
            except Exception as exc:  # noqa: BLE001 - said below, in one sentence
                box["error"] = exc

        thread = threading.Thread(target=connect, name="kineto-sql-dask-connect", daemon=True)
        thread.start()
        thread.join(CONNECT_S + 5)
        if thread.is_alive():
            raise KinetoSqlError(f"no dask scheduler answered at {self.address} within {CONNECT_S + 5} s (something "
                                 "listens there, but not a dask scheduler: the dashboard's HTTP port?); give the "
                                 "scheduler's address, tcp://HOST:8786 by default") from None
        if "error" in box:
            exc = box["error"]
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise KinetoSqlError(f"cannot reach the dask scheduler at {self.address} ({text}); start it "
                                 "(dask scheduler) or fix --address") from None
        return box["client"], True

    def run(self, fn: Callable, calls: list[tuple]) -> Iterator[tuple[int, object]]:
        from distributed import as_completed

        if not calls:
            return
        client, owned = self._client()
        try:
            futures = [client.submit(fn, *args, pure=False, retries=0) for args in calls]
            index = {f.key: i for i, f in enumerate(futures)}
            for future in as_completed(futures):
                i = index[future.key]
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 - see LocalExecutor
                    result = failure(str(calls[i][0]), exc)
                future.release()
                futures[i] = None
                yield i, result
        finally:
            if owned:
                client.close()


def executor_for(kind: str = "local", jobs: int = 1, address: str | None = None,
                 tasks_per_worker: int | None = None):
    if kind == "local":
        return LocalExecutor(jobs, tasks_per_worker)
    if kind == "dask":
        if not address:
            raise KinetoSqlError("--executor dask needs --address tcp://SCHEDULER:PORT (the cluster's scheduler)")
        check_address(address)
        return DaskExecutor(address)
    raise KinetoSqlError(f"unknown executor {kind!r}; choose local or dask")


def check_address(address: str) -> None:
    """One sentence for a --address dask cannot use, before any connection is tried."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in DASK_SCHEMES:
        raise KinetoSqlError(f"--address {address}: a dask scheduler speaks tcp:// (or tls://), not {scheme}://; "
                             "give tcp://HOST:PORT (8786 by default; the dashboard's http:// port is not the "
                             "scheduler)")
    host, colon, port = rest.rpartition(":")
    if scheme in ("tcp", "tls") and (not colon or not host or not port.isdigit() or not 0 < int(port) < 65536):
        raise KinetoSqlError(f"--address {address} has no host and port; give tcp://HOST:PORT (the scheduler's "
                             "port is 8786 by default)")
    if scheme == "tls":
        import dask

        tls = dask.config.get("distributed.comm.tls", default={}) or {}
        client = tls.get("client", {}) or {}
        if not (tls.get("ca-file") and client.get("cert")):
            raise KinetoSqlError(f"--address {address}: tls:// needs the cluster's certificates in dask's "
                                 "configuration (distributed.comm.tls.ca-file, .client.cert and .client.key, e.g. "
                                 "in ~/.config/dask/distributed.yaml); set them, or use tcp://")


def _probe(address: str) -> None:
    """A closed port or an unknown host, said at once (dask retries them until its timeout)."""
    import socket

    scheme, sep, rest = address.partition("://")
    if sep and scheme not in ("tcp", "tls"):
        return
    host, _, port = (rest if sep else address).rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S).close()
    except socket.gaierror:
        raise KinetoSqlError(f"--address {address}: the host {host} is not known; check the scheduler's name") \
            from None
    except OSError as exc:
        raise KinetoSqlError(f"cannot reach the dask scheduler at {address} ({exc.strerror or exc}); start it "
                             "(dask scheduler) or fix --address") from None
