"""Reading a trace the way an expert would: the verdict first (reading.verdict over the step-time ledger),
then every applicable detector, findings summed per detector, each claiming ledger time, ranked by the
share of steady step time they claim.

Claims (which ledger time each finding's impact is drawn from, so that no two findings claim the same
nanosecond) are resolved in kineto_sql/diagnose/claims.py, per window.

A capture that is mostly its cold start (kineto.lib.steady_sample: fewer than 3 steady windows holding under
10% of the windows' time) has no steady state to rank against: every share is then of all the windows, and
cold and steady findings are ranked together by the time they claim."""
from __future__ import annotations

import functools
import itertools
import math
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from kineto_sql.catalog import spec as catalog
from kineto_sql.diagnose.claims import COLD, resolve_window_claims, window_pools
from kineto_sql.diagnose.model import (SEVERITIES, Diagnosis, Finding, LedgerBucket, LedgerWindow, Skipped,
                                       StepRow, TraceDiagnosis, Verdict, Where, severity_rank)
from kineto_sql.diagnose.narrate import narrate
from kineto_sql.diagnose import verdict_notes
from kineto_sql.engine.processor import EngineChoice
from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.load import open_trace
from kineto_sql.run import pool as query_pool
from kineto_sql.sql.includes import kineto_dependencies
from kineto_sql.engine.rows import Rows, column_sum, dur_by, missing, numbers, present, sort_key, truthy
from kineto_sql.run.runner import capabilities, resolve_spec, run_query, trace_device_name
from kineto_sql.sql.files import sections
from kineto_sql.whatif.annotate import annotate as whatif_annotate, critical_path_shares, with_prediction
from kineto_sql.whatif.edits import EDITS
from kineto_sql.whatif.predict import UPPER_BOUND, Prediction
from kineto_sql.sql.literals import include_statement

STEP_TABLE = "reading.step_table"
STEP_LEDGER = "reading.step_ledger"
VERDICT = "reading.verdict"
OP_TABLE = "reading.op_table"
CLAIM_BUCKET = "claim_bucket"
COMMON = ("ts", "dur", "impact_dur", "step", "evidence", "fix", "max_severity", "min_severity", CLAIM_BUCKET)
# Findings about the capture itself come before every other finding, whatever their impact: a capture
# that lost GPU activity or ran under counter replay makes every other number suspect.
FIRST = ("catalog.capture_validity",)
OP_COLUMNS = ("op", "ops", "op_name", "aten_op", "sync_op", "launching_op")
# rules whose op column has another name: where.ops is filled whenever the evidence names ops
OP_COLUMN_OF = {"catalog.op_far_from_peak": ("name",), "catalog.optimizer_step_dominance": ("top_ops",)}
PYTHON_COLUMNS = ("python_line", "python_frame", "python_lines", "frame")
# impact as % of the steady step time (window time x devices, from the ledger)
SEVERITY_PCT = (("high", 10.0), ("medium", 3.0), ("low", 0.0))

Progress = Callable[[str], None]


def detectors() -> list[catalog.QuerySpec]:
    """The detectors diagnose runs: every detector but the deprecated ones (their successor runs)."""
    return [s for s in catalog.load_catalog().by_kind("detector") if s.status != "deprecated"]


def diagnose_path(target: Path, engine: EngineChoice = EngineChoice(), progress: Progress | None = None,
                  jobs: int = 1) -> Diagnosis:
    """One trace file; `jobs` 2 runs its queries in two processes (diagnose_trace). A rank directory is the
    fleet's (kineto_sql.fleet.run.diagnose_directory): diagnose knows nothing of many ranks."""
    started = time.perf_counter()
    if Path(target).is_dir():
        raise KinetoSqlError(f"{target} is a directory; diagnose its ranks with kineto_sql.fleet.run.diagnose_directory")
    query_plan()  # Python work done while a loader child (jobs 2) parses, not after the load
    with open_trace(target, engine, jobs=jobs) as tp:
        traces = [diagnose_trace(tp, progress, jobs=min(jobs, 2))]
    return Diagnosis(str(target), tuple(traces), None, time.perf_counter() - started)


