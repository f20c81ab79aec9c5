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
from dataclasses import dataclass
from typing import Callable, Iterator

from kineto_sql.errors import KinetoSqlError

DIED = ("its worker process died before finishing (a crash, or the system ran out of memory); "
        "load it alone to see why")
INSTALL_DASK = "the dask executor needs dask.distributed: pip install 'kineto-sql[fleet]'"


@dataclass(frozen=True, order=True)
class RankFailure:
    path: str
    reason: str

    def sentence(self) -> str:
        return self.reason if self.path in self.reason else f"{self.path}: {self.reason}"


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
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(indices))) as pool:
            futures = {pool.submit(fn, *calls[i]): i for i in indices}
            for future in pool_completed(futures):
                i = futures.pop(future)
                try:
                    yield i, future.result()
                except Exception as exc:  # noqa: BLE001 - each rank's own error, named, the others go on
                    yield i, failure(str(calls[i][0]), exc)


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
        try:
            return Client(self.address, timeout="20s"), True
        except OSError as exc:
            raise KinetoSqlError(f"cannot reach the dask scheduler at {self.address} ({exc}); start it "
                                 "(dask scheduler) or fix --address") from None

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
        return DaskExecutor(address)
    raise KinetoSqlError(f"unknown executor {kind!r}; choose local or dask")
