"""A small typed builder of tiny Kineto traces, for exact-row unit tests of the queries: the traces of a
rule's `[[case]]`s (kineto_sql/catalog/cases.py), built the same way for `kineto-sql test` and the project's
own tests, so a user's rule directory runs its cases without this repository's tests/.

Each event is a frozen dataclass in microseconds, as Kineto writes them; `KinetoTrace.to_json()` lays
them out the way libkineto's output_json.cpp does (X events with `cat`/`args`, kernels on pid=device /
tid=stream, ac2g flow pairs joining a launch to its kernel, `[memory]` instants, process and thread name
metadata). Like Perfetto's test/synth_common.py, but for Kineto JSON.

    trace = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::mm", ts_us=10, dur_us=100),
        Launch(correlation=1, ts_us=20, dur_us=8),
        Kernel(correlation=1, ts_us=50, dur_us=30),
    ])
    path = trace.write(tmp_path)
"""
from __future__ import annotations

import gzip
import json
from dataclasses import MISSING as dc_MISSING
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from pathlib import Path

from kineto_sql.errors import QueryError

HOST_PID = 100
HOST_TID = 1


@dataclass(frozen=True)
class CpuOp:
    """A host-side op (cat cpu_op) or, with cat="user_annotation", a record_function range."""

    name: str
    ts_us: float
    dur_us: float
    tid: int = HOST_TID
    pid: int = HOST_PID
    cat: str = "cpu_op"
    external_id: int | None = None
    args: dict = field(default_factory=dict)

    def events(self, trace: "KinetoTrace") -> list[dict]:
        args = dict(self.args)
        if self.external_id is not None:
            args["External id"] = self.external_id
        return [_x(self.name, self.cat, self.pid, self.tid, self.ts_us, self.dur_us, args)]


@dataclass(frozen=True)
class PythonFrame:
    """A with_stack python_function frame, e.g. `model.py(12): forward`."""

    name: str
    ts_us: float
    dur_us: float
    tid: int = HOST_TID
    pid: int = HOST_PID

    def events(self, trace: "KinetoTrace") -> list[dict]:
        return [_x(self.name, "python_function", self.pid, self.tid, self.ts_us, self.dur_us, {})]


@dataclass(frozen=True)
class ProfilerStep:
    """The CPU-side ProfilerStep#N range; `gpu_copy` adds Kineto's duplicate on a GPU stream."""

    step: int
    ts_us: float
    dur_us: float
    tid: int = HOST_TID
    pid: int = HOST_PID
    gpu_copy: bool = False
    device: int = 0
    stream: int = 7

    def events(self, trace: "KinetoTrace") -> list[dict]:
        name = f"ProfilerStep#{self.step}"
        out = [_x(name, "user_annotation", self.pid, self.tid, self.ts_us, self.dur_us, {})]
        if self.gpu_copy:
            out.append(_x(name, "gpu_user_annotation", self.device, self.stream, self.ts_us, self.dur_us,
                          {"device": self.device, "stream": self.stream}))
        return out


@dataclass(frozen=True)
class Launch:
    """A runtime call (cat cuda_runtime) carrying `correlation`; an ac2g flow starts here when a Kernel
    with the same correlation exists and `flow` is true."""

    correlation: int
    ts_us: float
    dur_us: float
    name: str = "cudaLaunchKernel"
    tid: int = HOST_TID
    pid: int = HOST_PID
    cat: str = "cuda_runtime"
    flow: bool = True

    def events(self, trace: "KinetoTrace") -> list[dict]:
        out = [_x(self.name, self.cat, self.pid, self.tid, self.ts_us, self.dur_us,
                  {"correlation": self.correlation, "cbid": 211})]
        if self.flow and any(isinstance(e, Kernel) and e.correlation == self.correlation for e in trace.events):
            out.append({"ph": "s", "id": self.correlation, "pid": self.pid, "tid": self.tid,
                        "ts": _us(self.ts_us), "cat": "ac2g", "name": "ac2g"})
        return out


@dataclass(frozen=True)
class Kernel:
    """A device activity on pid=device, tid=stream: cat kernel, gpu_memcpy or gpu_memset."""

    correlation: int
    ts_us: float
    dur_us: float
    name: str = "void at::native::vectorized_elementwise_kernel<4>()"
    device: int = 0
    stream: int = 7
    cat: str = "kernel"
    # Extra args (e.g. NCCL's `Collective name`, `In msg nelems`), added to device/stream/correlation.
    args: dict = field(default_factory=dict)

    def events(self, trace: "KinetoTrace") -> list[dict]:
        out = [_x(self.name, self.cat, self.device, self.stream, self.ts_us, self.dur_us,
                  {"device": self.device, "stream": self.stream, "correlation": self.correlation, **self.args})]
        launch = next((e for e in trace.events if isinstance(e, Launch) and e.correlation == self.correlation), None)
        if launch is not None and launch.flow:
            out.append({"ph": "f", "id": self.correlation, "pid": self.device, "tid": self.stream,
                        "ts": _us(self.ts_us), "cat": "ac2g", "name": "ac2g", "bp": "e"})
        return out


@dataclass(frozen=True)
class MemoryEvent:
    """A profile_memory `[memory]` instant: bytes > 0 allocates, < 0 frees."""

    ts_us: float
    bytes: int
    total_allocated: int
    total_reserved: int
    device_type: int = 1
    device_id: int = 0
    tid: int = HOST_TID
    pid: int = HOST_PID

    def events(self, trace: "KinetoTrace") -> list[dict]:
        return [{"ph": "i", "s": "t", "name": "[memory]", "cat": "cpu_instant_event", "pid": self.pid,
                 "tid": self.tid, "ts": _us(self.ts_us),
                 "args": {"Total Reserved": self.total_reserved, "Total Allocated": self.total_allocated,
                          "Bytes": self.bytes, "Device Id": self.device_id, "Device Type": self.device_type,
                          "Addr": 1000 + int(self.ts_us)}}]