def diagnose_trace(tp, progress: Progress | None = None, jobs: int = 1,
                   runs: dict[str, query_pool.Outcome] | None = None) -> TraceDiagnosis:
    """`jobs` 2 runs the queries in two processes over the one loaded trace (kineto_sql.run.pool). `runs`, when
    given, receives every query's outcome by id (reading.step_ledger, reading.step_table...): a caller that
    keeps those tables too (the fleet's rank task) reads them from here instead of running them again."""
    source = str(tp.path)
    say = progress or (lambda _: None)
    started = itertools.count(1)
    total = len(query_plan()[0])
    done = _run_queries(tp, jobs, lambda spec: say(f"{Path(source).name}: rule {next(started)} of {total}: {spec.id}"))
    if runs is not None:
        runs.update(done)
    runs = done
    say(f"{Path(source).name}: step verdict")
    verdict, pools = _verdict(tp, runs)
    verdict = verdict_notes.with_split(tp, verdict)
    stacks = capabilities(tp).get("stacks")
    verdict = verdict_notes.with_stack_caveat(verdict, bool(stacks and stacks.present))
    denominator = verdict.lane_ns or verdict.total_step_ns or _trace_span(tp)
    # lane_ns already holds the cold windows when the steady sample is too small
    cold_denominator = denominator if not verdict.steady_representative else \
        (verdict.lane_ns or 0) + sum(ns for (_, b), ns in pools.items() if b == COLD) or denominator
    fired, silent, skipped, errors = [], [], [], []
    for spec in detectors():
        try:
            result = runs[spec.id].get()
        except KinetoSqlError as exc:
            errors.append(Skipped(spec.id, str(exc)))
            continue
        if result.not_applicable:
            skipped.append(Skipped(spec.id, result.not_applicable))
        elif result.rows.empty:
            silent.append(spec.id)
        else:
            fired.append((spec, result.rows))
    claimed = resolve_window_claims([(spec, _estimate_by_step(df)) for spec, df in fired], pools)
    # a row that names its bucket speaks only for the time it was given: a default explainer whose every
    # bucket went to specific findings has nothing left to say
    explained = [spec.id for spec, df in fired if speaking_rows(df, claimed[spec.id]).empty]
    silent += explained
    findings = [_finding(spec, df, cold_denominator if spec.claims == (COLD,) else denominator, source,
                         claimed[spec.id], of_capture=not verdict.steady_representative,
                         steady_windows=verdict.steps, cold_windows=verdict.cold_windows)
                for spec, df in fired if spec.id not in explained]
    findings = rank_findings(findings, cold_apart=verdict.steady_representative)
    say(f"{Path(source).name}: what each fix buys")
    findings, combined, path = _what_if(tp, findings, verdict)
    findings = [_with_narration(f) for f in findings]  # the words name the prediction too
    verdict = unreadable_capture(verdict, fired)
    fixes = tuple(f"{f.kind}: {f.count}" for f in tp.report.fixes)
    return TraceDiagnosis(source, tp.rank, verdict, tuple(findings), tuple(silent), tuple(skipped), fixes,
                          tuple(errors), _top_ops(runs[OP_TABLE]), loss=tuple(tp.report.loss_sentences()),
                          engine=tp.choice.kind, devices=_devices(tp), combined_prediction=combined,
                          critical_path=path)


