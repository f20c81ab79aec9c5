"""`kineto-sql open` without a browser: the plan (trace bytes, startup commands, zoom), the command line,
and a clean stop on Ctrl-C."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request

import pytest
from click.testing import CliRunner

from kineto_sql.catalog.spec import load_catalog
from kineto_sql.engine.processor import EngineChoice, KinetoTraceProcessor
from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.load import prepare_file
from kineto_sql.devtools.paste import paste_bundle, paste_parts
from kineto_sql.run.runner import entrypoint_call, resolve_params, run_query
from kineto_sql.sql.package import package_dir, package_modules
from kineto_sql.ui.links import ADD_DEBUG_SLICE_TRACK, RUN_QUERY, RUN_QUERY_AND_SHOW_TAB, parse_viewer_url
from kineto_sql.ui.session import ingest_tables_sql, plan_open, serve
from tests.conftest import CORPUS, needs_corpus

SMALL = CORPUS / "hta_critical_path_cuda_event_sync.json.gz"
OVERLAPS = CORPUS / "hta_critical_path_alexnet.json.gz"
CLI = [sys.executable, "-c", "from kineto_sql.cli.main import cli; cli()"]

pytestmark = needs_corpus


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read()


def test_plain_open_serves_the_prepared_bytes():
    plan = plan_open(OVERLAPS)
    prepared = prepare_file(OVERLAPS)
    assert plan.data == prepared.data  # overlap lanes, remapped ids, rebased timestamps: all in
    assert plan.trace_name == "hta_critical_path_alexnet.json"
    assert [c.id for c in plan.commands] == [RUN_QUERY]  # only the loader's tables
    with serve(plan) as session:
        args = parse_viewer_url(session.viewer_url)
        assert args["url"] == session.trace_url and args["url"].startswith("http://127.0.0.1:")
        assert session.viewer_url.startswith(session.server.base_url + "/#!/viewer?")
        assert _fetch(session.trace_url) == prepared.data
        launch = _fetch(session.launch_url).decode()
        assert json.dumps(session.viewer_url)[1:-1].split("#!")[0] in launch
    assert "visStart" not in args and "startupCommands" in args


def test_ingest_tables_sql_recreates_the_loaders_tables(loaded):
    """The first startup command gives the UI session the same kineto_metadata / kineto_ingest_report."""
    prepared = prepare_file(OVERLAPS)
    sql = ingest_tables_sql(prepared, OVERLAPS)
    assert "--" not in sql.split("json_each(")[0]  # comments stripped (shorter URL)
    tp = KinetoTraceProcessor(EngineChoice("wasm"), sql_package=("kineto", package_modules()),
                              sql_package_dir=package_dir())
    try:
        tp.load_bytes(prepared.data)
        tp.query(sql)
        for table in ("kineto_metadata", "kineto_ingest_report"):
            ours = tp.df(f"SELECT * FROM {table} ORDER BY 1")
            loaders = loaded(OVERLAPS).df(f"SELECT * FROM {table} ORDER BY 1")
            assert ours.equals(loaders), table
    finally:
        tp.close()


def test_open_query_runs_its_paste_bundle():
    spec = load_catalog().specs[0]
    plan = plan_open(SMALL, query=spec.id)
    assert [c.id for c in plan.commands] == [RUN_QUERY, RUN_QUERY_AND_SHOW_TAB]
    assert plan.commands[1].args == (paste_bundle(spec),)
    assert plan.vis is None and plan.finding is None and plan.query_id == spec.id


def test_open_query_with_params():
    spec = next((s for s in load_catalog().specs if s.params), None)
    if spec is None:
        pytest.skip("no query with parameters in the catalog yet")
    param = spec.params[0]
    value = {"LONG": "7", "DOUBLE": "0.5", "BOOL": "false", "STRING": "x"}[param.type]
    plan = plan_open(SMALL, query=spec.id, params={param.name: value})
    assert plan.commands[1].args == (paste_bundle(spec, {param.name: value}),)
    with pytest.raises(KinetoSqlError, match="no parameter"):
        plan_open(SMALL, query=spec.id, params={"no_such_param": "1"})


def test_bundles_are_setup_and_the_entrypoint_call():
    """--finding takes the bundle's definitions and its call as two parts; the call is the runner's."""
    for spec in load_catalog().specs:
        bundle = paste_parts(spec)
        assert bundle.call == entrypoint_call(spec, resolve_params(spec, None)), spec.id
        assert bundle.setup.strip() and paste_bundle(spec) == bundle.text
        assert bundle.text.rstrip().endswith(bundle.call + ";")


def _detector_with_findings(loaded, traces):
    for trace in traces:
        if not trace.is_file():
            continue
        for spec in load_catalog().by_kind("detector"):
            try:
                run = run_query(loaded(trace), spec)
            except KinetoSqlError:
                continue
            if not run.not_applicable and len(run.df):
                return trace, spec, run
    return None


def test_open_finding_plan(loaded):
    from tests.conftest import GOLDEN
    candidates = sorted((GOLDEN / "traces").glob("*_planted.json.gz")) + [SMALL, OVERLAPS]
    found = _detector_with_findings(loaded, candidates)
    if found is None:
        pytest.skip("no detector finds anything on the golden or small corpus traces yet")
    trace, spec, run = found
    plan = plan_open(trace, finding=spec.id)
    assert [c.id for c in plan.commands] == [RUN_QUERY, RUN_QUERY, ADD_DEBUG_SLICE_TRACK, RUN_QUERY_AND_SHOW_TAB]
    assert plan.finding.count == len(run.df) and plan.finding.ts is not None
    best = run.df.sort_values(["impact_dur", "ts"], ascending=[False, True]).iloc[0]
    assert plan.finding.ts == int(best["ts"]) and plan.finding.evidence == best["evidence"]
    start, end = plan.vis
    assert start <= plan.finding.ts and plan.finding.ts + (plan.finding.dur or 0) <= end
    assert plan.commands[1].args[0].rstrip().endswith(entrypoint_call(spec, resolve_params(spec, None)))
    assert plan.commands[3].args == ("SELECT * FROM kineto_finding",)


def test_open_finding_refuses_non_detectors_and_both_options():
    spec = next((s for s in load_catalog().specs if s.kind != "detector"), None)
    if spec is not None:
        with pytest.raises(KinetoSqlError, match="not a detector"):
            plan_open(SMALL, finding=spec.id)
    with pytest.raises(KinetoSqlError, match="not both"):
        plan_open(SMALL, query="a.b", finding="a.b")
    with pytest.raises(KinetoSqlError, match="no query"):
        plan_open(SMALL, query="nope.nothing")


def test_cli_errors_are_one_line():
    from kineto_sql.cli import open_cmd

    runner = CliRunner()
    result = runner.invoke(open_cmd.command, [str(SMALL), "--no-browser", "--port", "9001"])
    assert result.exit_code == 2 and "9001" in result.output and "Traceback" not in result.output
    result = runner.invoke(open_cmd.command, [str(SMALL), "--no-browser", "--query", "a.b", "--finding", "a.b"])
    assert result.exit_code == 2 and "not both" in result.output
    result = runner.invoke(open_cmd.command, [str(SMALL), "--no-browser", "--query", "nope.nothing"])
    assert result.exit_code == 2 and "no query" in result.output
    result = runner.invoke(open_cmd.command, ["/nonexistent/trace.json", "--no-browser"])
    assert result.exit_code == 2 and result.output.startswith("error:")


def test_open_is_registered_in_the_cli():
    from kineto_sql.cli.main import cli

    assert "open" in cli.list_commands(None)
    assert cli.get_command(None, "open").name == "open"


def test_browser_is_not_started_without_a_display(monkeypatch):
    from kineto_sql.cli import open_cmd

    calls = []
    monkeypatch.setattr(open_cmd.webbrowser, "open", lambda url, new=0: calls.append(url) or True)
    monkeypatch.setattr(open_cmd.sys, "platform", "linux")
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(var, raising=False)
    open_cmd._open_browser("http://127.0.0.1:1/open")
    assert calls == []
    monkeypatch.setenv("DISPLAY", ":0")
    open_cmd._open_browser("http://127.0.0.1:1/open")
    assert calls == ["http://127.0.0.1:1/open"]


def _ignore_and_block_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_cli_serves_until_ctrl_c_and_stops_cleanly():
    # started ignoring and blocking SIGINT, as a child of a test worker can be: the command takes it itself
    proc = subprocess.Popen(CLI + ["open", str(SMALL), "--no-browser"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=_ignore_and_block_sigint)
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        line = proc.stdout.readline()
        assert line.startswith("Perfetto UI "), line + proc.stderr.read()
        launch_url = line.rsplit(": ", 1)[1].strip()
        assert launch_url.startswith("http://127.0.0.1:") and launch_url.endswith("/open")
        page = _fetch(launch_url).decode()
        viewer_url = json.loads(page.split("location.replace(", 1)[1].split(");", 1)[0].replace("<\\/", "</"))
        trace_url = parse_viewer_url(viewer_url)["url"]
        served, prepared = _fetch(trace_url), prepare_file(SMALL).data
        # (Same bytes up to the loader's fresh-id numbering, which follows string hashing: another process.)
        assert len(served) == len(prepared) and served.count(b'"ph":') == prepared.count(b'"ph":')
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.rstrip().endswith("stopped")
    with pytest.raises(OSError):
        _fetch(launch_url)


def test_cli_json_output():
    proc = subprocess.Popen(CLI + ["open", str(SMALL), "--no-browser", "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        lines = []
        while not lines or lines[-1] != "}\n":
            lines.append(proc.stdout.readline())
            assert lines[-1], proc.stderr.read()
        info = json.loads("".join(lines))["result"]
        assert info["url"].endswith("/open") and info["trace"] == str(SMALL) and info["finding"] is None
        assert parse_viewer_url(info["viewer_url"])["url"] == info["trace_url"]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
