"""Output a pipe can use: CliRunner's stdout/stderr are not terminals, as in CI logs and `| less`.

Tables never wrap an id and carry units in their headers, progress is plain log lines on stderr
(`--quiet` silences them), every `--format json` output parses, and the text report reads right.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kineto_sql.cli.main import cli
from kineto_sql.cli.output import human
from kineto_sql.errors import QueryError

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden" / "traces"
TRACE = GOLDEN / "gc_stall_planted.json.gz"
OTHER = GOLDEN / "gc_stall_fixed.json.gz"
RANKS = GOLDEN / "ddp_allreduce_planted"
CORPUS = ROOT.parent / "shared" / "corpus"


def _run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


def test_tables_in_a_pipe_never_wrap_ids_and_carry_units():
    rows = json.loads(_run("run", "reading.op_table", TRACE, "--format", "json").stdout)["result"]["queries"][0]["rows"]
    table = _run("run", "reading.op_table", TRACE, "-q")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    longest = max((r["name"] for r in rows), key=len)
    assert len(longest) > 60  # wider than a squeezed 80-column table would keep on one line
    for row in rows:
        assert any(row["name"] in line for line in lines), row["name"]
    head = next(line for line in lines if "self_cpu_dur" in line)
    assert "self_cpu_dur" in head and "self_device_pct" in head
    top = next(line for line in lines if rows[0]["name"] in line)
    assert human("self_cpu_dur", rows[0]["self_cpu_dur"]) in top and top.rstrip().endswith("│")
    listing = _run("list").stdout.splitlines()
    assert any(line.split("│")[1].strip() == "catalog.activation_checkpoint_surprise" for line in listing
               if line.count("│") > 2)


def test_human_cells_carry_their_units():
    assert [human(c, v) for c, v in (("dur", 603558000), ("impact_dur", 850), ("step_us", 176234.5),
                                     ("gpu_busy_pct", 92.48628448755665), ("peak_bytes", 16 * 2**20),
                                     ("ts", 1661203462598772000), ("calls", 12), ("ratio", 0.000123456),
                                     ("flops", 12345.6), ("name", "aten::mm"), ("dur", None))] == [
        "603.6 ms", "850 ns", "176.2 ms", "92.5%", "16.0 MiB", "1661203462.598772 s", "12", "0.0001235",
        "12346", "aten::mm", ""]


def test_progress_is_plain_lines_on_stderr_and_quiet_silences_it():
    result = _run("info", TRACE, "--format", "json")
    assert result.exit_code == 0
    stages = [line for line in result.stderr.splitlines() if line.startswith("kineto-sql: [")]
    assert [line.split("] ")[1].split(" ")[0] for line in stages] == ["read", "prepared", "loaded"]
    assert "1435 events" in stages[1] and "s]" in stages[0]
    json.loads(result.stdout)
    quiet = _run("info", TRACE, "--format", "json", "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    diag = _run("diagnose", TRACE, "--format", "json")
    assert any("catalog.gc_gil_stall" in line for line in diag.stderr.splitlines() if line.startswith("kineto-sql: ["))
    assert _run("diagnose", TRACE, "--format", "json", "-q").stderr == ""


@pytest.mark.parametrize("args", [
    ("list", "--format", "json"),
    ("info", TRACE, "--format", "json"),
    ("info", RANKS, "--format", "json"),
    ("sql", TRACE, "SELECT name, dur FROM slice LIMIT 3", "--format", "json"),
    ("run", "reading.step_table", TRACE, "--format", "json"),
    ("run", "catalog.straggler_rank", TRACE, "--format", "json"),   # not applicable: one rank
    ("run", "catalog.compile_graph_breaks", TRACE, "--format", "json"),  # not applicable: no compile
    ("diagnose", TRACE, "--format", "json"),
    ("ranks", RANKS, "--format", "json"),
    ("diff", TRACE, OTHER, "--format", "json"),
], ids=lambda a: "-".join(str(x) for x in a[:2]) if isinstance(a, tuple) else str(a))
def test_every_json_format_parses(args):
    result = _run(*args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    if args[0] == "run" and args[1] in ("catalog.straggler_rank", "catalog.compile_graph_breaks"):
        (query,) = data["result"]["queries"]
        assert query["rows"] == [] and "needs" in query["not_applicable"]


def test_not_applicable_in_csv_keeps_stdout_empty():
    result = _run("run", "catalog.straggler_rank", TRACE, "--format", "csv", "-q")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("not applicable: ")


def test_text_report_reads_right():
    text = _run("diagnose", TRACE, "-q").stdout
    lines = text.splitlines()
    start = lines.index("   reproduce (each line is one command):")
    assert lines[start + 1].strip().startswith("kineto-sql run catalog.gc_gil_stall ")
    assert lines[start + 2].strip() == "kineto-sql show catalog.gc_gil_stall --paste"
    assert lines[start + 3].strip().startswith("kineto-sql open ")
    assert " | kineto-sql" not in text
    assert "top ops (reading.op_table): whole-trace totals over all 3 steps and outside them, not per step" in text
    silent = next(line for line in lines if line.startswith("silent ("))
    assert "catalog.sync_forcing_op" in silent and "catalog.memory_churn" in silent
    assert "loader fixes (every event kept)" in text


def test_text_report_says_loss_when_loaded_with_allow_loss(tmp_path):
    path = tmp_path / "lossy.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
        {"ph": "X", "name": "lost", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": 20}]}))
    assert _run("diagnose", path, "-q").exit_code == 2
    result = _run("diagnose", path, "-q", "--allow-loss")
    assert result.exit_code == 0
    assert "DATA LOSS (loaded with --allow-loss): 1 event(s) dropped: ts is missing (event index 2)" in result.stdout
    assert "every event kept" not in result.stdout
    data = json.loads(_run("diagnose", path, "-q", "--allow-loss", "--format", "json").stdout)["result"]
    assert data["traces"][0]["loss"] == ["1 event(s) dropped: ts is missing (event index 2)"]


def test_diagnose_help_points_to_what_exists():
    text = _run("diagnose", "--help").stdout
    assert "docs/diagnose.md" not in text and "schema.json" in text
    assert (ROOT / "kineto_sql" / "diagnose" / "schema.json").exists()


def test_new_refuses_to_write_into_an_installed_copy(monkeypatch, tmp_path):
    from kineto_sql.devtools import scaffold

    fake = tmp_path / "lib" / "python3.11" / "site-packages" / "kineto_sql" / "queries" / "kineto"
    fake.mkdir(parents=True)
    monkeypatch.setattr(scaffold, "package_dir", lambda: fake)
    with pytest.raises(QueryError, match="not run from a clone"):
        scaffold.scaffold("catalog.my_rule")
    assert not any(fake.iterdir())
    result = _run("new", "catalog.my_rule")
    assert result.exit_code == 2 and "clone the repository" in result.stderr


def test_markdown_report_names_the_capture_and_the_loss(tmp_path):
    path = tmp_path / "lossy.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "name": "lost", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": "soon", "dur": 20}],
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42_505_273_344}]}))
    text = _run("diagnose", path, "-q", "--allow-loss", "--format", "markdown").stdout
    assert "Capture: NVIDIA A100-SXM4-40GB, 40 GB; engine wasm." in text
    assert ("**DATA LOSS** (loaded with --allow-loss): 1 event(s) dropped: ts is a string that is not a number "
            "(event index 1)") in text


KERNEL_SQL = ("SELECT name, count(*) AS n, sum(dur) AS total_dur FROM slice WHERE dur > 0 GROUP BY 1 "
              "ORDER BY 3 DESC LIMIT 5")


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("args", [
    ("sql", TRACE, KERNEL_SQL, "-q"),
    ("run", "reading.op_table", TRACE, "-q"),
    ("run", "reading.step_table", TRACE, "-q"),
    ("run", "hta.op_summary", TRACE, "-q"),
], ids=lambda a: "-".join(str(x) for x in a[:2]) if isinstance(a, tuple) else str(a))
def test_narrow_tables_keep_every_number(args, columns):
    """At 80 and 200 columns long names fold; every number of every numeric column stays whole on a line."""
    as_json = [*args[:-1], "--format", "json"]
    result = json.loads(_run(*as_json).stdout)["result"]
    rows = result if args[0] == "sql" else result["queries"][0]["rows"]
    assert isinstance(rows, list) and rows, rows
    result = CliRunner(env={"COLUMNS": columns}).invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    numeric = [c for c in rows[0] if all(isinstance(r[c], (int, float)) and not isinstance(r[c], bool)
                                         for r in rows if r[c] is not None)]
    assert numeric
    for row in rows:
        for column in numeric:
            cell = human(column, row[column])
            assert cell == "" or any(f" {cell} " in line for line in lines), (column, cell)


def _numbers_stay_whole(tables: list[list[dict]], lines: list[str], rounded: bool = False) -> int:
    """Every cell of every numeric column of `tables` (rows as --format json gives them) appears whole, as
    the text table writes it (cli.output.human), between spaces on one line. Returns the cells checked."""
    checked = 0
    for rows in tables:
        if not rows:
            continue
        numeric = [c for c in rows[0] if any(r.get(c) is not None for r in rows) and all(
            isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows if r.get(c) is not None)]
        for row in rows:
            for column in numeric:
                value = row[column]
                if value is None:
                    continue
                cell = human(column, round(value, 2) if rounded and isinstance(value, float) else value)
                assert any(f" {cell} " in line for line in lines), (column, cell)
                checked += 1
    return checked


def _at_width(columns: str, *args) -> list[str]:
    result = CliRunner(env={"COLUMNS": columns}).invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    return lines


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("trace", [TRACE, CORPUS / "hta_amd_mi250_minitoy_train_rocm6_2.json.gz"],
                         ids=["cpu-golden", "gpu-corpus"])
def test_info_tables_keep_every_number(trace, columns):
    """info's tables (GPU streams, processes, the loader's changes) at 80 and 200 columns."""
    if not trace.exists():
        pytest.skip(f"{trace} is not present (the shared corpus)")
    (info,) = json.loads(_run("info", trace, "-q", "--format", "json").stdout)["result"]["traces"]
    lines = _at_width(columns, "info", trace, "-q")
    tables = [info["processes"], info["streams"], [{"count": f["count"]} for f in info["fixes"]]]
    assert _numbers_stay_whole(tables, lines) >= 3 * len(info["processes"])
    if trace != TRACE:
        assert info["streams"] and " 149 us " in "\n".join(lines)   # busy_ns 149360 on device 2's stream


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("directory", [GOLDEN / "ddp_allreduce_planted", CORPUS / "hta_sampled_2rank"],
                         ids=["cpu-golden", "gpu-corpus"])
def test_ranks_tables_keep_every_number(directory, columns):
    """ranks' tables (HTA's analyses per rank, clock offsets, the quantities compared, their distribution)
    at 80 and 200 columns; an analysis no rank could answer (a CPU-only job) is one line, not an empty table."""
    if not directory.exists():
        pytest.skip(f"{directory} is not present (the shared corpus)")
    result = json.loads(_run("ranks", directory, "-q", "--format", "json").stdout)["result"]
    lines = _at_width(columns, "ranks", directory, "-q")
    drop = ("meaning", "direction", "ord", "ranks")   # the distribution's bookkeeping, not shown
    # GPU time by kernel type: a column per type, in us; the text names them so (COMMUNICATION_us: 336 ms)
    kinds = [{k if k == "rank" else f"{k}_us": v for k, v in r.items()} for r in result["tables"]["kernel_types"]]
    tables = [*(t for k, t in result["tables"].items() if k != "kernel_types"), kinds, result["clock"], result["summary"],
              [{k: v for k, v in r.items() if k not in drop} for r in result["distribution"]]]
    assert _numbers_stay_whole(tables, lines, rounded=True) > 20
    empty = [k for k, rows in result["tables"].items() if all(set(r) == {"rank"} for r in rows)]
    text = " ".join(lines)
    assert text.count(": not applicable to these ranks (no rank gave it a value)") == len(empty)
    assert bool(empty) == ("golden" in str(directory))
    assert " ".join(result["narration"].split()) in text        # the verdict, wrapped to the width


def test_a_terminal_gets_one_spinner_that_follows_the_stages(monkeypatch):
    """On a terminal the spinner's text follows the library's stages and the command's own (rule k of n);
    in a pipe the same stages are plain lines."""
    import io
    import sys

    from kineto_sql.cli import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    texts = []
    monkeypatch.setattr(sys, "stderr", Terminal())
    progress.configure(quiet=False)
    import rich.progress

    real = rich.progress.Progress.update
    monkeypatch.setattr(rich.progress.Progress, "update",
                        lambda self, task, **kw: (texts.append(kw.get("description")), real(self, task, **kw))[1])
    from kineto_sql.loading.load import open_trace

    with progress.spinner() as say, open_trace(TRACE) as tp:
        say("query 1 of 1: reading.op_table")
        assert tp.rows("SELECT 1 AS one").column("one") == [1]
    assert any(t and t.startswith("loaded gc_stall_planted.json.gz") for t in texts), texts
    assert "query 1 of 1: reading.op_table" in texts
