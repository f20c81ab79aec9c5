"""`kineto-sql open`: what to serve and which URL to open, for a trace and optionally a query or a finding.

The trace is served exactly as the loader prepared it (`PreparedTrace.data`: overlap lanes, id remaps and
rebased timestamps included), so the UI sees the same slices, ids and timestamps as `kineto-sql run`, and a
query's rows and a finding's ts/dur line up in both. The loader's own tables (`kineto_metadata`,
`kineto_ingest_report`) are created in the UI session by the first startup command, from the same SQL the
loader runs, so the UI's SQL session matches the engine's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.load import _add_ingest_tables, prepare_file, rank_of
from kineto_sql.loading.prepare import PreparedTrace
from kineto_sql.sql.files import sections
from kineto_sql.sql.text import strip_comments
from kineto_sql.ui.links import (RUN_QUERY, RUN_QUERY_AND_SHOW_TAB, Command, ViewerLink, findings_commands,
                                 zoom_window)
from kineto_sql.ui.server import UiServer
from kineto_sql.ui.webdist import WebDist, find_web_dist


@dataclass
class Finding:
    """The finding the UI zooms to (the one with the largest impact), and how many there are."""

    query_id: str
    count: int
    ts: int | None = None
    dur: int | None = None
    impact_dur: int | None = None
    evidence: str | None = None
    not_applicable: str | None = None
    bounds: tuple[int, int] | None = None  # the trace's (start_ts, end_ts)


@dataclass
class OpenPlan:
    """What `open` serves and runs: the trace bytes, the startup commands, the zoom."""

    trace_path: Path
    trace_name: str
    data: bytes
    commands: list[Command] = field(default_factory=list)
    vis: tuple[int, int] | None = None
    finding: Finding | None = None
    query_id: str | None = None
    notes: list[str] = field(default_factory=list)

    def link(self, trace_url: str) -> ViewerLink:
        return ViewerLink(
            trace_url=trace_url, commands=tuple(self.commands),
            vis_start=self.vis[0] if self.vis else None, vis_end=self.vis[1] if self.vis else None)


def served_name(path: Path) -> str:
    """`run.pt.trace.json.gz` -> `run.pt.trace.json`: what the UI shows as the title (the bytes are JSON)."""
    name = path.name
    for suffix in (".gz", ".gzip"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name if name.endswith(".json") else name + ".json"


class _SqlCapture:
    """Stands in for the engine to capture the loader's ingest-table SQL (so it is never copied here)."""

    def __init__(self):
        self.statements: list[str] = []

    def query(self, sql: str):
        self.statements.append(sql)


def ingest_tables_sql(prepared: PreparedTrace, path: Path) -> str:
    """The SQL the loader runs after ingest (kineto_metadata, kineto_ingest_report) for this trace."""
    capture = _SqlCapture()
    _add_ingest_tables(capture, prepared, path, rank_of(prepared, None))
    return ";\n".join(strip_comments(s).strip().rstrip(";") for s in capture.statements)


def _get_spec(query_id: str):
    from kineto_sql.catalog import spec as catalog

    return catalog.get(query_id)  # QueryError (one sentence) when unknown or broken


def _int_or_none(value) -> int | None:
    if value is None:
        return None
    try:
        if isinstance(value, float) and math.isnan(value):
            return None
        return int(value)
    except (TypeError, ValueError):
        return None


