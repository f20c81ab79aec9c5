"""The prediction of every finding, added to diagnose's findings after they are ranked: one graph load and
one replay per finding (plus one for the top findings together) per trace."""
from __future__ import annotations

from dataclasses import replace

from kineto_sql.errors import KinetoSqlError
from kineto_sql.whatif.buckets import name_segments, node_pieces
from kineto_sql.whatif.edits import EDITS
from kineto_sql.whatif.graph import graph_of
from kineto_sql.whatif.predict import UPPER_BOUND, Prediction, predict, steady_windows
from kineto_sql.whatif.replay import replay

# how many of the top findings are replayed together ("what fixing the top 3 buys")
TOGETHER = 3


def annotate(tp, findings, has_device: bool) -> tuple[list, dict | None]:
    """(findings with their prediction, in the order given; the top findings' prediction together or None).
    Each predicted finding's narration leads with its headline (kineto_sql.diagnose.narrate writes it).

    The order stays the claimed-time ranking. Ranking by the replayed saving was tried and reverted: on
    hta_trace_diff_control overlapping the exposed collective replays to ~0 ms against 19% of the step
    exposed. That is not a missing launch-queue back-pressure edge (its launches take 6 us at the median,
    42 of 8,568 over 20 us: the queue never fills); the step is host-bound: the forward's launches, the
    caller of backward() waiting for the autograd engine's thread (fork / join edges), and host reads
    that wait on the data-dependent all-to-alls. With those edges the replay still says 0.06 ms for the
    overlap, and the blocking copy and the stream sync each replay to < 0.1 ms alone but 76.8 -> 64.4 ms
    together: every blocking copy there is followed by a stream sync that waits for the same all-to-all,
    so the host waits twice for the same work and removing one wait leaves the other. A ranking by each
    finding's own replayed saving would put all three last, under findings sized by their claim (an
    upper bound), so it is not adopted; the top findings replayed together carry that answer. On a CPU
    capture a host read saves nothing by construction."""
    try:
        graph = graph_of(tp)
    except KinetoSqlError:
        return list(findings), None
    steady = max(len(steady_windows(graph)), 1)
    every = max(int(graph.is_end.sum()), 1)
    out, claims = [], {}
    for f in findings:
        if f.scope == "cold":
            out.append(f)
            continue
        # the claimed time is of the steady windows, or of every window when the steady sample was too small
        per_step = f.impact_ns // (every if f.of_capture else steady)
        claims[f.query_id] = claims.get(f.query_id, 0) + per_step
        p = predict(graph, [f.query_id], has_device, claimed_per_step_ns=per_step)
        # an upper bound of nothing says nothing
        out.append(f if p.basis == UPPER_BOUND and f.impact_ns == 0 else with_prediction(f, p))
    together = [f.query_id for f in out if f.scope != "cold" and f.query_id in EDITS][:TOGETHER]
    combined = None
    if len(together) > 1:
        combined = predict(graph, together, has_device,
                           claimed_per_step_ns=sum(claims[r] for r in together)).to_json()
        combined["headline"] = headline(combined, f"fixing the top {len(together)} together")
    return out, combined


def with_prediction(finding, p: Prediction):
    body = p.to_json()
    edit = EDITS.get(finding.query_id)
    # a fix with no graph edit (or nothing to edit here) is sized by the time the finding claims
    doing = edit.doing if edit and p.basis != UPPER_BOUND else "if the time it claims vanished"
    body["headline"] = headline(body, doing)
    return replace(finding, predicted_step_ns=p.predicted_step_ns, saving_ns=p.saving_ns, prediction=body)


def headline(p: dict, doing: str) -> str:
    """'removing the host sync: step 176.0 -> 131.2 ms, -25.5%' (a replayed prediction), or 'if the time
    it claims vanished: step 176.0 -> at best 150.0 ms, -14.8% (an upper bound)'; '' without a measured
    step."""
    if not p.get("measured_step_ns"):
        return ""
    before, after = p["measured_step_ns"] / 1e6, p["predicted_step_ns"] / 1e6
    pct = p["saving_pct"] or 0.0
    if p["basis"] == UPPER_BOUND:
        return f"{doing}: step {before:.1f} -> at best {after:.1f} ms, -{pct:.1f}% (an upper bound)"
    return f"{doing}: step {before:.1f} -> {after:.1f} ms, -{pct:.1f}%"