def _what_if(tp, findings: list[Finding], verdict: Verdict) -> tuple[list[Finding], dict | None, tuple[dict, ...]]:
    """(findings with their prediction, the top fixes' prediction together, the critical path's buckets).
    The dependency graph costs about as much SQL as the load: it is built and replayed only when a steady
    finding carries a graph edit (kineto_sql.whatif.edits). Otherwise no finding has a fix to replay, and
    each one's prediction is its claimed time vanishing, an upper bound over the verdict's median step
    (the graph's median step is the same steady windows' median), without a critical path."""
    if any(f.scope != "cold" and f.query_id in EDITS for f in findings):
        findings, combined = whatif_annotate(tp, findings, verdict.has_gpu)
        return findings, combined, critical_path_shares(tp)
    measured = verdict.median_step_ns or 0
    steady, every = max(verdict.steps, 1), max(verdict.steps + verdict.cold_windows, 1)
    out = []
    for f in findings:
        if f.scope == "cold" or f.impact_ns == 0:
            out.append(f)
            continue
        claimed = f.impact_ns // (every if f.of_capture else steady)
        predicted = max(measured - claimed, 0)
        out.append(with_prediction(f, Prediction((f.query_id,), "the claimed time vanishes", UPPER_BOUND, measured,
                                                 predicted, 0, measured - predicted,
                                                 f"no graph edit is defined for {f.query_id}")))
    return out, None, ()


def _run_queries(tp, jobs: int, on_start) -> dict[str, query_pool.Outcome]:
    """The verdict, the ledger, the step table, every detector and the op table, by id."""
    capabilities(tp)  # cached before any fork, so both processes read the same
    trace_device_name(tp)
    specs, needs = query_plan()
    outcomes = query_pool.run_all(tp, specs, run_query, lambda spec: needs[spec.id], jobs=jobs, on_start=on_start,
                                  build=lambda tp, module: tp.query(include_statement(module)))
    return {spec.id: outcome for spec, outcome in zip(specs, outcomes)}


@functools.lru_cache(maxsize=1)
def query_plan() -> tuple[list[catalog.QuerySpec], dict[str, list[str]]]:
    """What diagnose runs and the modules each query includes. The ledger's chain and the op table's are
    the longest: they go first, so that with two processes each starts one. Read once per process
    (diagnose_path reads it while the loader child parses the trace)."""
    specs = [resolve_spec(VERDICT), resolve_spec(OP_TABLE), resolve_spec(STEP_LEDGER), resolve_spec(STEP_TABLE)] + detectors()
    return specs, {spec.id: kineto_dependencies(spec.path.read_text()) + [spec.module] for spec in specs}


def _estimate_by_step(rows: Rows) -> dict:
    """The rows' impact per (step, bucket): step None for rows without a step (claimed from any window),
    bucket None unless the rule returns a `claim_bucket` column (the one bucket of its claims line a row's
    impact is drawn from: a device finding names its kernels' bucket)."""
    if "impact_dur" not in rows:
        return {}
    steps = rows.column("step") if "step" in rows else [None] * len(rows)
    hints = rows.column(CLAIM_BUCKET) if CLAIM_BUCKET in rows else [None] * len(rows)
    out: dict = {}
    for step, hint, impact in zip(steps, hints, numbers(rows.column("impact_dur"), missing_as=0)):
        key = (None if missing(step) else int(step), None if missing(hint) else str(hint))
        out[key] = out.get(key, 0) + max(int(impact), 0)
    return out


def _estimate(rows: Rows) -> int:
    if "impact_dur" not in rows:
        return 0
    return int(column_sum(max(v, 0) for v in numbers(rows.column("impact_dur"), missing_as=0)))




UNREADABLE = "unreadable"


def unreadable_capture(verdict: Verdict, fired) -> Verdict:
    """A capture whose validity rows carry a high floor (lost GPU activity, counter replay) has no timing to
    read a regime from: the verdict says so, with the row's evidence, instead of naming a regime."""
    for spec, rows in fired:
        if spec.id not in FIRST or "min_severity" not in rows:
            continue
        for row in rows.records():
            if _plain(row.get("min_severity")) == "high":
                return replace(verdict, regime=UNREADABLE,
                               regime_reason=f"the timings of this capture cannot be read: {str(row['evidence']).rstrip('.')}")
    return verdict


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


