"""Reading a trace the way an expert would: the step verdict first, then every applicable detector,
findings summed per detector and ranked by their estimated cost in step time."""
from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pandas as pd

from kineto_sql import catalog
from kineto_sql.diagnose.model import (SEVERITIES, Diagnosis, Finding, Skipped, StepRow, TraceDiagnosis,
                                       Verdict, Where, severity_rank)
from kineto_sql.diagnose.narrate import narrate
from kineto_sql.engine.processor import EngineChoice
from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.load import open_rank_dir, open_trace
from kineto_sql.runner import capabilities, run_query
from kineto_sql.sql_files import sections

STEP_TABLE = "reading.step_table"
OP_TABLE = "reading.op_table"
OVERHEAD_VS_COMPUTE = "guide.overhead_vs_compute"
COMMON = ("ts", "dur", "impact_dur", "step", "evidence", "fix", "max_severity", "min_severity")
# Findings about the capture itself come before every other finding, whatever their impact: a capture
# that lost GPU activity or ran under counter replay makes every other number suspect.
FIRST = ("catalog.capture_validity",)
OP_COLUMNS = ("op", "ops", "op_name", "aten_op", "sync_op", "launching_op")
PYTHON_COLUMNS = ("python_line", "python_frame", "python_lines", "frame")
# impact as % of profiled step time (or of the trace span when there are no steps)
# GPU occupancy at or above this is device-bound; under 50% is host-bound (the seed's "GPU sparse").
DEVICE_BOUND_PCT = 80.0
SEVERITY_PCT = (("high", 10.0), ("medium", 3.0), ("low", 0.0))

Progress = Callable[[str], None]


def detectors() -> list[catalog.QuerySpec]:
    return list(catalog.load_catalog().by_kind("detector"))


def diagnose_path(target: Path, engine: EngineChoice = EngineChoice(), progress: Progress | None = None,
                  jobs: int = 1) -> Diagnosis:
    started = time.perf_counter()
    failures = []
    if target.is_dir():
        traces, summary, failures = _diagnose_ranks(target, engine, progress, jobs)
    else:
        with open_trace(target, engine) as tp:
            traces = [diagnose_trace(tp, progress)]
        summary = None
    traces.sort(key=lambda t: (t.rank is None, t.rank))
    return Diagnosis(str(target), tuple(traces), summary, time.perf_counter() - started,
                     failed_ranks=tuple(f.sentence() for f in failures))


def diagnose_trace(tp, progress: Progress | None = None) -> TraceDiagnosis:
    source = str(tp.path)
    say = progress or (lambda _: None)
    say(f"{Path(source).name}: step verdict")
    verdict = _verdict(tp)
    denominator = verdict.total_step_ns or _trace_span(tp)
    findings, silent, skipped, errors = [], [], [], []
    for spec in detectors():
        say(f"{Path(source).name}: {spec.id}")
        try:
            result = run_query(tp, spec)
        except KinetoSqlError as exc:
            errors.append(Skipped(spec.id, str(exc)))
            continue
        if result.not_applicable:
            skipped.append(Skipped(spec.id, result.not_applicable))
        elif result.df.empty:
            silent.append(spec.id)
        else:
            findings.append(_finding(spec, result.df, denominator, source))
    findings = rank_findings(findings)
    fixes = tuple(f"{f.kind}: {f.count}" for f in tp.report.fixes)
    say(f"{Path(source).name}: {OP_TABLE}")
    return TraceDiagnosis(source, tp.rank, verdict, tuple(findings), tuple(silent), tuple(skipped), fixes,
                          tuple(errors), _top_ops(tp), loss=tuple(tp.report.loss_sentences()),
                          engine=tp.choice.kind, devices=_devices(tp))


def _devices(tp) -> tuple[str, ...]:
    """GPU models as the trace's deviceProperties name them, identical devices counted once: "8 x A100, 39 GB"."""
    props = (getattr(tp, "trace_metadata", None) or {}).get("deviceProperties") or []
    models: dict[str, int] = {}
    for d in props if isinstance(props, list) else []:
        if isinstance(d, dict) and d.get("name"):
            memory = d.get("totalGlobalMem")
            size = f", {memory / 2**30:.0f} GB" if isinstance(memory, (int, float)) and memory > 0 else ""
            models[f"{d['name']}{size}"] = models.get(f"{d['name']}{size}", 0) + 1
    return tuple(f"{n} x {model}" if n > 1 else model for model, n in models.items())


def _top_ops(tp, limit: int = 10) -> tuple[dict, ...]:
    try:
        run = run_query(tp, OP_TABLE)
    except KinetoSqlError:
        return ()
    if run.not_applicable or run.df.empty:
        return ()
    return tuple({k: _plain(v) for k, v in row.items()} for row in run.df.head(limit).to_dict(orient="records"))


def rank_findings(findings) -> list[Finding]:
    """Largest estimated step-time cost first; ties by severity, then id (stable output)."""
    return sorted(findings, key=lambda f: (f.query_id not in FIRST, -f.impact_ns, -severity_rank(f.severity),
                                           f.query_id))


