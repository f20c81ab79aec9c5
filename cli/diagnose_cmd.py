"""`kineto-sql diagnose TRACE_OR_RANK_DIR`: what is wrong with this step, ranked, with the evidence."""
from __future__ import annotations

from pathlib import Path

import click

from kineto_sql.cli.engine_options import engine_choice, engine_options, jobs_option, jobs_or_default
from kineto_sql.cli.fleet_cmd import executor_options
from kineto_sql.cli.output import finish, format_option, friendly_errors, rank_failures, render_result
from kineto_sql.cli.rules_option import rules_option
from kineto_sql.cli.progress import set_quiet, spinner
from kineto_sql.diagnose.model import SEVERITIES, severity_rank
from kineto_sql.diagnose.render_html import render_html
from kineto_sql.diagnose.render_text import render_markdown, render_text
from kineto_sql.diagnose.run import diagnose_path
from kineto_sql.errors import KinetoSqlError
from kineto_sql.fleet.executors import executor_for
from kineto_sql.inputs import shown
from kineto_sql.outputs import write_atomically


@click.command("diagnose")
@click.argument("target", type=click.Path(path_type=Path))
@format_option("text", "markdown", "json", "html")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default=None,
              help="Exit 1 when a finding at or above this severity exists (for CI gates).")
@jobs_option
@executor_options
@click.option("--no-progress", is_flag=True, hidden=True, help="Deprecated: use --quiet.")
@rules_option
@engine_options
@friendly_errors
def command(target: Path, fmt: str, output: Path | None, fail_on: str | None, jobs: int | None, executor: str,
            address: str | None, no_progress: bool, engine_kind: str, tp_shell: str | None):
    """Read TARGET (a trace, or a directory of rank traces) the way an expert would.

    Runs the reading order, then every detector the trace can support (saying why it skips the others),
    and ranks what fired by its estimated cost in step time: each finding with its evidence, what to
    confirm, the fix direction, where to look, and the commands that reproduce it. json's result is the
    report (its own schema: kineto_sql/diagnose/schema.json). --fail-on exits 1 and says which findings.

    \b
    Which command for a job of several ranks:
      diagnose DIR     start here: the job's verdict, the ranks that matter, then each rank's findings
      ranks DIR        HTA's per-rank analyses side by side and the straggler, when you compare ranks
      collectives DIR  each collective call matched across ranks (bandwidth, skew), for a slow all_reduce
      fleet DIR        the same reading over hundreds of ranks or a cluster (dask), kept as Parquet

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
        set_quiet()
    jobs = jobs_or_default(jobs)
    with spinner() as say:
        if target.is_dir():
            from kineto_sql.fleet.run import diagnose_directory  # pandas / DuckDB only for a rank directory

            diagnosis = diagnose_directory(target, engine_choice(engine_kind, tp_shell), progress=say, jobs=jobs,
                                           executor=executor_for(executor, jobs, address))
        else:
            diagnosis = diagnose_path(target, engine_choice(engine_kind, tp_shell), progress=say, jobs=jobs)
    code, reason = 0, None
    if diagnosis.failed_ranks:
        code, reason = 1, rank_failures(diagnosis.failed_ranks)
    elif fail_on and diagnosis.has_finding_at(fail_on):
        code, reason = 1, _gate_reason(diagnosis, fail_on)
    if fmt == "json":
        text = render_result(diagnosis.to_json(), code, reason)
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
    finish(code, reason)


def _gate_reason(diagnosis, fail_on: str) -> str:
    """Why --fail-on exits 1: the findings at or above the severity, named."""
    at = severity_rank(fail_on)
    named = sorted({f"{f.query_id} ({f.severity})" for t in diagnosis.traces for f in t.findings
                    if severity_rank(f.severity) >= at})
    if diagnosis.names_straggler:
        named.append(f"straggler rank {diagnosis.ranks_summary['straggler']} (high)")
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return f"--fail-on {fail_on}: {len(named)} finding(s) at or above {fail_on}: {shown}"
