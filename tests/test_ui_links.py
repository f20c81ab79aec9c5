"""Building the Perfetto UI URL and its startup commands, without a browser."""
from __future__ import annotations

import json
import urllib.parse

import pytest

from kineto_sql.ui.links import (ADD_DEBUG_SLICE_TRACK, FINDINGS_TABLE, RUN_QUERY, RUN_QUERY_AND_SHOW_TAB, Command,
                                 ViewerLink, encode_commands, findings_commands, parse_viewer_url, zoom_window)
from kineto_sql.ui.session import served_name, strip_comments

BASE = "http://127.0.0.1:4321"
TRACE = BASE + "/kineto-sql/tok/run 1.pt.trace.json"


def test_plain_viewer_url():
    url = ViewerLink(TRACE).url(BASE + "/")
    assert url == BASE + "/#!/viewer?url=" + urllib.parse.quote(TRACE, safe="")
    assert parse_viewer_url(url) == {"url": TRACE}


def test_every_value_is_percent_encoded():
    """The UI splits the fragment on & and = and decodes with decodeURIComponent: no raw &, =, #, + or space."""
    sql = "SELECT 'a & b = c' AS x, 1 + 2 AS \"#y\" -- 100%\nFROM slice"
    link = ViewerLink(TRACE, commands=(Command(RUN_QUERY_AND_SHOW_TAB, (sql,)),), vis_start=10, vis_end=20)
    url = link.url(BASE)
    query = url.split("#!/viewer?", 1)[1]
    for raw in (" ", "+", "#", "\n", "'", '"'):
        assert raw not in query
    assert [p.split("=")[0] for p in query.split("&")] == ["url", "startupCommands", "visStart", "visEnd"]
    args = parse_viewer_url(url)
    assert json.loads(args["startupCommands"]) == [{"id": RUN_QUERY_AND_SHOW_TAB, "args": [sql]}]
    assert (args["visStart"], args["visEnd"]) == ("10", "20")


def test_commands_json_is_what_v52_parses():
    commands = [Command(RUN_QUERY, ("CREATE PERFETTO TABLE t AS SELECT 1",)), Command(ADD_DEBUG_SLICE_TRACK, ("q", "é"))]
    text = encode_commands(commands)
    assert json.loads(text) == [{"id": RUN_QUERY, "args": ["CREATE PERFETTO TABLE t AS SELECT 1"]},
                                {"id": ADD_DEBUG_SLICE_TRACK, "args": ["q", "é"]}]
    assert " " not in text.replace("CREATE PERFETTO TABLE t AS SELECT 1", "") and "é" in text


def test_only_allowlisted_commands():
    with pytest.raises(ValueError, match="allowlist"):
        Command("dev.perfetto.ToggleLeftSidebar")
    with pytest.raises(TypeError):
        Command(RUN_QUERY, (123,))
    Command("dev.perfetto.UserMacro.mine")


def test_select_and_extra_args():
    url = ViewerLink(TRACE, select_ts=5, select_dur=7, extra={"hideSidebar": "true"}).url(BASE)
    assert parse_viewer_url(url) == {"url": TRACE, "ts": "5", "dur": "7", "hideSidebar": "true"}
    with pytest.raises(ValueError):
        parse_viewer_url(BASE + "/#!/query")


def test_zoom_window_pads_and_clamps():
    assert zoom_window(1_000_000, 400_000, (0, 10**9)) == (900_000, 1_500_000)
    assert zoom_window(1_000_000, 0, (0, 10**9)) == (950_000, 1_050_000)      # an instant: 50 us either side
    assert zoom_window(1_000_000, None, (0, 10**9)) == (950_000, 1_050_000)
    assert zoom_window(10, 100, (0, 80)) == (0, 80)                            # the UI ignores windows outside
    assert zoom_window(10**6, 10, (0, 100)) is None                          # the finding lies outside the trace


def test_findings_commands():
    setup = "CREATE OR REPLACE PERFETTO FUNCTION f() RETURNS TABLE(ts LONG) AS SELECT 1 AS ts;\n"
    commands = findings_commands(setup, "SELECT * FROM f();", "kineto-sql: catalog.x")
    assert [c.id for c in commands] == [RUN_QUERY, ADD_DEBUG_SLICE_TRACK, RUN_QUERY_AND_SHOW_TAB]
    table_sql = commands[0].args[0]
    assert table_sql.startswith(setup.strip())
    assert table_sql.endswith(f"CREATE OR REPLACE PERFETTO TABLE {FINDINGS_TABLE} AS\nSELECT * FROM f()")
    track_sql, title = commands[1].args
    assert title == "kineto-sql: catalog.x"
    # a debug track query is wrapped in `with data as (...)`: one SELECT, no `;`, with ts, dur and name
    assert ";" not in track_sql and track_sql.startswith("SELECT ts, coalesce(dur, 0) AS dur, ")
    assert " AS name FROM kineto_finding" in track_sql
    assert commands[2].args == (f"SELECT * FROM {FINDINGS_TABLE}",)
    assert [c.id for c in findings_commands("", "SELECT 1", "t", tab=False)] == [RUN_QUERY, ADD_DEBUG_SLICE_TRACK]
    assert findings_commands("", "SELECT 1", "t")[0].args[0].startswith("CREATE OR REPLACE")


def test_strip_comments_keeps_strings():
    sql = "SELECT '--no' AS a, -- yes\n  'x/*y*/' AS b /* c */\n\n-- d\nFROM t"
    assert strip_comments(sql) == "SELECT '--no' AS a,\n  'x/*y*/' AS b\nFROM t"


def test_served_name():
    from pathlib import Path
    assert served_name(Path("a/run.pt.trace.json.gz")) == "run.pt.trace.json"
    assert served_name(Path("run.json")) == "run.json"
    assert served_name(Path("trace")) == "trace.json"
