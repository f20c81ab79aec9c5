"""Every command keeps one contract (README: Machine output): `--help` works; one `--format` option with the
same help; each of its formats answers (json as the envelope {schema_version, command, result}); bad input
is the error envelope under --format json and exactly one `error: ...` line on stderr, exit status 2."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner

from kineto_sql.cli.main import COMMANDS, cli
from kineto_sql.cli.output import FORMAT_HELP
from kineto_sql.envelope import ERROR_KINDS, SCHEMA_VERSION

ROOT = Path(__file__).parents[1]
TRACE = ROOT / "golden" / "traces" / "matmul_tiny_vs_big_fixed.json.gz"
# serves until Ctrl-C: its json is tested in test_ui_open; mcp serves stdio: test_agent
SERVERS = ("open", "mcp")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> Path:
    """Two rank files of one small trace: enough for ranks, collectives and fleet to answer."""
    directory = tmp_path_factory.mktemp("ranks")
    for rank in (0, 1):
        shutil.copyfile(TRACE, directory / f"rank{rank}.json.gz")
    return directory


def scratch_queries(tmp_path, monkeypatch) -> Path:
    """`new` writes a rule: into a scratch queries/ tree, never the checkout."""
    (tmp_path / "queries" / "kineto").mkdir(parents=True)
    monkeypatch.setenv("KINETO_SQL_QUERIES", str(tmp_path / "queries"))
    return tmp_path / "queries"


def good_args(command: str, ranks: Path) -> list[str]:
    """An invocation of `command` that answers (exit 0)."""
    return {
        "info": ["info", str(TRACE)],
        "sql": ["sql", str(TRACE), "SELECT name, count(*) AS n, sum(dur) AS total_dur FROM slice GROUP BY 1"],
        "diagnose": ["diagnose", str(TRACE)],
        "ranks": ["ranks", str(ranks)],
        "collectives": ["collectives", str(ranks)],
        "fleet": ["fleet", str(ranks), "--parts", "hta"],
        "diff": ["diff", str(TRACE), str(TRACE)],
        "try": ["try", "reading.op_table", str(TRACE)],
        "list": ["list", "--kind", "reading"],
        "show": ["show", "reading.op_table"],
        "run": ["run", "reading.op_table", str(TRACE), "-p", "top_n", "3"],
        "lint": ["lint"],
        "test": ["test", "hta.kernel_type_breakdown", "--cases-only"],
        "new": ["new", "catalog.contract_probe"],
    }[command]


# One bad input per command, and the kind its error envelope says.
BAD = {
    "info": (["info", "missing.json.gz"], "bad_input"),
    "sql": (["sql", "missing.json.gz", "SELECT 1"], "bad_input"),
    "diagnose": (["diagnose", "missing.json.gz"], "bad_input"),
    "open": (["open", "missing.json.gz", "--no-browser"], "bad_input"),
    "ranks": (["ranks", "missing_dir"], "usage"),
    "collectives": (["collectives", "missing_dir"], "usage"),
    "fleet": (["fleet", "missing_dir"], "bad_input"),
    "diff": (["diff", "missing.json.gz", "missing.json.gz"], "bad_input"),
    "try": (["try", "catalog.nope", "missing.json.gz"], "bad_input"),
    "list": (["list", "--kind", "nope"], "usage"),
    "show": (["show", "catalog.nope"], "bad_input"),
    "run": (["run", "catalog.nope", "missing.json.gz"], "bad_input"),
    "lint": (["lint", "--update-lock", "catalog.nope"], "bad_input"),
    "test": (["test", "catalog.nope"], "bad_input"),
    "new": (["new", "Bad-Name"], "bad_input"),
    "mcp": (["mcp", "--bogus"], "usage"),
}


def _command(name: str) -> click.Command:
    return cli.get_command(click.Context(cli), name)


def _formats(name: str) -> tuple[str, ...]:
    option = next((p for p in _command(name).params if p.name == "fmt"), None)
    return tuple(option.type.choices) if option is not None else ()


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, [*args, *(["-q"] if args[0] not in ("list", "show", "lint", "new", "mcp") else [])])


def test_the_lists_cover_every_command():
    assert set(BAD) == set(COMMANDS)
    for command in COMMANDS:
        if command not in SERVERS:
            assert good_args(command, Path("ranks"))[0] == command


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_works_and_format_is_one_option(command):
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert f"kineto-sql {command}" in result.output
    if command in ("diagnose", "ranks", "collectives", "fleet"):  # which of the four to use when, in each
        which = result.output.split("Which command for a job of several ranks:")[1].splitlines()[1:5]
        assert [line.split()[0] for line in which] == ["diagnose", "ranks", "collectives", "fleet"]
    option = next((p for p in _command(command).params if p.name == "fmt"), None)
    if command == "mcp":
        assert option is None  # a server, no output format
        return
    assert option.opts == ["--format"] and option.help == FORMAT_HELP and option.default == "text"
    assert set(_formats(command)) <= {"text", "markdown", "json", "csv", "html"} and "json" in _formats(command)
    # the one progress switch (--no-progress is a hidden alias on diagnose) and the one -j default
    names = {o for p in _command(command).params for o in p.opts}
    assert "--no-progress" not in result.output
    if "--jobs" in names:
        jobs = next(p for p in _command(command).params if p.name == "jobs")
        assert jobs.opts == ["-j", "--jobs"] and jobs.default is None


CASES = [(c, f) for c in sorted(COMMANDS) if c not in SERVERS for f in _formats(c)]


@pytest.mark.parametrize(("command", "fmt"), CASES, ids=[f"{c}-{f}" for c, f in CASES])
def test_every_format_of_every_command_answers(command, fmt, ranks, tmp_path, monkeypatch):
    if command == "new":
        scratch_queries(tmp_path, monkeypatch)
    result = _invoke([*good_args(command, ranks), "--format", fmt])
    assert result.exit_code == 0, result.output
    out = result.stdout
    if command == "lint" and fmt == "text":  # a clean lint prints no problem, and says so on stderr
        assert out == "" and result.stderr.strip() == "lint: clean"
        return
    assert out.strip(), f"{command} --format {fmt} printed nothing"
    if fmt == "json":
        doc = json.loads(out)
        assert list(doc) == ["schema_version", "command", "result"] and doc["schema_version"] == SCHEMA_VERSION
        assert doc["command"] == command and doc["result"] is not None
    elif fmt == "csv":
        frame = pd.read_csv(io.StringIO(out.split("\n# ")[0]), comment=None)
        assert len(frame.columns) >= 2
    elif fmt == "markdown":
        assert "|" in out or out.lstrip().startswith("#")
    elif fmt == "html":
        assert out.lstrip().lower().startswith("<!doctype html")
    else:
        assert not out.lstrip().startswith("{")


def test_one_shape_per_command(ranks):
    """info FILE and info DIR answer the same shape; run answers one shape for one query, several, and a
    query the trace cannot answer."""
    one = json.loads(_invoke(["info", str(TRACE), "--format", "json"]).stdout)["result"]
    many = json.loads(_invoke(["info", str(ranks), "--format", "json"]).stdout)["result"]
    assert set(one) == set(many) == {"traces", "failed_ranks"}
    assert len(one["traces"]) == 1 and len(many["traces"]) == 2
    assert set(one["traces"][0]) == set(many["traces"][0])
    single = json.loads(_invoke(["run", "reading.op_table", str(TRACE), "--format", "json"]).stdout)["result"]
    both = json.loads(_invoke(["run", "reading.op_table", "catalog.straggler_rank", str(TRACE), "--format",
                               "json"]).stdout)["result"]
    assert set(single) == set(both) == {"trace", "queries"}
    keys = {"id", "version", "title", "not_applicable", "columns", "rows"}
    assert all(set(q) == keys for q in single["queries"] + both["queries"])
    assert single["queries"][0]["not_applicable"] is None and len(single["queries"][0]["rows"]) > 0
    na = both["queries"][1]
    assert na["id"] == "catalog.straggler_rank" and na["rows"] == [] and "needs" in na["not_applicable"]


@pytest.mark.parametrize("command", sorted(BAD))
def test_bad_input_is_the_error_envelope_and_one_stderr_line(command):
    args, kind = BAD[command]
    text = _invoke(args)
    assert text.exit_code == 2, text.output
    lines = text.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in text.output, text.stderr
    assert text.stdout == ""  # no usage block, no half a table
    if command == "mcp":
        return
    as_json = _invoke([*args, "--format", "json"])
    assert as_json.exit_code == 2
    doc = json.loads(as_json.stdout)
    assert list(doc) == ["schema_version", "command", "error"] and doc["command"] == command
    assert doc["error"]["kind"] == kind and kind in ERROR_KINDS
    assert doc["error"]["message"] == as_json.stderr.strip().removeprefix("error: ")


def test_fail_on_says_why_it_exits_1():
    """--fail-on info on a trace with findings: exit 1, the findings named on one stderr line and in the
    envelope's exit; without the gate the same run exits 0."""
    gated = _invoke(["diagnose", str(TRACE), "--format", "json", "--fail-on", "info"])
    doc = json.loads(gated.stdout)
    named = [f["query_id"] for t in doc["result"]["traces"] for f in t["findings"]]
    assert named, "the trace was picked for having findings"
    assert gated.exit_code == 1
    (line,) = gated.stderr.splitlines()
    assert line.startswith(f"error: --fail-on info: {len(set(named))} finding(s) at or above info: ")
    assert all(query_id in line for query_id in sorted(set(named))[:5])
    assert doc["exit"] == {"code": 1, "reason": line.removeprefix("error: ")}
    assert _invoke(["diagnose", str(TRACE), "--format", "json"]).exit_code == 0