def _top_ops(outcome: query_pool.Outcome, limit: int = 10) -> tuple[dict, ...]:
    try:
        run = outcome.get()
    except KinetoSqlError:
        return ()
    if run.not_applicable or run.rows.empty:
        return ()
    return tuple({k: _plain(v) for k, v in row.items()} for row in run.rows.records(limit))


def rank_findings(findings, cold_apart: bool = True) -> list[Finding]:
    """Capture validity first; then steady findings by the step time they claim in the typical step, ties
    by severity, then id; cold-start findings last (one-time work is kept out of the steady-state ranking).
    A finding seen in most steady steps ranks by its claimed time; an outlier (seen in at most half of
    them) by what the median steady step claims, times the steady steps (`rank_ns`): one slow step of three
    claims nothing in the typical step, so a fix aimed at it does not change the typical step, and it
    ranks after every finding that holds in most steps (at equal typical claims: findings above info
    first, then the one seen in most steps, then by claimed time).
    With `cold_apart` False (the steady sample is too small to stand for a steady state) cold findings rank
    with the others by the time they claim. A finding capped to info that claims time
    (catalog.device_composition below device-bound, catalog.host_composition: they describe the step, they
    are no fault) ranks after every other finding."""
    return sorted(findings, key=lambda f: (f.query_id not in FIRST, cold_apart and f.scope == "cold",
                                           f.severity == "info" and f.impact_ns > 0,
                                           -(f.impact_ns if f.rank_ns is None else f.rank_ns),
                                           f.severity == "info", f.outlier,
                                           -f.impact_ns, -severity_rank(f.severity), f.query_id))


