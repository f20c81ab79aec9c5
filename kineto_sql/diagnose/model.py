"""What a diagnosis is made of: a verdict on the step, ranked findings, and what was skipped and why.

Frozen dataclasses, serialised by `to_json()` into the documented schema (kineto_sql/diagnose/schema.json).
Keys are stable: CI jobs gate on them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA_VERSION = 1
SEVERITIES = ("info", "low", "medium", "high")


def severity_rank(name: str) -> int:
    return SEVERITIES.index(name)


@dataclass(frozen=True)
class StepRow:
    step: int
    dur_ns: int
    cpu_busy_ns: int | None
    gpu_busy_ns: int | None
    gpu_occupancy_pct: float | None


@dataclass(frozen=True)
class LedgerBucket:
    """One bucket of the step-time ledger (reading.step_ledger) over the steady windows."""

    bucket: str
    dur_ns: int
    pct: float


@dataclass(frozen=True)
class LedgerWindow:
    """One window of the step-time ledger (reading.step_ledger): its step (None for a window that is no
    ProfilerStep), whether it is cold, and its time per bucket (window time x devices, summed over devices)."""

    step: int | None
    cold: bool
    buckets: tuple[tuple[str, int], ...]

    def to_json(self) -> dict:
        return {"step": self.step, "cold": self.cold, "buckets": dict(self.buckets)}


@dataclass(frozen=True)
class Verdict:
    """The first thing a person reads: how long a step is, how busy the GPU is, which regime.

    Everything comes from reading.verdict and reading.step_ledger (SQL); `regime_reason` is the verdict's
    sentence. `lane_ns` (steady window time x devices) is the denominator of every finding's share. When the
    steady windows are too small a sample (`steady_representative` False, kineto.lib.steady_sample says why
    in `sample_sentence`), lane_ns and the shares are of every window, cold ones included."""

    steps: int
    median_step_ns: int | None
    total_step_ns: int | None
    gpu_occupancy_pct: float | None
    regime: str
    regime_reason: str
    has_gpu: bool
    per_step: tuple[StepRow, ...] = ()
    window_source: str | None = None
    cold_windows: int = 0
    cold_ns: int = 0
    lane_ns: int | None = None
    compute_pct: float | None = None
    comm_pct: float | None = None
    idle_pct: float | None = None
    ledger: tuple[LedgerBucket, ...] = ()
    steady_representative: bool = True
    sample_sentence: str | None = None
    # every window's buckets, in time order: the `ledger` above is their sum over the analysed windows
    ledger_windows: tuple[LedgerWindow, ...] = ()

    def to_json(self) -> dict:
        return {
            "steps": self.steps,
            "median_step_ns": self.median_step_ns,
            "total_step_ns": self.total_step_ns,
            "gpu_occupancy_pct": self.gpu_occupancy_pct,
            "regime": self.regime,
            "regime_reason": self.regime_reason,
            "has_gpu": self.has_gpu,
            "per_step": [vars(s) for s in self.per_step],
            "window_source": self.window_source,
            "cold_windows": self.cold_windows,
            "cold_ns": self.cold_ns,
            "lane_ns": self.lane_ns,
            "compute_pct": self.compute_pct,
            "comm_pct": self.comm_pct,
            "idle_pct": self.idle_pct,
            "ledger": [vars(b) for b in self.ledger],
            "steady_representative": self.steady_representative,
            "sample_sentence": self.sample_sentence,
            "ledger_windows": [w.to_json() for w in self.ledger_windows],
        }


@dataclass(frozen=True)
class Where:
    steps: tuple[int, ...]
    ts_ns: int | None
    end_ns: int | None
    ops: tuple[str, ...]
    python_lines: tuple[str, ...]


@dataclass(frozen=True)
class Finding:
    """One detector that fired, with all its rows summed into one ranked item."""

    query_id: str
    id_version: str
    title: str
    catalog_row: str
    severity: str
    count: int
    impact_ns: int
    impact_pct: float | None
    evidence: tuple[str, ...]
    signature: str
    confirming: str
    fix: str
    where: Where
    reproduce: tuple[str, ...]
    narration: str = ""
    numbers: dict = field(default_factory=dict)
    # The ledger buckets the impact was claimed from (empty: the rule claims none); `estimate_ns` is what the
    # rule itself estimated before claims were resolved; `scope` is steady or cold (kept out of the ranking).
    claims: tuple[str, ...] = ()
    claimed: dict = field(default_factory=dict)
    estimate_ns: int | None = None
    scope: str = "steady"
    # True when the share is of every window, cold ones included (the steady sample was too small to be
    # the denominator: Verdict.steady_representative is False).
    of_capture: bool = False
    # what claim resolution gave it per window: (step, bucket, ns); `claimed` is their sum per bucket
    claimed_windows: tuple = field(default=(), compare=False)
    # What fixing it buys (kineto_sql.whatif): the predicted median step, the saving, and the prediction
    # (basis replay or upper bound, range, the change, why it is an upper bound); None when not predicted.
    predicted_step_ns: int | None = None
    saving_ns: int | None = None
    prediction: dict | None = None
    # the cost per window: impact_ns over the windows it is drawn from (the steady ones, every window when
    # of_capture); None for a one-time (cold) finding or a capture without windows
    per_step_ns: int | None = None
    # In a rank directory, what the cross-rank reading says about this rank's finding (kineto_sql/fleet/run.py:
    # who the straggler is, whom this wait is for); None on a single trace or when it says nothing here.
    cross_rank_note: str | None = None
    # Seen in at most half of the steady windows (diagnose.run.is_outlier): it describes outlier steps.
    outlier: bool = False
    # What the ranking reads (diagnose.run.rank_findings): impact_ns, or for an outlier what the median
    # steady window claims times the steady windows (0 when it is seen in fewer than half of them).
    rank_ns: int | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        return {
            "query_id": self.query_id,
            "id_version": self.id_version,
            "title": self.title,
            "catalog_row": self.catalog_row,
            "severity": self.severity,
            "count": self.count,
            "impact_ns": self.impact_ns,
            "impact_pct": self.impact_pct,
            "evidence": list(self.evidence),
            "signature": self.signature,
            "confirming": self.confirming,
            "fix": self.fix,
            "where": {
                "steps": list(self.where.steps), "ts_ns": self.where.ts_ns, "end_ns": self.where.end_ns,
                "ops": list(self.where.ops), "python_lines": list(self.where.python_lines),
            },
            "reproduce": list(self.reproduce),
            "narration": self.narration,
            "numbers": self.numbers,
            "claims": list(self.claims),
            "claimed_ns": dict(self.claimed),
            "estimate_ns": self.estimate_ns,
            "scope": self.scope,
            "of_capture": self.of_capture,
            "predicted_step_ns": self.predicted_step_ns,
            "saving_ns": self.saving_ns,
            "prediction": self.prediction,
            "per_step_ns": self.per_step_ns,
            "cross_rank_note": self.cross_rank_note,
        }


@dataclass(frozen=True)
class Skipped:
    query_id: str
    reason: str


@dataclass(frozen=True)
class TraceDiagnosis:
    """One trace (or one rank of a directory)."""

    source: str
    rank: int | None
    verdict: Verdict
    findings: tuple[Finding, ...]
    silent: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    loader_fixes: tuple[str, ...]
    errors: tuple[Skipped, ...] = ()
    # Top rows of reading.op_table (where device / CPU time goes by op, whole-trace totals), plain dicts.
    top_ops: tuple[dict, ...] = ()
    # What the load lost (only with --allow-loss; one sentence per cause), empty when every event was kept.
    loss: tuple[str, ...] = ()
    # The capture: engine kind and devices from deviceProperties (name, memory), for report headers.
    engine: str = ""
    devices: tuple[str, ...] = ()
    # The top findings' fixes replayed together (kineto_sql.whatif), or None; the ledger buckets on the
    # steady windows' critical path (reading.critical_path): ({bucket, dur_ns, pct}, ...).
    combined_prediction: dict | None = None
    critical_path: tuple[dict, ...] = ()

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "rank": self.rank,
            "verdict": self.verdict.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "silent": list(self.silent),
            "skipped": [vars(s) for s in self.skipped],
            "errors": [vars(s) for s in self.errors],
            "loader_fixes": list(self.loader_fixes),
            "top_ops": list(self.top_ops),
            "loss": list(self.loss),
            "engine": self.engine,
            "devices": list(self.devices),
            "combined_prediction": self.combined_prediction,
            "critical_path": list(self.critical_path),
        }


@dataclass(frozen=True)
class Diagnosis:
    """The whole answer: one TraceDiagnosis per trace/rank, and the cross-rank reading for a directory."""

    target: str
    traces: tuple[TraceDiagnosis, ...]
    ranks_summary: dict | None = None
    elapsed_s: float = 0.0
    # Rank files of a directory that could not be loaded, one sentence each (the others are diagnosed).
    failed_ranks: tuple[str, ...] = ()
    # A directory's job critical path across ranks (kineto_sql.whatif.ranks.path_rows): per steady step,
    # {step, rank, bucket, ms, pct} rows, largest first; () for one trace or where no two ranks have a graph.
    job_critical_path: tuple[dict, ...] = ()

    @property
    def names_straggler(self) -> bool:
        """The cross-rank reading names a straggler (rank 0 included): the multi-rank diagnosis leads with it."""
        return bool(self.ranks_summary) and self.ranks_summary.get("straggler") is not None

    @property
    def worst_severity(self) -> str:
        found = [f.severity for t in self.traces for f in t.findings]
        if self.names_straggler:
            found.append("high")
        return max(found, key=severity_rank) if found else "info"

    def has_finding_at(self, severity: str) -> bool:
        """Whether any finding (or a named straggler, counted as high) is at or above `severity`."""
        found = [f.severity for t in self.traces for f in t.findings]
        if self.names_straggler:
            found.append("high")
        return any(severity_rank(s) >= severity_rank(severity) for s in found)

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "target": self.target,
            "worst_severity": self.worst_severity,
            "traces": [t.to_json() for t in self.traces],
            "ranks_summary": self.ranks_summary,
            "elapsed_s": round(self.elapsed_s, 3),
            "failed_ranks": list(self.failed_ranks),
            **({"job_critical_path": list(self.job_critical_path)} if self.job_critical_path else {}),
        }