def test_old_spellings_still_work():
    """`--format table` (now text) and diagnose's `--no-progress` (now --quiet) are kept for scripts."""
    table = CliRunner().invoke(cli, ["list", "--kind", "reading", "--format", "table"])
    assert table.exit_code == 0 and "reading.op_table" in table.stdout
    assert "table" not in _formats("list")
    quiet = CliRunner().invoke(cli, ["diagnose", str(TRACE), "--no-progress"])
    assert quiet.exit_code == 0 and "kineto-sql: [" not in quiet.stderr


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_help_gives_every_commands_whole_first_sentence(columns):
    """`kineto-sql --help` names every command with its first sentence whole (wrapped, never cut to `...`),
    at 80 and 200 columns; "Start here" leads with diagnose."""
    from click.utils import _make_default_short_help

    result = CliRunner(env={"COLUMNS": columns}).invoke(cli, ["--help"])
    assert result.exit_code == 0
    text = result.stdout
    start = text.split("Start here:")[1].split("Options:")[0].split()
    assert start[:2] == ["kineto-sql", "diagnose"]
    listing = text.split("Commands:\n")[1]
    flat = " ".join(listing.split())
    for name in COMMANDS:
        sentence = _make_default_short_help(_command(name).help, 10_000)
        assert sentence.endswith(".") and f"{name} {sentence}" in flat, name
    assert "..." not in listing


def test_no_command_prints_the_help_and_an_unknown_one_is_one_line():
    bare = CliRunner().invoke(cli, [])
    assert bare.exit_code == 0 and bare.stdout.startswith("Usage: ") and "Start here:" in bare.stdout
    unknown = CliRunner().invoke(cli, ["diagnoze"])
    assert unknown.exit_code == 2 and unknown.stdout == ""
    (line,) = unknown.stderr.splitlines()
    assert line.startswith("error: No such command 'diagnoze'. Did you mean 'diagnose'? (see `")
