"""`kineto-sql mcp`: the tools a coding agent reads a trace with, over MCP's stdio transport (no network).

Every tool answers the JSON envelope of the CLI's `--format json` (kineto_sql/envelope.py):
`{"schema_version": N, "command": TOOL, "result": ...}` or `{..., "error": {"kind": ..., "message": ...}}`. Traces stay loaded between calls (the last few, by path), so an agent that
asks several questions of one trace pays for one load. Needs the optional `mcp` package
(`pip install 'kineto-sql[mcp]'`)."""
from __future__ import annotations

import functools
import json
from collections import OrderedDict
from pathlib import Path

from kineto_sql import envelope as envelopes
from kineto_sql.errors import DataLossError, KinetoSqlError

SCHEMA_VERSION = envelopes.SCHEMA_VERSION
ROW_LIMIT = 200
OPEN_TRACES = 2


def envelope(call):
    """The tool's value as a result, or a KinetoSqlError as its sentence: never a traceback."""
    @functools.wraps(call)
    def wrapper(*args, **kwargs) -> str:
        try:
            body = envelopes.ok(call.__name__, call(*args, **kwargs))
        except DataLossError as exc:
            body = envelopes.error(call.__name__, str(exc), "data_loss")
        except KinetoSqlError as exc:
            body = envelopes.error(call.__name__, str(exc), "bad_input")
        return envelopes.dumps(body, indent=False)
    return wrapper


class Traces:
    """The traces an agent has loaded, the most recent OPEN_TRACES kept open."""

    def __init__(self, limit: int = OPEN_TRACES):
        self.limit = limit
        self.open: OrderedDict[Path, object] = OrderedDict()

    def get(self, path: str):
        from kineto_sql.api.notebook import Trace

        key = Path(path).resolve()
        if key not in self.open:
            self.open[key] = Trace(key)
            while len(self.open) > self.limit:
                self.open.popitem(last=False)[1].close()
        self.open.move_to_end(key)
        return self.open[key]

    def close(self) -> None:
        while self.open:
            self.open.popitem()[1].close()


def _rows(df, limit: int) -> dict:
    records = json.loads(df.head(limit).to_json(orient="records"))
    return {"columns": list(df.columns), "rows": records, "total_rows": len(df), "truncated": len(df) > limit}


def build_server(traces: Traces | None = None):
    from mcp.server.mcpserver import MCPServer

    from kineto_sql.catalog.spec import load_catalog
    from kineto_sql.run.runner import resolve_spec

    traces = traces or Traces()
    server = MCPServer("kineto-sql", instructions=(
        "Read PyTorch profiler (Kineto) traces: load_trace first, then diagnose for what is wrong with the "
        "step, run_rule / sql for the evidence. Durations are in ns."))

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def load_trace(path: str) -> dict:
        """Load a Kineto trace (.json or .json.gz) and say what the loader changed so that nothing is lost."""
        t = traces.get(path)
        slices = t.query("SELECT count(*) AS n FROM slice")["n"].iloc[0]
        return {"path": str(t.path), "slices": int(slices), "loader_changes": [str(f) for f in t.report.fixes]}

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def list_rules(kind: str | None = None) -> list[dict]:
        """The versioned queries: reading order, guide indicators, fault detectors (kind 'detector'), HTA."""
        return [{"id": s.id, "version": s.version, "kind": s.kind, "title": s.title,
                 "params": {p.name: p.default for p in s.params}}
                for s in load_catalog().specs if kind is None or s.kind == kind]

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def show_rule(rule_id: str) -> dict:
        """A rule's page (what it detects, why it costs time, known problems, the fix) and its SQL."""
        from kineto_sql.devtools.page import render_text

        spec = resolve_spec(rule_id)
        return {"id": spec.id_version, "page": render_text(spec), "sql": Path(spec.path).read_text()}

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def run_rule(path: str, rule_id: str, params: dict | None = None, limit: int = ROW_LIMIT) -> dict:
        """Run one rule on a trace; params by name. Rows are capped at `limit` (total_rows says how many)."""
        df = traces.get(path).run(rule_id, **(params or {}))
        if "not_applicable" in df.attrs:
            return {"id": rule_id, "not_applicable": df.attrs["not_applicable"]}
        return {"id": rule_id, **_rows(df, limit)}

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def sql(path: str, query: str, limit: int = ROW_LIMIT) -> dict:
        """Any PerfettoSQL over the loaded trace (Perfetto's tables: slice, thread_track, args, flow...)."""
        return _rows(traces.get(path).query(query), limit)

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def diagnose(path: str) -> dict:
        """The verdict on the step and every finding ranked by the step time it claims; each finding has
        its rule id, window (where: steps, ts_ns..end_ns), claimed time (claimed_ns, per_step_ns), the
        predicted step after its fix (predicted_step_ns), evidence, fix, the commands that reproduce it,
        and `sql`: the SQL that gives its rows (run it with the sql tool on the same trace)."""
        t = traces.get(path)
        found = t.diagnose().diagnosis.traces[0].to_json()
        for finding in found["findings"]:
            finding["sql"] = reproducing_sql(t.processor, finding["query_id"])
        return found

    @server.tool(structured_output=False)  # the envelope, as JSON text
    @envelope
    def diff(before: list[str], after: list[str], limit: int = 20) -> dict:
        """What changed from BEFORE to AFTER (each a list of trace files, directories or globs: several
        captures of the same code a side make the interval hold run-to-run noise), as `kineto-sql diff`:
        the headline with its 95% interval, the verdict (steady windows, ledger buckets that moved,
        comparability checks), then ops and kernels by time moved per step (the first `limit`)."""
        from kineto_sql.diff import traces as trace_diff
        from kineto_sql.diff.sides import SEPARATOR, split_sides

        sides = split_sides([*before, SEPARATOR, *after])
        loaded = [[trace_diff.side_file(p) for p in side] for side in sides]
        report = trace_diff.build_diff(loaded[0], loaded[1])
        return {"before_captures": [str(p) for p in sides[0]], "after_captures": [str(p) for p in sides[1]],
                "headline": report.headline, "step_change_pct": report.step_change_pct,
                "verdict": report.verdict.to_json() if report.verdict is not None else None,
                "status_counts": report.status_counts, **_rows(report.rows, limit)}

    return server


def reproducing_sql(tp, query_id: str) -> str:
    """The statements that give a rule's rows at its defaults on this trace: its module's INCLUDE, then the
    call of its entrypoint (what `kineto-sql run ID TRACE` runs)."""
    from kineto_sql.run.runner import entrypoint_call, fill_trace_params, resolve_params, resolve_spec
    from kineto_sql.sql.literals import include_statement

    spec = resolve_spec(query_id)
    values = fill_trace_params(tp, spec, resolve_params(spec, {}))
    return f"{include_statement(spec.module)}\n{entrypoint_call(spec, values)}"


def serve() -> None:
    traces = Traces()
    try:
        build_server(traces).run("stdio")
    finally:
        traces.close()