def typical_claim(per_step: dict, steady_windows: int) -> int:
    """What the median steady window claims, times the steady windows: the windows a finding was not seen in
    claim 0 (the mean of the two middle windows when their number is even)."""
    if steady_windows <= 0:
        return sum(per_step.values())
    values = sorted([*per_step.values(), *[0] * max(steady_windows - len(per_step), 0)])
    n = len(values)
    median = (values[(n - 1) // 2] + values[n // 2]) / 2
    return round(median * steady_windows)


def severity_for(impact_ns: int, impact_pct: float | None) -> str:
    """high >= 10% of profiled time, medium >= 3%, low above 0, info when it costs no time itself."""
    if impact_ns <= 0:
        return "info"
    for name, threshold in SEVERITY_PCT:
        if (impact_pct or 0.0) >= threshold:
            return name
    return "low"


def _trace_span(tp) -> int | None:
    spans = tp.rows(sections("trace_info.sql")["slice_span"]).column("span")
    span = spans[0] if spans else None
    return int(span) if not missing(span) and span > 0 else None


def _num(value):
    return None if missing(value) else value


def _verdict(tp, runs: dict[str, query_pool.Outcome]) -> tuple[Verdict, dict[str, int]]:
    """reading.verdict (the regime and its sentence, in SQL) and reading.step_ledger: the per-window rows
    and the claim pools (steady time per bucket, and `cold`)."""
    caps = capabilities(tp)
    has_gpu = bool(caps.get("gpu") and caps["gpu"].present)
    try:
        verdict_run, ledger_run = runs[VERDICT].get(), runs[STEP_LEDGER].get()
    except KinetoSqlError:
        verdict_run = ledger_run = None
    if verdict_run is None or verdict_run.rows.empty or ledger_run is None or ledger_run.rows.empty:
        return Verdict(0, None, None, None, "no steps",
                       "the trace has no window to read (no host or device events)", has_gpu), {}
    v = verdict_run.rows.record(0)
    ledger = ledger_run.rows.records()
    steady = [r for r in ledger if not truthy(r["is_cold"])]
    pools = window_pools(ledger)
    lane_ns = _int(v.get("lane_dur"))
    representative = _num(v.get("steady_representative"))
    representative = True if representative is None else bool(representative)
    # what the shares are of: the steady windows, or every window when they are too small a sample
    analysed = steady if representative else ledger
    totals = dur_by(analysed, "bucket")
    buckets = tuple(LedgerBucket(str(b), int(d), round(100.0 * d / lane_ns, 2) if lane_ns else 0.0)
                    for b, d in sorted(totals.items(), key=lambda x: -x[1]))
    return Verdict(
        steps=int(v["windows"]),
        median_step_ns=_int(v.get("median_window_dur")),
        total_step_ns=_int(v.get("total_window_dur")),
        gpu_occupancy_pct=_busy_pct(analysed, lane_ns) if has_gpu else None,
        regime=str(v["regime"]),
        regime_reason=str(v["sentence"]).rstrip("."),
        has_gpu=has_gpu,
        per_step=_per_step(_rows(runs.get(STEP_TABLE))),
        window_source=str(v["window_source"]),
        cold_windows=int(v["cold_windows"]),
        cold_ns=int(v["cold_dur"] or 0),
        lane_ns=lane_ns,
        compute_pct=_float(v.get("compute_pct")),
        comm_pct=_float(v.get("comm_pct")),
        idle_pct=_float(v.get("idle_pct")),
        ledger=buckets,
        steady_representative=representative,
        sample_sentence=_plain(v.get("sample_sentence")),
        ledger_windows=_ledger_windows(ledger),
    ), pools


def _ledger_windows(ledger: list[dict]) -> tuple[LedgerWindow, ...]:
    """reading.step_ledger's rows as one LedgerWindow per window (devices summed), in the rows' order."""
    windows: dict = {}
    for row in ledger:
        step = None if missing(row["step"]) else int(row["step"])
        _, buckets = windows.setdefault(row["window_id"], ((step, truthy(row["is_cold"])), {}))
        buckets[str(row["bucket"])] = buckets.get(str(row["bucket"]), 0) + int(row["dur"])
    return tuple(LedgerWindow(step, bool(cold), tuple(b.items())) for (step, cold), b in windows.values())





def _busy_pct(steady: list[dict], lane_ns: int | None) -> float | None:
    busy = int(column_sum(r["dur"] for r in steady if r["kind"] == "busy"))
    return round(100.0 * busy / lane_ns, 1) if lane_ns else None


def _per_step(step_table: Rows | None) -> tuple[StepRow, ...]:
    """One row per window from reading.step_table (the one definition of CPU busy: merged ATen-op time),
    read on its busiest device."""
    if step_table is None or step_table.empty:
        return ()
    windows: dict = {}
    for row in step_table.records():
        if missing(row["step"]):
            continue
        windows.setdefault((row["ts"], row["step"]), []).append(row)
    rows = []
    for (_, step), group in sorted(windows.items(), key=lambda kv: (sort_key(kv[0][0]), sort_key(kv[0][1]))):
        width = int(group[0]["dur"])
        busy = [int(r["gpu_busy_dur"]) for r in group if not missing(r["device"]) and not missing(r["gpu_busy_dur"])]
        gpu = max(busy) if busy else None
        cpu = group[0]["cpu_busy_dur"]
        rows.append(StepRow(step=int(step), dur_ns=width, cpu_busy_ns=None if missing(cpu) else int(cpu),
                            gpu_busy_ns=gpu, gpu_occupancy_pct=round(100.0 * gpu / width, 2) if gpu and width else
                            (0.0 if busy else None)))
    return tuple(rows)


def _rows(outcome: query_pool.Outcome | None) -> Rows | None:
    try:
        run = outcome.get() if outcome is not None else None
    except KinetoSqlError:
        return None
    return None if run is None or run.not_applicable else run.rows


def _int(value):
    value = _num(value)
    return int(value) if value is not None else None


def _float(value):
    value = _num(value)
    return round(float(value), 2) if value is not None else None


def _finding(spec, rows: Rows, denominator: int | None, source: str,
             claimed: dict | None = None, of_capture: bool = False, steady_windows: int = 0,
             cold_windows: int = 0) -> Finding:
    """`claimed`: what claim resolution gave the finding, per (step, bucket)."""
    estimate = _estimate(rows)
    impact = estimate if claimed is None else sum(claimed.values())
    by_bucket: dict[str, int] = {}
    for (_, bucket), ns in (claimed or {}).items():
        by_bucket[bucket] = by_bucket.get(bucket, 0) + ns
    pct = round(100.0 * impact / denominator, 2) if denominator else None
    severity = severity_for(impact, pct)
    cold = spec.claims == (COLD,)
    if cold:
        # one-time work: reported, never ranked with (or as severe as) a steady-state cost
        severity = min(severity, "low", key=severity_rank)
    speaking = speaking_rows(rows, claimed) if claimed is not None else rows
    evidence = tuple(dict.fromkeys(str(e) for e in present(speaking, "evidence")))[:3]
    steps = tuple(sorted({int(s) for s in present(rows, "step")}))
    ts = numbers(rows.column("ts")) if "ts" in rows else None
    end = ts
    if ts is not None and "dur" in rows:
        end = [None if t is None else t + d for t, d in zip(ts, numbers(rows.column("dur"), missing_as=0))]
    where = Where(
        steps=steps,
        ts_ns=int(min(t for t in ts if t is not None)) if ts is not None and any(t is not None for t in ts) else None,
        end_ns=int(max(e for e in end if e is not None)) if end is not None and any(e is not None for e in end)
        else None,
        ops=_op_names(_values(rows, OP_COLUMNS + OP_COLUMN_OF.get(spec.id, ()))),
        python_lines=_values(rows, PYTHON_COLUMNS),
    )
    if "impact_dur" in speaking:
        impacts = numbers(speaking.column("impact_dur"), missing_as=0)
        worst = speaking.record(impacts.index(max(impacts)))  # the first of the largest, as numpy's argmax
    else:
        worst = speaking.record(0)
    figures = {c: _plain(worst[c]) for c in rows.columns if c not in COMMON and _plain(worst[c]) is not None}
    severity = _floored(_capped(severity, rows), rows)
    outlier = not cold and is_outlier(len(steps), steady_windows)
    rank_ns = typical_claim(_claim_per_step(claimed, impact, steps), steady_windows) if outlier else None
    if outlier:
        # the cause is in a minority of the steady windows: one slow step, not the steady state
        severity = min(severity, OUTLIER_CAP, key=severity_rank)
        note = f"Seen in {len(steps)} of {steady_windows} steady steps only: an outlier, not every step."
        evidence = (f"{note} {evidence[0]}" if evidence else note, *evidence[1:])
    finding = Finding(
        query_id=spec.id,
        id_version=spec.id_version,
        title=spec.title,
        catalog_row=spec.references,
        severity=severity,
        count=len(rows),
        impact_ns=impact,
        impact_pct=pct,
        evidence=evidence,
        signature=spec.what or "",
        confirming=spec.confirming or "",
        fix=row_fix(worst) or spec.use_instead or "",
        where=where,
        reproduce=(f"kineto-sql run {spec.id} {source}", f"kineto-sql show {spec.id} --paste",
                   f"kineto-sql open {source} --finding {spec.id}"),
        numbers=figures,
        claims=spec.claims,
        claimed=by_bucket,
        claimed_windows=tuple(sorted(((s, b, ns) for (s, b), ns in (claimed or {}).items()),
                                     key=lambda x: (x[0] is None, x[0] or 0, x[1]))),
        estimate_ns=estimate,
        scope="cold" if cold else "steady",
        of_capture=of_capture and not cold,
        per_step_ns=_per_window(impact, cold, steady_windows + (cold_windows if of_capture else 0)),
        outlier=outlier,
        rank_ns=rank_ns,
    )
    return _with_narration(finding)


def _claim_per_step(claimed: dict | None, impact: int, steps: tuple[int, ...]) -> dict:
    """Claimed ns per step: from claim resolution's (step, bucket) keys, else the impact spread evenly over
    the steps the rule named."""
    per_step: dict = {}
    for (step, _), ns in (claimed or {}).items():
        if step is not None:
            per_step[step] = per_step.get(step, 0) + ns
    if not per_step and steps:
        per_step = {s: impact / len(steps) for s in steps}
    return per_step


def _per_window(impact: int, cold: bool, windows: int) -> int | None:
    """A steady cost per window it is drawn from; none for one-time (cold) work or without windows."""
    return None if cold or windows <= 0 else round(impact / windows)


OUTLIER_CAP = "medium"


def is_outlier(fired_windows: int, steady_windows: int) -> bool:
    """A finding seen in some steady windows but not in most of them (at most half of 2 or more) describes
    outlier steps: its severity is at most medium, whatever its share of the steady time."""
    return steady_windows >= 2 and 0 < fired_windows and 2 * fired_windows <= steady_windows


def row_fix(row) -> str | None:
    """A rule may return a `fix` column whose text follows the cause it found (a pageable copy wants
    pin_memory, `.item()` a deferred read); the finding uses its worst row's, else the header's."""
    value = _plain(row.get("fix")) if hasattr(row, "get") else None
    return str(value) if value else None


def speaking_rows(rows: Rows, claimed: dict) -> Rows:
    """The rows that speak for a finding: a row naming its bucket (`claim_bucket`) whose bucket claim
    resolution gave this finding nothing in any window describes time another finding owns, so its words,
    fix and numbers are left out (catalog.unexplained_time's row for a bucket a specific detector claimed in
    full). Rows without a bucket always speak; all rows speak when none names one."""
    if CLAIM_BUCKET not in rows or rows.empty:
        return rows
    given = {bucket for (_, bucket), ns in claimed.items() if ns > 0}
    keep = [i for i, b in enumerate(rows.column(CLAIM_BUCKET)) if missing(b) or str(b) in given]
    if len(keep) == len(rows):
        return rows
    return Rows.of_columns({c: [rows.column(c)[i] for i in keep] for c in rows.columns})


def _capped(severity: str, rows: Rows) -> str:
    """A rule may return a `max_severity` column (info/low/medium/high) for rows that are not a fault of
    the workload (a sync inside the profiling harness's own timer); when every row carries one, the
    finding's severity is at most the highest of them."""
    if "max_severity" not in rows:
        return severity
    caps = [str(v) for v in rows.column("max_severity") if _plain(v) is not None and str(v) in SEVERITIES]
    if len(caps) < len(rows):
        return severity
    cap = max(caps, key=severity_rank)
    return min(severity, cap, key=severity_rank)


def _floored(severity: str, rows: Rows) -> str:
    """A rule may return a `min_severity` column for what matters although it costs no step time itself
    (a capture that lost its GPU activity): the finding's severity is at least the highest of them."""
    if "min_severity" not in rows:
        return severity
    floors = [str(v) for v in rows.column("min_severity") if _plain(v) is not None and str(v) in SEVERITIES]
    return max([severity, *floors], key=severity_rank)


def _with_narration(finding: Finding) -> Finding:
    return replace(finding, narration=narrate(finding))



def _op_names(values: tuple[str, ...]) -> tuple[str, ...]:
    """Op names from op columns, some of which list several with counts ("aten::add_ x900, aten::mul_ x12")."""
    names = (re.sub(r" x\d+$", "", part.strip()) for v in values for part in v.split(", "))
    return tuple(dict.fromkeys(n for n in names if n))[:5]


def _values(rows: Rows, columns) -> tuple[str, ...]:
    for column in columns:
        if column in rows:
            return tuple(dict.fromkeys(str(v) for v in present(rows, column) if str(v)))[:5]
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
