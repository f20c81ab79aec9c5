"""`KinetoTraceProcessor`: perfetto's `TraceProcessor`, backed by the embedded wasm engine or a native shell.

It has the same shape as `perfetto.trace_processor.TraceProcessor` (`.query(sql)` returns perfetto's
QueryResultIterator, `.as_pandas_dataframe()` on it, context manager), because it *is* one: only the
backend differs.
"""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from pathlib import Path

from kineto_sql.engine.perfetto_client import PerfettoException, TraceProcessor, TraceProcessorConfig
from kineto_sql.engine.rpc_backend import WasmRpcBackend
from kineto_sql.engine.wasm_runtime import find_build
from kineto_sql.errors import EngineError, QueryError
from kineto_sql.engine.rows import Columns, Rows

# The 32-bit heap tops out at 4 GiB and ingest needs about 3x the JSON size.
from kineto_sql.engine.memory import MEMORY64_ABOVE_BYTES, TP_SHELL_ENV  # noqa: E402 (defined there: the loader's child reads them without this module)


@dataclass(frozen=True)
class EngineChoice:
    """Which engine runs the SQL: `wasm` (embedded, default), `wasm64` (memory64 build) or `native`;
    and whether a load that loses events may go on (`allow_loss`, the CLI's --allow-loss)."""

    kind: str = "auto"
    tp_shell: str | None = None
    allow_loss: bool = False

    def resolve(self, input_bytes: int) -> "EngineChoice":
        shell = self.tp_shell or os.environ.get(TP_SHELL_ENV)
        if self.kind == "native" or (self.kind == "auto" and shell):
            if not shell:
                raise EngineError(f"the native engine needs a trace_processor_shell: pass --tp-shell PATH or set {TP_SHELL_ENV}")
            if not Path(shell).exists():
                raise EngineError(f"{shell}: no trace_processor_shell there; fix --tp-shell / {TP_SHELL_ENV}")
            return replace(self, kind="native", tp_shell=shell)
        if self.kind in ("wasm", "wasm64"):
            return self
        return replace(self, kind="wasm64" if input_bytes > MEMORY64_ABOVE_BYTES else "wasm")


_WHERE = re.compile(r'File "(?P<file>[^"]+)" line (?P<line>\d+) col (?P<col>\d+)')


def _one_sentence(message: str) -> str:
    """Perfetto's SQL errors come as a multi-line 'Traceback'; keep the cause and the innermost location."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return "the query failed without a message"
    cause = lines[-1]
    places = list(_WHERE.finditer(message))
    if places:
        where = places[-1]
        source = "" if where["file"] == "stdin" else f"{where['file']} "
        return f"{cause} (at {source}line {where['line']} col {where['col']})"
    return cause

if TYPE_CHECKING:
    from kineto_sql.loading.loaded import LoadedTrace


class KinetoTraceProcessor(TraceProcessor):
    """A perfetto TraceProcessor whose backend is chosen by `EngineChoice`; loads prepared bytes.

    `loaded` is what the load produced (kineto_sql.loading.loaded.LoadedTrace), attached once by
    `open_trace`; `path`, `report`, `trace_metadata` and `rank` read it. `cache` holds facts the runner
    derives once per trace (its kineto_capabilities rows, its device model)."""

    loaded: "LoadedTrace | None"
    cache: dict[str, object]

    def __init__(self, choice: EngineChoice, sql_package: tuple[str, dict[str, str]] | None = None,
                 sql_package_dir: Path | None = None):
        self.choice = choice
        self.loaded = None
        self.cache = {}
        self._package = sql_package
        if choice.kind == "native":
            packages = [str(sql_package_dir)] if sql_package_dir else None
            config = TraceProcessorConfig(bin_path=choice.tp_shell, add_sql_packages=packages)
        else:
            config = TraceProcessorConfig()
        self._closed = False
        super().__init__(trace=None, config=config)

    def _create_backend(self, remote, addr):
        if self.choice.kind == "native":
            return super()._create_backend(remote, addr)
        return WasmRpcBackend(find_build(self.choice.kind == "wasm64"))

    def load_bytes(self, data: bytes) -> None:
        """Ingests a whole trace (append + finalize) and registers our SQL package."""
        self.load_chunks((data,))

    def load_chunks(self, chunks) -> None:
        """Ingests a trace given as consecutive pieces of its bytes (any split), then finalizes; the
        wasm engine takes each piece as it comes, so the caller can write the next one meanwhile."""
        try:
            if self.choice.kind == "native":
                self._parse_trace(io.BytesIO(b"".join(chunks)))
            else:
                for chunk in chunks:
                    result = self._backend.parse(chunk)
                    if result is not None and result.error:
                        raise EngineError(f"the trace processor refused the trace: {result.error}")
                self._backend.notify_eof()
                if self._package:
                    self._backend.register_sql_package(*self._package)
        except PerfettoException as exc:
            raise EngineError(f"the trace processor refused the trace: {exc}") from None

    def query(self, sql: str):
        try:
            return super().query(sql)
        except PerfettoException as exc:
            raise QueryError(_one_sentence(str(exc))) from None

    def df(self, sql: str):
        """The rows of `sql` as a pandas DataFrame."""
        return self.rows(sql).to_pandas()

    def rows(self, sql: str) -> Rows:
        """The rows of `sql` as plain Python lists (kineto_sql.engine.rows: no pandas)."""
        return Rows.of_result(self.query(sql))

    def columns(self, sql: str) -> Columns:
        """The result of `sql` column by column (kineto_sql.engine.rows.Columns: for large results)."""
        return Columns.of_result(self.query(sql))

    def attach(self, loaded: "LoadedTrace") -> None:
        if self.loaded is not None:
            raise RuntimeError("this processor already holds a loaded trace")
        self.loaded = loaded

    def _loaded(self) -> "LoadedTrace":
        if self.loaded is None:
            raise RuntimeError("no trace loaded through open_trace in this processor")
        return self.loaded

    @property
    def path(self) -> Path:
        return self._loaded().path

    @property
    def report(self):
        return self._loaded().report

    @property
    def trace_metadata(self) -> dict:
        return self._loaded().metadata

    @property
    def rank(self) -> int | None:
        return self._loaded().rank

    @property
    def heap_bytes(self) -> int | None:
        return getattr(self._backend, "heap_bytes", None)

    def close(self):
        if getattr(self, "_closed", True):
            return
        self._closed = True
        backend = getattr(self, "_backend", None)
        if backend is not None:
            try:
                backend.close()
            except Exception:
                pass
