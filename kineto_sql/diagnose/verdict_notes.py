"""What a host-bound verdict adds to its sentence.

Overhead- or compute-bound on a capture without device activity: the beginner's guide's own split
(guide.overhead_vs_compute, "Identifying Bottlenecks: Overhead-Bound vs. Compute-Bound"). Without a device
column the guide reads the outermost ATen calls: when most are shorter than its small-call bound, per-op
dispatch and the Python around it set the pace (overhead-bound: fuse, torch.compile, batch the work);
otherwise the ops' own CPU work does (compute-bound: a faster kernel, a lower precision, less work).

On a capture with Python stacks, that the host time it sizes is inflated."""
from __future__ import annotations

from dataclasses import replace

from kineto_sql.diagnose.model import Verdict
from kineto_sql.errors import KinetoSqlError
from kineto_sql.engine.rows import missing
from kineto_sql.run.runner import run_query

GUIDE = "guide.overhead_vs_compute"
WORDS = {
    "overhead-bound": "overhead-bound by the beginner's guide's split ({pct:.0f}% of the outermost ATen calls are "
                      "shorter than {small:.0f} us: dispatch and Python set the pace; fuse small ops, "
                      "torch.compile, larger per-call work)",
    "compute-bound": "compute-bound by the beginner's guide's split (only {pct:.0f}% of the outermost ATen calls "
                     "are shorter than {small:.0f} us: the ops' own CPU work sets the pace; less or cheaper "
                     "work per op)",
}


def with_split(tp, verdict: Verdict) -> Verdict:
    """The verdict with the guide's reading appended to its sentence, on a host-bound capture without
    device activity; unchanged elsewhere, or when the guide cannot read the trace."""
    if verdict.has_gpu or verdict.regime != "host-bound":
        return verdict
    try:
        run = run_query(tp, GUIDE)
    except KinetoSqlError:
        return verdict
    if run.not_applicable or run.rows.empty:
        return verdict
    trace_rows = [r for r in run.rows.records() if r["level"] == "trace"]
    if not trace_rows or missing(trace_rows[0]["small_call_pct"]) or trace_rows[0]["reading"] not in WORDS:
        return verdict
    row = trace_rows[0]
    small_us = float(run.params["small_op"]) / 1e3
    split = WORDS[row["reading"]].format(pct=float(row["small_call_pct"]), small=small_us)
    return replace(verdict, regime_reason=f"{verdict.regime_reason}; {split}")


STACK_CAVEAT = ("captured with with_stack=True, which slows the host 2-3x on Python-heavy steps: re-profile "
                "without with_stack before sizing the host-bound time")


def with_stack_caveat(verdict: Verdict, has_stacks: bool) -> Verdict:
    """A host-bound verdict on a capture with Python stacks ("torch.profiler & HTA: the Framework View", Fault
    catalog, minor fault "with_stack overhead":
    fine for attribution runs, wrong for timing runs) says so: the host time it sizes is inflated."""
    if not has_stacks or verdict.regime != "host-bound":
        return verdict
    return replace(verdict, regime_reason=f"{verdict.regime_reason}; {STACK_CAVEAT}")
