"""Reading a trace the way an expert would: the verdict first (reading.verdict over the step-time ledger),
then every applicable detector, findings summed per detector, each claiming ledger time, ranked by the
share of steady step time they claim.

Claims: a detector's header names the ledger buckets its impact is drawn from (`-- claims:`). The ledger
puts every nanosecond of every window in exactly one bucket, so detectors that claim different buckets
never claim the same time. Where several claim one bucket, the larger estimate claims first and the others
get what is left (`rest of ...` claims go last: they take what no specific cause explained); a rule with
no claims line claims from every steady bucket, last. The claimed time is the finding's impact, so the
steady findings' shares add up to at most 100% of the steady step time. Cold windows are their own pool
(`cold`): catalog.cold_start claims it and ranks after the steady findings.

A capture that is mostly its cold start (kineto.lib.steady_sample: fewer than 3 steady windows holding under
10% of the windows' time) has no steady state to rank against: every share is then of all the windows, and
cold and steady findings are ranked together by the time they claim."""
from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from kineto_sql import catalog
from kineto_sql.diagnose.model import (SEVERITIES, Diagnosis, Finding, LedgerBucket, Skipped, StepRow,
                                       TraceDiagnosis, Verdict, Where, severity_rank)
from kineto_sql.diagnose.narrate import narrate
from kineto_sql.engine.processor import EngineChoice
from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.load import open_trace
from kineto_sql import query_pool
from kineto_sql.includes import kineto_dependencies
from kineto_sql.rows import Rows, column_sum, dur_by, missing, numbers, present, sort_key, truthy
from kineto_sql.runner import capabilities, resolve_spec, run_query, trace_device_name
from kineto_sql.sql_files import sections
from kineto_sql.whatif.annotate import annotate as whatif_annotate, critical_path_shares
from kineto_sql.sql_literals import include_statement

STEP_TABLE = "reading.step_table"
STEP_LEDGER = "reading.step_ledger"
VERDICT = "reading.verdict"
OP_TABLE = "reading.op_table"
RESIDUAL = "rest of "
COLD = "cold"
COMMON = ("ts", "dur", "impact_dur", "step", "evidence", "fix", "max_severity", "min_severity")
# Findings about the capture itself come before every other finding, whatever their impact: a capture
# that lost GPU activity or ran under counter replay makes every other number suspect.
FIRST = ("catalog.capture_validity",)
OP_COLUMNS = ("op", "ops", "op_name", "aten_op", "sync_op", "launching_op")
PYTHON_COLUMNS = ("python_line", "python_frame", "python_lines", "frame")
# impact as % of the steady step time (window time x devices, from the ledger)
SEVERITY_PCT = (("high", 10.0), ("medium", 3.0), ("low", 0.0))

Progress = Callable[[str], None]


def detectors() -> list[catalog.QuerySpec]:
    """The detectors diagnose runs: every detector but the deprecated ones (their successor runs)."""
    return [s for s in catalog.load_catalog().by_kind("detector") if s.status != "deprecated"]


def diagnose_path(target: Path, engine: EngineChoice = EngineChoice(), progress: Progress | None = None,
                  jobs: int = 1, executor=None) -> Diagnosis:
    """A trace, or a rank directory (its ranks as fleet tasks: `jobs` local processes, or `executor`).
    For one trace, `jobs` 2 runs its queries in two processes (diagnose_trace)."""
    started = time.perf_counter()
    failures = []
    if target.is_dir():
        traces, summary, failures = _diagnose_ranks(target, engine, progress, jobs, executor)
    else:
        query_plan()  # Python work done while a loader child (jobs 2) parses, not after the load
        with open_trace(target, engine, jobs=jobs) as tp:
            traces = [diagnose_trace(tp, progress, jobs=min(jobs, 2))]
        summary = None
    traces.sort(key=lambda t: (t.rank is None, t.rank))
    return Diagnosis(str(target), tuple(traces), summary, time.perf_counter() - started,
                     failed_ranks=tuple(f.sentence() for f in failures))


def diagnose_trace(tp, progress: Progress | None = None, jobs: int = 1) -> TraceDiagnosis:
    """`jobs` 2 runs the queries in two processes over the one loaded trace (kineto_sql.query_pool)."""
    source = str(tp.path)
    say = progress or (lambda _: None)
    started = itertools.count(1)
    total = len(query_plan()[0])
    runs = _run_queries(tp, jobs, lambda spec: say(f"{Path(source).name}: rule {next(started)} of {total}: {spec.id}"))
    say(f"{Path(source).name}: step verdict")
    verdict, pools = _verdict(tp, runs)
    denominator = verdict.lane_ns or verdict.total_step_ns or _trace_span(tp)
    # lane_ns already holds the cold windows when the steady sample is too small
    cold_denominator = denominator if not verdict.steady_representative else \
        (verdict.lane_ns or 0) + pools.get(COLD, 0) or denominator
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
    claimed = resolve_claims([(spec, _estimate(df)) for spec, df in fired], pools)
    findings = [_finding(spec, df, cold_denominator if spec.claims == (COLD,) else denominator, source,
                         claimed[spec.id], of_capture=not verdict.steady_representative) for spec, df in fired]
    findings = rank_findings(findings, cold_apart=verdict.steady_representative)
    say(f"{Path(source).name}: what each fix buys")
    findings, combined = whatif_annotate(tp, findings, verdict.has_gpu)
    path = critical_path_shares(tp)
    fixes = tuple(f"{f.kind}: {f.count}" for f in tp.report.fixes)
    return TraceDiagnosis(source, tp.rank, verdict, tuple(findings), tuple(silent), tuple(skipped), fixes,
                          tuple(errors), _top_ops(runs[OP_TABLE]), loss=tuple(tp.report.loss_sentences()),
                          engine=tp.choice.kind, devices=_devices(tp), combined_prediction=combined,
                          critical_path=path)


