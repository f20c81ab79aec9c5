"""Loading a trace: read, prepare (nothing lost), ingest into the engine, add the metadata tables."""
from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import orjson

from kineto_sql.engine import memory
from kineto_sql.engine.processor import EngineChoice, KinetoTraceProcessor
from kineto_sql.errors import DataLossError
from kineto_sql.loading import background
from kineto_sql.loading.loaded import LoadedTrace
from kineto_sql.loading.prepare import PreparedTrace, prepare_path
from kineto_sql.loading.source import trace_files_in
from kineto_sql.sql.files import read_sql, sections
from kineto_sql.sql.literals import bind
from kineto_sql.sql.package import package_dir, package_modules

log = logging.getLogger("kineto_sql.load")


def prepare_file(path: Path, engine: EngineChoice | None = None) -> PreparedTrace:
    started = time.perf_counter()

    def sized(size: int) -> None:
        log.info("read %s: %.1f MB of JSON", path.name, size / 1e6)
        if engine is not None:  # refuse before the fixes, with the need and the cap, rather than die mid-load
            choice = engine.resolve(size)
            memory.check(size, choice.kind == "wasm64", choice.kind == "native", what=str(path))

    prepared = prepare_path(path, on_size=sized, check=None if engine is None else memory_check(engine, path))
    report = prepared.report
    log.info("prepared %s: %d events, %d kinds of change, %d dropped (%.1fs)", path.name,
             sum(report.events_by_phase.values()), len(report.fixes), report.dropped_count,
             time.perf_counter() - started)
    return prepared


def memory_check(engine: EngineChoice, path: Path):
    """The memory check of loading so many bytes of JSON with `engine` in this one process, asked before the
    decode (of a plain file's size, and as a gzip file inflates)."""
    what = background.described(path)

    def check(size: int) -> None:
        choice = engine.resolve(size)
        memory.check(size, choice.kind == "wasm64", choice.kind == "native", what=what)
    return check


def rank_of(prepared: PreparedTrace, fallback: int | None) -> int | None:
    info = prepared.metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"]
    return fallback


def open_trace(path, engine: EngineChoice = EngineChoice(), rank_from_name: int | None = None,
               jobs: int = 1) -> KinetoTraceProcessor:
    """Loads one trace file into a fresh engine. The returned processor carries the load as `.loaded`
    (a LoadedTrace: path, report, metadata, rank). `jobs` 2 prepares the trace in a child process while
    this one starts the engine and ingests (loading.background)."""
    path = Path(path)
    if jobs < 2 or not background.available():
        return open_prepared(prepare_file(path, engine), path, engine, rank_from_name)
    streamed = background.take(path) or background.StreamedPrepared(path)
    try:
        size = streamed.size_hint
        choice = engine.resolve(size)
        # The address space of the engine's process; the child checked the memory of both before decoding.
        memory.check(size, choice.kind == "wasm64", choice.kind == "native", what=str(path), resident=False)
        return open_prepared(streamed, path, engine, rank_from_name)
    finally:
        streamed.close()


def open_prepared(prepared: PreparedTrace | background.StreamedPrepared, path: Path, engine: EngineChoice = EngineChoice(),
                  rank_from_name: int | None = None) -> KinetoTraceProcessor:
    choice = engine.resolve(prepared.size_hint)
    tp = KinetoTraceProcessor(choice, sql_package=("kineto", package_modules()), sql_package_dir=package_dir())
    try:
        tp.load_chunks(prepared.chunks())
        prepared.verify()
        tp.attach(LoadedTrace(path, prepared.report, prepared.metadata, rank_of(prepared, rank_from_name)))
        _add_ingest_tables(tp, prepared, path, tp.rank)
        _check_loss(tp, prepared, path, choice.allow_loss)
        log.info("loaded %s into the %s engine: %d slices expected", path.name, choice.kind,
                 prepared.report.expected_slices)
    except BaseException:
        tp.close()
        raise
    return tp


def _check_loss(tp: KinetoTraceProcessor, prepared: PreparedTrace, path: Path, allow_loss: bool) -> None:
    """Reads the engine's data-loss stats into the report; refuses a lossy load unless it is allowed."""
    stats = tp.rows(sections("trace_info.sql")["stats"]).records()
    prepared.report.engine_loss = [(str(r["name"]), int(r["value"])) for r in stats]
    if prepared.report.lossy and not allow_loss:
        causes = "; ".join(prepared.report.loss_sentences()[:3])
        raise DataLossError(f"{path}: loading it loses data ({causes}); pass --allow-loss to load the rest and "
                            "see the full loss report (kineto-sql info --allow-loss)")


def open_rank_dir(directory) -> list[tuple[Path, int | None]]:
    """The rank files of a directory with the rank their name suggests (distributedInfo wins at load)."""
    return [(f.path, f.rank_from_name) for f in trace_files_in(Path(directory))]


def _add_ingest_tables(tp, prepared: PreparedTrace, path: Path, rank: int | None) -> None:
    facts = dict(prepared.metadata)
    facts["kineto_sql.source"] = str(path)
    facts["kineto_sql.rank"] = rank
    facts["kineto_sql.ts_offset_ns"] = prepared.report.ts_offset_ns
    facts["kineto_sql.expected_slices"] = prepared.report.expected_slices
    report = [dataclasses.asdict(f) for f in prepared.report.fixes]
    sql = bind(read_sql("ingest_tables.sql"), {
        "metadata_json": orjson.dumps(facts, option=orjson.OPT_NON_STR_KEYS).decode(),
        "report_json": orjson.dumps(report).decode(),
    })
    tp.query(sql)