def severity_for(impact_ns: int, impact_pct: float | None) -> str:
    """high >= 10% of profiled time, medium >= 3%, low above 0, info when it costs no time itself."""
    if impact_ns <= 0:
        return "info"
    for name, threshold in SEVERITY_PCT:
        if (impact_pct or 0.0) >= threshold:
            return name
    return "low"


def _trace_span(tp) -> int | None:
    df = tp.df(sections("trace_info.sql")["slice_span"])
    span = df.span.iloc[0] if len(df) else None
    return int(span) if span is not None and not pd.isna(span) and span > 0 else None


def _num(value):
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        return None
    return value


def _verdict(tp) -> Verdict:
    caps = capabilities(tp)
    has_gpu = bool(caps.get("gpu") and caps["gpu"].present)
    try:
        run = run_query(tp, STEP_TABLE)
    except KinetoSqlError:
        run = None
    if run is None or run.not_applicable or run.df.empty:
        return Verdict(0, None, None, None, "no steps",
                       "the trace has no ProfilerStep#N windows: findings are weighed against the whole trace span",
                       has_gpu)
    # One row per (step, device): a step is read on its busiest device.
    df = run.df.copy()
    df["_occ"] = pd.to_numeric(df.get("gpu_occupancy_pct"), errors="coerce").fillna(-1.0)
    df = df.sort_values(["step", "_occ"], ascending=[True, False]).drop_duplicates("step")
    rows = tuple(StepRow(
        step=int(r["step"]),
        dur_ns=int(r["dur"]),
        cpu_busy_ns=_int(r.get("cpu_busy_dur")),
        gpu_busy_ns=_int(r.get("gpu_busy_dur")),
        gpu_occupancy_pct=_float(r.get("gpu_occupancy_pct")),
    ) for r in df.to_dict(orient="records"))
    durs = sorted(r.dur_ns for r in rows)
    occupancy = [r.gpu_occupancy_pct for r in rows if r.gpu_occupancy_pct is not None]
    mean_occ = round(sum(occupancy) / len(occupancy), 1) if occupancy and has_gpu else None
    cpu = [r.cpu_busy_ns for r in rows if r.cpu_busy_ns is not None]
    cpu_pct = 100.0 * sum(cpu) / sum(durs) if cpu and sum(durs) else None
    if not has_gpu:
        regime, reason = "CPU only", "no GPU activity was recorded: the GPU-side verdict does not apply"
    elif mean_occ is not None and mean_occ < 50:
        regime = "host-bound"
        reason = (f"the GPU is busy only {mean_occ:.0f}% of the step: the fault is above the kernels "
                  "(host, input, sync)")
    elif mean_occ is not None and mean_occ < DEVICE_BOUND_PCT:
        regime = "mixed"
        reason = (f"the GPU is busy {mean_occ:.0f}% of the step and idle the rest: part of the step is lost above "
                  "the kernels (the findings below say where)")
    else:
        regime = "device-bound"
        reason = f"the GPU is busy {mean_occ:.0f}% of the step: time goes to the kernels themselves"
    if cpu_pct is not None:
        reason += f"; the CPU is busy {cpu_pct:.0f}% of the step"
    bound = _overhead_or_compute(tp)
    if bound:
        reason += f"; {bound}"
    return Verdict(len(rows), durs[len(durs) // 2], sum(durs), mean_occ, regime, reason, has_gpu, rows)


def _overhead_or_compute(tp) -> str | None:
    """The beginner's guide reading (guide.overhead_vs_compute, whole trace): overhead- or compute-bound."""
    try:
        run = run_query(tp, OVERHEAD_VS_COMPUTE)
    except KinetoSqlError:
        return None
    if run.not_applicable or run.df.empty or "level" not in run.df:
        return None
    whole = run.df[run.df["level"] == "trace"]
    if whole.empty:
        return None
    row = whole.iloc[0]
    ratio = _num(row.get("cpu_device_ratio"))
    detail = f"self CPU {ratio:g}x self device" if ratio is not None else f"{row.get('small_call_pct')}% of ATen calls under 50 us"
    return f"{row.get('reading')} ({detail}, {OVERHEAD_VS_COMPUTE})"


def _int(value):
    value = _num(value)
    return int(value) if value is not None else None


def _float(value):
    value = _num(value)
    return round(float(value), 2) if value is not None else None


def _finding(spec, df: pd.DataFrame, denominator: int | None, source: str) -> Finding:
    impact = int(pd.to_numeric(df.get("impact_dur"), errors="coerce").fillna(0).clip(lower=0).sum()) \
        if "impact_dur" in df else 0
    pct = round(100.0 * impact / denominator, 2) if denominator else None
    severity = severity_for(impact, pct)
    evidence = tuple(dict.fromkeys(str(e) for e in df.get("evidence", pd.Series(dtype=str)).dropna()))[:3]
    steps = tuple(sorted({int(s) for s in df["step"].dropna()})) if "step" in df else ()
    ts = pd.to_numeric(df.get("ts"), errors="coerce") if "ts" in df else None
    end = ts + pd.to_numeric(df.get("dur"), errors="coerce").fillna(0) if ts is not None and "dur" in df else ts
    where = Where(
        steps=steps,
        ts_ns=int(ts.min()) if ts is not None and ts.notna().any() else None,
        end_ns=int(end.max()) if end is not None and end.notna().any() else None,
        ops=_values(df, OP_COLUMNS),
        python_lines=_values(df, PYTHON_COLUMNS),
    )
    worst = df.iloc[int(pd.to_numeric(df["impact_dur"], errors="coerce").fillna(0).values.argmax())] \
        if "impact_dur" in df and len(df) else df.iloc[0]
    numbers = {c: _plain(worst[c]) for c in df.columns if c not in COMMON and _plain(worst[c]) is not None}
    severity = _floored(_capped(severity, df), df)
    finding = Finding(
        query_id=spec.id,
        id_version=spec.id_version,
        title=spec.title,
        catalog_row=spec.source,
        severity=severity,
        count=len(df),
        impact_ns=impact,
        impact_pct=pct,
        evidence=evidence,
        signature=spec.signature or "",
        confirming=spec.confirming or "",
        fix=row_fix(worst) or spec.fix or "",
        where=where,
        reproduce=(f"kineto-sql run {spec.id} {source}", f"kineto-sql show {spec.id} --paste",
                   f"kineto-sql open {source} --finding {spec.id}"),
        numbers=numbers,
    )
    return _with_narration(finding)


def row_fix(row) -> str | None:
    """A rule may return a `fix` column whose text follows the cause it found (a pageable copy wants
    pin_memory, `.item()` a deferred read); the finding uses its worst row's, else the header's."""
    value = _plain(row.get("fix")) if hasattr(row, "get") else None
    return str(value) if value else None


def _capped(severity: str, df: pd.DataFrame) -> str:
    """A rule may return a `max_severity` column (info/low/medium/high) for rows that are not a fault of
    the workload (a sync inside the profiling harness's own timer); when every row carries one, the
    finding's severity is at most the highest of them."""
    if "max_severity" not in df:
        return severity
    caps = [str(v) for v in df["max_severity"] if _plain(v) is not None and str(v) in SEVERITIES]
    if len(caps) < len(df):
        return severity
    cap = max(caps, key=severity_rank)
    return min(severity, cap, key=severity_rank)


def _floored(severity: str, df: pd.DataFrame) -> str:
    """A rule may return a `min_severity` column for what matters although it costs no step time itself
    (a capture that lost its GPU activity): the finding's severity is at least the highest of them."""
    if "min_severity" not in df:
        return severity
    floors = [str(v) for v in df["min_severity"] if _plain(v) is not None and str(v) in SEVERITIES]
    return max([severity, *floors], key=severity_rank)


def _with_narration(finding: Finding) -> Finding:
    return replace(finding, narration=narrate(finding))


def _values(df: pd.DataFrame, columns) -> tuple[str, ...]:
    for column in columns:
        if column in df:
            return tuple(dict.fromkeys(str(v) for v in df[column].dropna() if str(v)))[:5]
    return ()


def _plain(value):
    value = _num(value)
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _diagnose_rank(path: str, rank_from_name: int | None, engine: EngineChoice):
    """Worker body: one load per rank serves both its diagnosis and the cross-rank analyses."""
    from kineto_sql import ranks

    started = time.perf_counter()
    with open_trace(path, engine, rank_from_name=rank_from_name) as tp:
        load_s = time.perf_counter() - started
        return diagnose_trace(tp), ranks.analyse_rank(tp, path, False, load_s)


def _diagnose_ranks(target: Path, engine: EngineChoice, progress: Progress | None, jobs: int):
    """Every rank in worker processes (at most `jobs` resident), then the cross-rank straggler reading."""
    from kineto_sql import ranks
    from kineto_sql.fanout import all_failed, fan_out

    files = open_rank_dir(target)
    say = progress or (lambda _: None)
    finished = []

    def done(_pair):
        finished.append(1)
        say(f"ranks: {len(finished)} of {len(files)} diagnosed")

    pairs, failures = fan_out(_diagnose_rank, [(str(path), rank, engine) for path, rank in files], jobs, done)
    if not pairs:
        raise all_failed(failures)
    traces = [diagnosis for diagnosis, _ in pairs]
    return traces, _ranks_summary(ranks.build_report([result for _, result in pairs])), failures


def _ranks_summary(report) -> dict:
    """The cross-rank reading (straggler hunting is a distribution question), from kineto_sql.ranks."""
    verdict = report.verdict
    quantity = verdict.quantity
    return {
        "ranks": len(report.results),
        "straggler": verdict.straggler,
        "quantity": quantity.meaning if quantity else None,
        "excess_pct_of_step": round(quantity.excess_pct_of_step, 2) if quantity else None,
        "median_step_us": verdict.median_step_us,
        "threshold_pct": verdict.threshold_pct,
        "narration": verdict.narration,
    }
