"""The job's critical path across ranks from a fleet run: each rank's graph comes back with its task (the
`graph` part, read on the one load that served the rank's other parts), the ranks' clocks are the fleet's
(fleet.clock_offsets), and kineto_sql.whatif.ranks joins them at their collectives and walks the path."""
from __future__ import annotations

import math

from kineto_sql.errors import KinetoSqlError


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


def job_critical_path(graphs: list, clock) -> list[dict]:
    """Per steady step, the job's critical path by (rank, ledger bucket) (kineto_sql.whatif.ranks.path_rows),
    [] with fewer than two ranks' graphs."""
    from kineto_sql.whatif.ranks import join, path_rows
    from kineto_sql.whatif.replay import replay

    graphs = sorted(graphs, key=lambda g: g.rank)
    if len(graphs) < 2:
        return []
    try:
        job = join(graphs, join_offsets(graphs, clock))
        return path_rows(job, replay(job.graph))
    except KinetoSqlError:
        return []
