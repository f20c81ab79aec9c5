"""`kineto-sql diagnose TRACE_OR_RANK_DIR`: what is wrong with this step, ranked, with the evidence."""
from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.fleet_cmd import executor_options
from kineto_sql.cli.output import friendly_errors
from kineto_sql.cli.progress import configure, spinner
from kineto_sql.diagnose.model import SEVERITIES
from kineto_sql.diagnose.render_html import render_html
from kineto_sql.diagnose.render_text import render_markdown, render_text
from kineto_sql.diagnose.run import diagnose_path
from kineto_sql.errors import KinetoSqlError
from kineto_sql.fleet.executors import executor_for
from kineto_sql.inputs import shown
from kineto_sql.outputs import write_atomically
from kineto_sql.run.pool import default_jobs


@click.command("diagnose")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]), default="text",
              show_default=True, help="json has a stable schema (kineto_sql/diagnose/schema.json, schema_version).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default=None,
              help="Exit 1 when a finding at or above this severity exists (for CI gates).")
@click.option("--jobs", type=click.IntRange(1), default=None,
              help="Processes: a rank directory's ranks at once, or one trace's queries over its load (at most 2). "
                   "Default: 2 on a machine with 2 or more cores, else 1.")
@executor_options
@click.option("--no-progress", is_flag=True, help="No progress on stderr (the same as --quiet).")
@engine_options
@friendly_errors
def command(target: Path, fmt: str, output: Path | None, fail_on: str | None, jobs: int | None, executor: str,
            address: str | None, no_progress: bool, engine_kind: str, tp_shell: str | None):
    """Read TARGET (a trace, or a directory of rank traces) the way an expert would.

    Runs the reading order, then every detector the trace can support (saying why it skips the others),
    and ranks what fired by its estimated cost in step time: each finding with its catalog row, evidence,
    what to confirm, the fix direction, where to look, and the commands that reproduce it.

    \b
    Examples:
      kineto-sql diagnose trace.json.gz
      kineto-sql diagnose trace.json.gz --format html -o report.html
      kineto-sql diagnose ./tb_logs/ --format json --fail-on high
    """
    if fmt == "html" and output is None and click.get_text_stream("stdout").isatty():
        # a whole page is no terminal output; refused before the load, not after it
        raise KinetoSqlError("--format html writes a whole page: add -o report.html (or redirect stdout to a file)")
    if no_progress:
        configure(quiet=True)
    jobs = jobs or default_jobs()
    with spinner() as say:
        if target.is_dir():
            from kineto_sql.fleet.run import diagnose_directory  # pandas / DuckDB only for a rank directory

            diagnosis = diagnose_directory(target, engine_choice(engine_kind, tp_shell), progress=say, jobs=jobs,
                                           executor=executor_for(executor, jobs, address))
        else:
            diagnosis = diagnose_path(target, engine_choice(engine_kind, tp_shell), progress=say, jobs=jobs)
    if fmt == "json":
        text = orjson.dumps(diagnosis.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
                            default=str).decode() + "\n"
    elif fmt == "markdown":
        text = render_markdown(diagnosis)
    elif fmt == "html":
        text = render_html(diagnosis)
    else:
        text = render_text(diagnosis)
    if output:
        write_atomically(output, text)
        click.echo(f"wrote {shown(output)}", err=True)
    else:
        click.echo(text, nl=False)
    for failure in diagnosis.failed_ranks:
        click.echo(f"error: rank file not loaded: {failure}", err=True)
    if diagnosis.failed_ranks or (fail_on and diagnosis.has_finding_at(fail_on)):
        sys.exit(1)
