"""`kineto-sql sql TRACE "SELECT ..."`: any PerfettoSQL over a loaded trace."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.output import emit_frame, format_option, friendly_errors
from kineto_sql.cli.progress import spinner
from kineto_sql.loading.load import open_trace


@click.command("sql")
@click.argument("trace", type=click.Path(path_type=Path))
@click.argument("query", required=False)
@click.option("-f", "--file", "query_file", type=click.File("r"), help="Read the SQL from a file ('-' for stdin).")
@format_option()
@jobs_option
@engine_options
@friendly_errors
def command(trace: Path, query: str | None, query_file, fmt: str, jobs: int | None, engine_kind: str,
            tp_shell: str | None):
    """Run PerfettoSQL on TRACE and print the rows of its last statement.

    The `kineto` package (queries/kineto) is registered: `INCLUDE PERFETTO MODULE kineto.lib.steps;` works.
    Tables kineto_metadata (Kineto's top-level fields) and kineto_ingest_report (loader changes) exist.

    \b
    Examples:
      kineto-sql sql trace.json.gz "SELECT name, count(*) AS n FROM slice GROUP BY 1 ORDER BY 2 DESC LIMIT 10"
      kineto-sql sql trace.json.gz -f my_query.sql --format csv
    """
    if query_file is not None:
        query = query_file.read()
    if not query:
        raise click.UsageError("give the SQL as an argument or with -f FILE")
    with spinner() as say, open_trace(trace, engine_choice(engine_kind, tp_shell), jobs=jobs_or_default(jobs)) as tp:
        say("running the query")
        df = tp.df(query)
    emit_frame(df, fmt)
    if fmt == "text":
        click.echo(f"{len(df)} rows", err=True)
    sys.stdout.flush()