def _run_queries(tp, jobs: int, on_start) -> dict[str, query_pool.Outcome]:
    """The verdict, the ledger, every detector and the op table, by id."""
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
    specs = [resolve_spec(VERDICT), resolve_spec(OP_TABLE), resolve_spec(STEP_LEDGER)] + detectors()
    return specs, {spec.id: kineto_dependencies(spec.path.read_text()) + [spec.module] for spec in specs}


def _estimate(rows: Rows) -> int:
    if "impact_dur" not in rows:
        return 0
    return int(column_sum(max(v, 0) for v in numbers(rows.column("impact_dur"), missing_as=0)))




def _expand(claim: str, pools: dict[str, int]) -> list[str]:
    """`busy.*` names every bucket of a kind; a plain name is itself."""
    if claim.endswith(".*"):
        prefix = claim[:-1]
        return sorted(b for b in pools if b.startswith(prefix))
    return [claim]


def resolve_claims(estimates, pools: dict[str, int]) -> dict[str, dict[str, int]]:
    """What each detector's finding claims: at most its own estimate, at most what is left of its buckets.

    `estimates` is [(spec, estimate_ns)], `pools` the ledger time per bucket (steady windows) plus `cold`.
    Order: rules with specific claims by estimate (largest first, then id), then `rest of` claims, then rules
    without a claims line (which claim from every steady bucket). No bucket is ever claimed twice over.
    Returns, per detector id, the time taken from each bucket (its impact is their sum)."""
    left = dict(pools)
    steady = [b for b in pools if b != COLD]

    def order(item):
        spec, estimate = item
        claims = spec.claims
        tier = 2 if not claims else (1 if claims[0].startswith(RESIDUAL) else 0)
        return tier, -estimate, spec.id

    out = {}
    for spec, estimate in sorted(estimates, key=order):
        claims = [c.removeprefix(RESIDUAL) for c in spec.claims] or steady
        buckets = [b for c in claims for b in _expand(c, left)]
        want, taken = estimate, {}
        for bucket in buckets:
            take = min(want, left.get(bucket, 0))
            if take > 0:
                left[bucket] -= take
                taken[bucket] = take
                want -= take
            if want <= 0:
                break
        out[spec.id] = taken
    return out


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
    """Capture validity first; then steady findings by claimed step time, ties by severity, then id; cold-start
    findings last (one-time work is kept out of the steady-state ranking). With `cold_apart` False (the
    steady sample is too small to stand for a steady state) cold findings rank with the others by the time
    they claim."""
    return sorted(findings, key=lambda f: (f.query_id not in FIRST, cold_apart and f.scope == "cold",
                                           -f.impact_ns, -severity_rank(f.severity), f.query_id))


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
    pools = {str(b): int(d) for b, d in dur_by(steady, "bucket").items()}
    pools[COLD] = int(column_sum(r["dur"] for r in ledger if truthy(r["is_cold"])))
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
        per_step=_per_step(ledger),
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
    ), pools





def _busy_pct(steady: list[dict], lane_ns: int | None) -> float | None:
    busy = int(column_sum(r["dur"] for r in steady if r["kind"] == "busy"))
    return round(100.0 * busy / lane_ns, 1) if lane_ns else None


def _per_step(ledger: list[dict]) -> tuple[StepRow, ...]:
    """One row per window, read on its busiest device (host-only ledgers: ATen-op time as CPU busy)."""
    windows: dict = {}
    for row in ledger:
        if missing(row["window_id"]) or missing(row["step"]):
            continue
        windows.setdefault((row["window_id"], row["step"]), []).append(row)
    rows = []
    for (window, step) in sorted(windows, key=lambda k: (sort_key(k[0]), sort_key(k[1]))):
        group = windows[(window, step)]
        width = int(group[0]["window_dur"])
        busy = dur_by([r for r in group if r["kind"] == "busy"], "device", keep_missing=True)
        gpu = int(max(busy.values())) if busy else None
        host = column_sum(r["dur"] for r in group if r["bucket"] == "host.ops")
        rows.append(StepRow(step=int(step), dur_ns=width, cpu_busy_ns=int(host) if host else None,
                            gpu_busy_ns=gpu, gpu_occupancy_pct=round(100.0 * gpu / width, 2) if gpu and width else
                            (0.0 if any(not missing(r["device"]) for r in group) else None)))
    return tuple(rows)