def plan_open(path, query: str | None = None, finding: str | None = None, params: dict | None = None,
              engine=None, prepared: PreparedTrace | None = None) -> OpenPlan:
    """Prepares the trace and the startup commands for `kineto-sql open`.

    --query ID: the query's paste bundle runs at startup and its rows show in a "Command Query" tab.
    --finding ID: the detector also runs here (so we know where to zoom); in the UI its rows go to the
    `kineto_finding` table, a pinned debug slice track and a results tab, and the view zooms to the finding
    with the largest impact.
    """
    if query and finding:
        raise KinetoSqlError("give --query or --finding, not both")
    path = Path(path)
    spec = bundle = None
    if query or finding:  # check the query and its parameters before reading the trace
        from kineto_sql.devtools.paste import paste_parts

        spec = _get_spec(query or finding)
        if finding and spec.kind != "detector":
            raise KinetoSqlError(f"{spec.id} is a {spec.kind} query, not a detector: use --query {spec.id}")
        bundle = paste_parts(spec, params or None)
    if prepared is None:
        prepared = prepare_file(path)
    plan = OpenPlan(trace_path=path, trace_name=served_name(path), data=prepared.data)
    plan.commands.append(Command(RUN_QUERY, (ingest_tables_sql(prepared, path),)))
    if spec is None:
        return plan
    plan.query_id = spec.id
    if query:
        plan.commands.append(Command(RUN_QUERY_AND_SHOW_TAB, (bundle.text,)))
        return plan

    plan.finding = found = _run_detector_here(path, prepared, spec, params, engine)
    if found.not_applicable:
        plan.notes.append(f"{spec.id} does not apply to this trace: {found.not_applicable}; "
                          "opening the trace without it")
        return plan
    plan.commands += findings_commands(bundle.setup, bundle.call, f"kineto-sql: {spec.id}")
    if found.count == 0:
        plan.notes.append(f"{spec.id} is silent on this trace: no findings (its track and tab stay empty)")
        return plan
    if found.ts is not None and found.bounds:
        # Zoom only: selecting the matching slice too (URL ts/dur) scrolls to that slice after the zoom and
        # leaves the view on whatever the UI's scrollToSelection picks.
        plan.vis = zoom_window(found.ts, found.dur, found.bounds)
    return plan


def _run_detector_here(path: Path, prepared: PreparedTrace, spec, params, engine) -> Finding:
    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_prepared
    from kineto_sql.run.runner import run_query

    tp = open_prepared(prepared, path, engine or EngineChoice())
    try:
        run = run_query(tp, spec, params or None)
        bounds_df = tp.df(sections("trace_info.sql")["trace_bounds"])
    finally:
        tp.close()
    if run.not_applicable:
        return Finding(spec.id, 0, not_applicable=str(run.not_applicable))
    df = run.df
    found = Finding(spec.id, len(df))
    if len(df):
        order = df.assign(_impact=df["impact_dur"].fillna(-1) if "impact_dur" in df else -1)
        best = order.sort_values(["_impact", "ts"], ascending=[False, True], kind="stable").iloc[0]
        found.ts = _int_or_none(best.get("ts"))
        found.dur = _int_or_none(best.get("dur"))
        found.impact_dur = _int_or_none(best.get("impact_dur"))
        found.evidence = None if best.get("evidence") is None else str(best.get("evidence"))
    if len(bounds_df):
        found.bounds = (int(bounds_df.iloc[0]["start_ts"]), int(bounds_df.iloc[0]["end_ts"]))
    return found


@dataclass
class UiSession:
    """A running server with one trace published, and the URLs to open."""

    server: UiServer
    web_dist: WebDist
    plan: OpenPlan
    trace_url: str
    viewer_url: str
    launch_url: str
    owns_server: bool = True

    def close(self) -> None:
        if self.owns_server:
            self.server.close()

    def __enter__(self) -> "UiSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(plan: OpenPlan, port: int = 0, web_dist: WebDist | None = None, server: UiServer | None = None) -> UiSession:
    """Starts a server for `plan` (or publishes into a running `server`, which the session then leaves
    running on close) and returns the session; close() it, or use it as a context manager."""
    web_dist = web_dist or find_web_dist()
    owns = server is None
    if owns:
        server = UiServer(web_dist.root, port).start()
    try:
        trace_url = server.base_url + server.publish(plan.trace_name, plan.data, "application/json")
        viewer_url = plan.link(trace_url).url(server.base_url)
        launch_url = server.set_launch_target(viewer_url)
    except BaseException:
        if owns:
            server.close()
        raise
    return UiSession(server, web_dist, plan, trace_url, viewer_url, launch_url, owns)
