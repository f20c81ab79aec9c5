"""perfetto's own RPC client (`TraceProcessorRpc`) over the in-process wasm, completed with what it lacks.

perfetto 0.59's client only implements `execute_query`; loading a trace (append / finalize) and
registering SQL packages are added here over the same protocol, so there is one client, not two.
"""
from __future__ import annotations

from kineto_sql.engine.perfetto_client import PerfettoException
from perfetto.trace_processor.platform import PlatformDelegate
from perfetto.trace_processor.protos import ProtoFactory
from perfetto.trace_processor.rpc import TraceProcessorRpc

from kineto_sql.engine.wasm_runtime import WasmBuild, WasmTraceProcessorInstance
from kineto_sql.errors import EngineError

PROTOS = ProtoFactory(PlatformDelegate())
APPEND_CHUNK = 16 << 20


class WasmTransport:
    """The `send / read / close` transport TraceProcessorRpc expects, over a synchronous wasm instance.

    A request runs to completion inside `send`, so every reply byte is buffered before `read` is called.
    """

    def __init__(self, instance: WasmTraceProcessorInstance):
        self.instance = instance
        self._buf = b""
        self._pos = 0

    def send(self, data: bytes) -> None:
        reply = self.instance.request(data)
        rest = self._buf[self._pos:]
        self._buf = rest + reply if rest else reply
        self._pos = 0

    def read(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buf):
            raise ConnectionError("the trace processor sent a truncated reply")
        out = self._buf[self._pos:end]
        self._pos = end
        return out

    def close(self) -> None:
        self._buf = b""
        self._pos = 0
        self.instance.close()


class WasmRpcBackend(TraceProcessorRpc):
    """A TraceProcessorBackend for perfetto's `TraceProcessor`, answering from the embedded wasm engine."""

    def __init__(self, build: WasmBuild):
        self.instance = WasmTraceProcessorInstance(build)
        super().__init__(WasmTransport(self.instance), PROTOS)

    def _call(self, request):
        stream = self.protos.TraceProcessorRpcStream()
        stream.msg.append(request)
        self.transport.send(stream.SerializeToString())
        message = self.protos.TraceProcessorRpc()
        message.MergeFromString(self._read_payload())
        self._check_envelope(message)
        return message

    def parse(self, chunk: bytes):
        rpc = self.protos.TraceProcessorRpc
        result = None
        for start in range(0, len(chunk), APPEND_CHUNK):
            self.instance.fed(min(APPEND_CHUNK, len(chunk) - start))
            reply = self._call(rpc(request=rpc.TPM_APPEND_TRACE_DATA, append_trace_data=chunk[start:start + APPEND_CHUNK]))
            result = reply.append_result
            if result.error:
                return result
        return result if result is not None else self.protos.TraceProcessorRpc().append_result

    def notify_eof(self):
        self.instance.ending()
        rpc = self.protos.TraceProcessorRpc
        reply = self._call(rpc(request=rpc.TPM_FINALIZE_TRACE_DATA))
        if reply.finalize_data_result.error:
            raise PerfettoException(reply.finalize_data_result.error)

    def register_sql_package(self, package: str, modules: dict[str, str]) -> None:
        rpc = self.protos.TraceProcessorRpc
        request = rpc(request=rpc.TPM_REGISTER_SQL_PACKAGE)
        args = request.register_sql_package_args
        args.package_name = package
        args.allow_override = True
        for name, sql in modules.items():
            module = args.modules.add()
            module.name = name
            module.sql = sql
        reply = self._call(request)
        if reply.register_sql_package_result.error:
            raise EngineError(f"registering SQL package {package!r} failed: {reply.register_sql_package_result.error}")

    def status(self) -> str:
        rpc = self.protos.TraceProcessorRpc
        return self._call(rpc(request=rpc.TPM_GET_STATUS)).status.human_readable_version

    @property
    def heap_bytes(self) -> int:
        return self.instance.heap_bytes
