"""What `kineto-sql info` reports about one loaded trace, as plain data (rendering is the CLI's job)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from kineto_sql.engine.processor import KinetoTraceProcessor
from kineto_sql.sql.files import sections

FLAG_KEYS = ("record_shapes", "with_stack", "profile_memory", "with_flops", "with_modules")


@dataclass(frozen=True)
class TraceInfo:
    source: str
    rank: int | None
    engine: str
    input_bytes: int
    schema_version: object
    flags: dict
    devices: list
    events_by_phase: dict
    expected_slices: int
    counts: dict
    processes: pd.DataFrame
    streams: pd.DataFrame
    steps: pd.DataFrame
    data_loss: pd.DataFrame
    fixes: list
    ts_offset_ns: int
    # Entries the loader could not keep (validate.py), with reason and first indices.
    dropped: list = dataclasses.field(default_factory=list)
    # Profiler options the events show ({option: events that show it}), for traces whose metadata says none.
    seen: dict = dataclasses.field(default_factory=dict)

    def options(self) -> list[str]:
        """The profiler options the capture was recorded with: from its metadata, else from its events."""
        named = [k for k, v in self.flags.items() if v]
        return named + [f"{k} ({n} events show it)" for k, n in self.seen.items() if n and k not in named]

    @property
    def conserved(self) -> bool:
        """Every entry became an event, every X, i/I and B event a slice, and the engine reports no loss."""
        return self.counts["slices"] == self.expected_slices and self.data_loss.empty and not self.dropped

    def loss_sentences(self) -> list[str]:
        out = [f"{d.count} event(s) dropped by the loader: {d.reason} (event index "
               f"{', '.join(map(str, d.indices))}{', ...' if d.count > len(d.indices) else ''})" for d in self.dropped]
        if self.counts["slices"] != self.expected_slices:
            out.append(f"{self.counts['slices']} slices for {self.expected_slices} X / instant / B events")
        out += [f"the engine lost data: stat {r['name']} = {r['value']}" for r in self.data_loss.to_dict(orient="records")]
        return out

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "rank": self.rank,
            "engine": self.engine,
            "input_bytes": self.input_bytes,
            "schema_version": self.schema_version,
            "flags": self.flags,
            "seen": self.seen,
            "devices": self.devices,
            "events_by_phase": self.events_by_phase,
            "expected_slices": self.expected_slices,
            "counts": self.counts,
            "conserved": self.conserved,
            "processes": self.processes.to_dict(orient="records"),
            "streams": self.streams.to_dict(orient="records"),
            "steps": self.steps.to_dict(orient="records"),
            "data_loss": self.data_loss.to_dict(orient="records"),
            "fixes": [dataclasses.asdict(f) for f in self.fixes],
            "dropped": [dataclasses.asdict(d) for d in self.dropped],
            "ts_offset_ns": self.ts_offset_ns,
        }


def describe(tp: KinetoTraceProcessor) -> TraceInfo:
    queries = sections("trace_info.sql")
    meta = tp.trace_metadata
    devices = [
        {"id": d.get("id"), "name": d.get("name"), "memory_gb": round(d.get("totalGlobalMem", 0) / 2**30, 1)}
        for d in meta.get("deviceProperties") or [] if isinstance(d, dict)
    ]
    counts = tp.df(queries["counts"]).iloc[0].to_dict()
    return TraceInfo(
        source=str(tp.path),
        rank=tp.rank,
        engine=tp.choice.kind,
        input_bytes=tp.report.input_bytes,
        schema_version=meta.get("schemaVersion"),
        flags={k: meta[k] for k in FLAG_KEYS if k in meta},
        devices=devices,
        events_by_phase=dict(sorted(tp.report.events_by_phase.items())),
        # every B event opens a slice too, closed by its E or left open (dur -1, as the engine keeps an
        # unmatched B): neither is a loss, and sql / diagnose do not call it one either
        expected_slices=tp.report.expected_slices + int(tp.report.events_by_phase.get("B", 0)),
        counts={k: int(v) for k, v in counts.items()},
        processes=tp.df(queries["processes"]),
        streams=tp.df(queries["streams"]),
        steps=tp.df(queries["steps"]),
        data_loss=tp.df(queries["stats"]),
        fixes=list(tp.report.fixes),
        ts_offset_ns=tp.report.ts_offset_ns,
        dropped=list(tp.report.dropped),
        seen={k: int(v) for k, v in tp.df(queries["seen"]).iloc[0].to_dict().items()},
    )
