"""The job's critical path across ranks from a fleet run: each rank's graph comes back with its task (the
`graph` part, read on the one load that served the rank's other parts), the ranks' clocks are the fleet's
(fleet.clock_offsets), and kineto_sql.whatif.ranks joins them at their collectives, walks the path and
replays each rank's findings' fixes in the job."""
from __future__ import annotations

import math
from dataclasses import replace

from kineto_sql.errors import KinetoSqlError

REPLAY = "replay"


def join_offsets(graphs: list, clock) -> dict[int, int]:
    """rank -> ns to take off its graph's clock to put it on the first rank's: fleet.clock_offsets' estimate
    (on the traces' own clocks, so less what the loader took off each), 0 where it has none. The estimate,
    not only the applied offset: a job whose calls do not all match still joins the calls that do."""
    offset_ns = {}
    if clock is not None and len(clock):
        for rank, us in zip(clock["rank"], clock["offset_us"]):
            if us is not None and not (isinstance(us, float) and math.isnan(us)):
                offset_ns[int(rank)] = round(float(us) * 1000)
    ref = graphs[0].rebased_ns if graphs else 0
    return {g.rank: offset_ns.get(g.rank, 0) - g.rebased_ns + ref for g in graphs}


def job_critical_path(graphs: list, clock, traces=None) -> tuple[list[dict], list]:
    """(per steady step, the job's critical path by (rank, ledger bucket), kineto_sql.whatif.ranks.path_rows;
    `traces` (each rank's TraceDiagnosis) with every replayed fix's prediction told what it buys the job).
    ([], traces) with fewer than two ranks' graphs."""
    from kineto_sql.whatif.ranks import join, path_rows
    from kineto_sql.whatif.replay import replay

    traces = list(traces or [])
    graphs = sorted(graphs, key=lambda g: g.rank)
    if len(graphs) < 2:
        return [], traces
    try:
        offsets = join_offsets(graphs, clock)
        job = join(graphs, offsets)
        result = replay(job.graph)
        rows = path_rows(job, result)
        memo: dict = {}
        return rows, [_with_job(t, graphs, offsets, job, memo) for t in traces]
    except KinetoSqlError:
        return [], traces


def _with_job(trace, graphs: list, offsets: dict, base, memo: dict):
    """The trace's findings whose fix was replayed on its rank, with `prediction.job`: the same fix replayed in
    the job's graph (kineto_sql.whatif.ranks.job_prediction), said in the finding's 'fixing this' line."""
    from kineto_sql.diagnose.run import _with_narration as with_narration

    if trace.rank not in {g.rank for g in graphs}:
        return trace
    findings = []
    for f in trace.findings:
        p = f.prediction
        job = _job_prediction(graphs, offsets, trace.rank, p["rules"], base, memo) \
            if p and p.get("basis") == REPLAY else None
        findings.append(with_narration(replace(f, prediction={**p, "job": job})) if job else f)
    return replace(trace, findings=tuple(findings))


def _job_prediction(graphs: list, offsets: dict, rank: int, rules, base, memo: dict):
    """job_prediction, replayed once per fix made on every rank (the same edits whichever rank found it)."""
    from kineto_sql.whatif.edits import EDITS
    from kineto_sql.whatif.ranks import job_prediction

    rules = tuple(rules)
    if not rules or not all(r in EDITS and EDITS[r].every_rank for r in rules):
        return job_prediction(graphs, offsets, rank, rules, base)
    hit = memo.get(rules)
    if hit is not None:
        # the fix's edits do not depend on which rank found it; a rank it leaves untouched has no prediction
        return {**hit, "rank": rank} if rank in hit["ranks"] else None
    out = job_prediction(graphs, offsets, rank, rules, base)
    if out is not None:
        memo[rules] = out
    return out