def _int(value):
    value = _num(value)
    return int(value) if value is not None else None


def _float(value):
    value = _num(value)
    return round(float(value), 2) if value is not None else None


def _finding(spec, rows: Rows, denominator: int | None, source: str,
             claimed: dict[str, int] | None = None, of_capture: bool = False) -> Finding:
    estimate = _estimate(rows)
    impact = estimate if claimed is None else sum(claimed.values())
    pct = round(100.0 * impact / denominator, 2) if denominator else None
    severity = severity_for(impact, pct)
    cold = spec.claims == (COLD,)
    if cold:
        # one-time work: reported, never ranked with (or as severe as) a steady-state cost
        severity = min(severity, "low", key=severity_rank)
    evidence = tuple(dict.fromkeys(str(e) for e in present(rows, "evidence")))[:3]
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
        ops=_values(rows, OP_COLUMNS),
        python_lines=_values(rows, PYTHON_COLUMNS),
    )
    if "impact_dur" in rows:
        impacts = numbers(rows.column("impact_dur"), missing_as=0)
        worst = rows.record(impacts.index(max(impacts)))  # the first of the largest, as numpy's argmax
    else:
        worst = rows.record(0)
    figures = {c: _plain(worst[c]) for c in rows.columns if c not in COMMON and _plain(worst[c]) is not None}
    severity = _floored(_capped(severity, rows), rows)
    finding = Finding(
        query_id=spec.id,
        id_version=spec.id_version,
        title=spec.title,
        catalog_row=spec.source,
        severity=severity,
        count=len(rows),
        impact_ns=impact,
        impact_pct=pct,
        evidence=evidence,
        signature=spec.signature or "",
        confirming=spec.confirming or "",
        fix=row_fix(worst) or spec.fix or "",
        where=where,
        reproduce=(f"kineto-sql run {spec.id} {source}", f"kineto-sql show {spec.id} --paste",
                   f"kineto-sql open {source} --finding {spec.id}"),
        numbers=figures,
        claims=spec.claims,
        claimed=dict(claimed or {}),
        estimate_ns=estimate,
        scope="cold" if cold else "steady",
        of_capture=of_capture and not cold,
    )
    return _with_narration(finding)


def row_fix(row) -> str | None:
    """A rule may return a `fix` column whose text follows the cause it found (a pageable copy wants
    pin_memory, `.item()` a deferred read); the finding uses its worst row's, else the header's."""
    value = _plain(row.get("fix")) if hasattr(row, "get") else None
    return str(value) if value else None


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


def _diagnose_ranks(target: Path, engine: EngineChoice, progress: Progress | None, jobs: int, executor=None):
    """Every rank as a fleet task (kineto_sql.fleet: at most `jobs` local processes, or a cluster), one load
    per rank serving its diagnosis and the HTA tables; then the cross-rank straggler reading, in DuckDB SQL
    over those tables (queries/fleet/)."""
    from kineto_sql.fleet.analysis import summary_dict
    from kineto_sql.fleet.executors import LocalExecutor
    from kineto_sql.fleet.run import run_fleet

    say = progress or (lambda _: None)

    def done(finished, total, _failed):
        say(f"ranks: {finished} of {total} diagnosed")

    run = run_fleet(target, parts=("hta", "diagnose"), executor=executor or LocalExecutor(jobs), engine=engine,
                    keep_diagnosis=True, on_done=done)
    summary = summary_dict(run.report)
    return [agree_with_ranks(t, summary) for t in run.diagnoses], summary, run.failures


STRAGGLER = "catalog.straggler_rank"


def agree_with_ranks(trace: TraceDiagnosis, summary: dict | None) -> TraceDiagnosis:
    """One rank's straggler finding (it waits in collectives far longer than it works) cannot tell a slower
    peer from a slow transfer; the cross-rank reading compares the same quantities (kineto.lib.rank_balance)
    across ranks and can. In a rank directory the finding stays only where that reading names another rank
    the straggler (its evidence then says which); otherwise it is set aside with the reason, so the two
    readings never contradict each other."""
    ours = [f for f in trace.findings if f.query_id == STRAGGLER]
    if not ours or not summary:
        return trace
    named = summary.get("straggler")
    if named is not None and named != trace.rank:
        note = (f"The cross-rank reading names rank {named} the straggler "
                f"({summary.get('quantity')}, {summary.get('excess_pct_of_step')}% of a step).")
        findings = tuple(_with_narration(replace(f, evidence=(note, *f.evidence))) if f.query_id == STRAGGLER
                         else f for f in trace.findings)
        return replace(trace, findings=findings)
    reason = (f"{STRAGGLER} fired on this rank, but the cross-rank reading over {summary.get('ranks')} ranks "
              + ("names this rank itself the straggler" if named is not None else "names no straggler")
              + ": its wait in collectives is the collectives' own time (see catalog.exposed_communication), "
              "not a slower peer.")
    return replace(trace, findings=tuple(f for f in trace.findings if f.query_id != STRAGGLER),
                   skipped=(*trace.skipped, Skipped(STRAGGLER, reason)))