Event = CpuOp | PythonFrame | ProfilerStep | Launch | Kernel | MemoryEvent


@dataclass
class KinetoTrace:
    """A list of events plus top-level keys (e.g. distributedInfo)."""

    events: list = field(default_factory=list)
    metadata: dict = field(default_factory=dict)

    def add(self, *events) -> "KinetoTrace":
        self.events.extend(events)
        return self

    def to_json(self) -> dict:
        trace_events: list[dict] = []
        hosts, devices = set(), set()
        for event in self.events:
            trace_events.extend(event.events(self))
            if isinstance(event, Kernel):
                devices.add((event.device, event.stream))
            elif isinstance(event, ProfilerStep) and event.gpu_copy:
                devices.add((event.device, event.stream))
            else:
                hosts.add((event.pid, event.tid))
        meta = []
        for pid, tid in sorted(hosts):
            meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}})
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}})
        for device, stream in sorted(devices):
            meta.append({"ph": "M", "name": "process_name", "pid": device, "tid": 0, "args": {"name": f"GPU {device}"}})
            meta.append({"ph": "M", "name": "thread_name", "pid": device, "tid": stream,
                         "args": {"name": f"stream {stream}"}})
        return {"schemaVersion": 1, "deviceProperties": [], **self.metadata,
                "traceEvents": meta + trace_events, "displayTimeUnit": "ms"}

    def write(self, directory: Path, name: str = "trace.json.gz") -> Path:
        path = Path(directory) / name
        with gzip.open(path, "wt") as f:
            json.dump(self.to_json(), f)
        return path


def _us(value: float) -> float:
    return round(float(value), 3)


def _x(name, cat, pid, tid, ts_us, dur_us, args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": _us(ts_us), "dur": _us(dur_us),
            "args": args}


EVENT_TYPES = {cls.__name__: cls for cls in (CpuOp, PythonFrame, ProfilerStep, Launch, Kernel, MemoryEvent)}


def from_case(events: list[dict], metadata: dict | None = None) -> KinetoTrace:
    """The trace of a rule test case (`queries/kineto/<area>/<name>.test.toml`): one inline table per
    event, `type` naming the class above; `repeat = N, every_us = D` makes N copies D us apart, with `{i}`
    in their strings replaced by 0..N-1."""
    trace = KinetoTrace(metadata=dict(metadata or {}))
    for number, raw in enumerate(events, start=1):
        fields = dict(raw)
        kind = fields.pop("type", None)
        cls = EVENT_TYPES.get(kind)
        if cls is None:
            raise QueryError(f"event {number}: type {kind!r} is not one of {', '.join(EVENT_TYPES)}")
        known = {f.name for f in dc_fields(cls)}
        unknown = sorted(set(fields) - known - {"repeat", "every_us"})
        if unknown:
            raise QueryError(f"event {number} ({kind}): unknown field(s) {', '.join(unknown)}; "
                             f"{kind} takes {', '.join(sorted(known))}")
        repeat = int(fields.pop("repeat", 1))
        every = float(fields.pop("every_us", 0.0))
        for i in range(repeat):
            values = {k: (v.replace("{i}", str(i)) if isinstance(v, str) and repeat > 1 else v)
                      for k, v in fields.items()}
            if "ts_us" in values:
                values["ts_us"] = values["ts_us"] + every * i
            try:
                trace.add(cls(**values))
            except TypeError as exc:  # a required field missing
                raise QueryError(f"event {number} ({kind}): {exc}") from None
    return trace


def to_case(trace: KinetoTrace) -> list[dict]:
    """The inverse of from_case: events as inline tables (defaults left out), runs compressed."""
    plain = []
    for event in trace.events:
        row = {"type": type(event).__name__}
        for f in dc_fields(event):
            value = getattr(event, f.name)
            default = f.default if f.default is not dc_MISSING else (
                f.default_factory() if f.default_factory is not dc_MISSING else dc_MISSING)
            if value != default:
                row[f.name] = value
        plain.append(row)
    out, i = [], 0
    while i < len(plain):
        run = _longest_run(plain, i)
        if run is None:
            out.append(plain[i])
            i += 1
        else:
            row, length = run
            out.append(row)
            i += length
    return out



def _longest_run(rows: list[dict], start: int) -> tuple[dict, int] | None:
    """A run of >= 4 events equal but for ts_us in arithmetic steps and `{i}` in strings."""
    first = rows[start]
    if start + 3 >= len(rows) or "ts_us" not in first or rows[start + 1].keys() != first.keys():
        return None
    every = rows[start + 1]["ts_us"] - first["ts_us"]
    templates = {}
    for key, value in first.items():
        if key == "ts_us" or not isinstance(value, str) or value == rows[start + 1][key]:
            continue
        found = [value[:p] + "{i}" + value[p + 1:] for p in range(len(value)) if value[p] == "0"
                 and value[:p] + "1" + value[p + 1:] == rows[start + 1][key]]
        if not found:
            return None
        templates[key] = found[0]
    length = 0
    for k in range(start, len(rows)):
        i = k - start
        want = {key: (templates[key].replace("{i}", str(i)) if key in templates else value)
                for key, value in first.items()}
        want["ts_us"] = first["ts_us"] + every * i
        row = rows[k]
        if row.keys() != first.keys() or any(
                (abs(row[key] - want[key]) > 1e-9 if key == "ts_us" else row[key] != want[key]) for key in first):
            break
        length += 1
    if length < 4:
        return None
    row = {**first, **templates, "repeat": length, "every_us": every}
    return row, length