def sentence(p: dict | None) -> str | None:
    """'fixing this: step 176.0 -> 131.2 ms (-25.5%, range 20.1-45.0 ms)', or the upper bound and why."""
    if not p or not p.get("measured_step_ns"):
        return None
    before, after = p["measured_step_ns"] / 1e6, p["predicted_step_ns"] / 1e6
    pct = p["saving_pct"] or 0.0
    low, high = (x / 1e6 for x in p["saving_range_ns"])
    if p["basis"] == UPPER_BOUND:
        return (f"fixing this: step {before:.1f} -> at best {after:.1f} ms (-{pct:.1f}%, an upper bound: "
                f"{p['reason']})")
    spread = f", range {low:.1f}-{high:.1f} ms" if abs(high - low) >= 0.05 else ""
    # a replayed saving above the finding's claim was capped at the claim (predict's reason says so)
    capped = ", capped at the time it claims" if p.get("reason") else ""
    return (f"fixing this: step {before:.1f} -> {after:.1f} ms (-{pct:.1f}%{spread}; {p['change']}{capped})"
            + job_clause(p.get("job"), p.get("saving_ns") or 0))


def job_clause(job: dict | None, own_saving_ns: int) -> str:
    """In a rank directory, what the fix on this rank buys the job (kineto_sql.whatif.ranks.job_prediction):
    '; across ranks the job's step 19.9 -> 19.3 ms (-3.0%)', or that it stays (where the rank's own step
    would shrink: it waits at the collectives for another rank either way); a fix made on every rank at once
    '; done on all 8 ranks, the job's step ...'."""
    if not job or not job.get("measured_step_ns"):
        return ""
    before, after = job["measured_step_ns"] / 1e6, job["predicted_step_ns"] / 1e6
    edited = job.get("ranks") or [job.get("rank")]
    # a fix every rank makes at once (a collective's overlap, Edit.every_rank) is said so
    where = f"; done on all {len(edited)} ranks," if len(edited) > 1 else "; across ranks"
    if job["saving_ns"] <= 0 or job["saving_pct"] < 0.05:
        why = ": this rank would wait at the collectives for another rank instead" \
            if own_saving_ns > 0 and len(edited) == 1 else ""
        return f"{where} the job's step stays {before:.1f} ms{why}"
    low, high = (x / 1e6 for x in job["saving_range_ns"])
    spread = f", range {low:.1f}-{high:.1f} ms" if abs(high - low) >= 0.05 else ""
    return f"{where} the job's step {before:.1f} -> {after:.1f} ms (-{job['saving_pct']:.1f}%{spread})"


def critical_path_shares(tp) -> tuple[dict, ...]:
    """The ledger buckets on the critical path of the steady windows (every window when all are cold):
    ({bucket, dur_ns, pct}, ...), largest first; () where no window has a path. The path is the replay's
    (Replay.segments, the walk reading.critical_path makes over the same edges), named with the buckets
    of reading.critical_path (kineto_sql.whatif.buckets): the reading's SQL walk and its own host-state
    cut of every segment cost diagnose about as much again as the graph."""
    try:
        graph = graph_of(tp)
        pieces = node_pieces(tp)
    except KinetoSqlError:
        return ()
    result = replay(graph)
    # the steady windows with a path, else every window with one (a cold window is walked only then)
    paths = {w: p for w in graph.windows if not graph.windows[w][3] and (p := result.segments(graph, w))}
    if not paths:
        paths = {w: p for w in graph.windows if (p := result.segments(graph, w))}
    steady = list(paths)
    total = sum(graph.windows[w][1] for w in steady)
    if not total:
        return ()
    named: dict = {}
    name_segments(named, None, graph, result, (s for w in steady for s in paths[w]), pieces)
    per_bucket = {bucket: ns for (_, bucket), ns in named.items()}
    return tuple({"bucket": b, "dur_ns": d, "pct": round(100.0 * d / total, 1)}
                 for b, d in sorted(per_bucket.items(), key=lambda x: (-x[1], x[0])))
