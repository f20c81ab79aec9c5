"""The `kineto-sql` command line: one click group; each command lives in its own module."""
from __future__ import annotations

import click

from kineto_sql import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="kineto-sql")
def cli():
    """The framework view of a PyTorch profiler (Kineto) trace, as SQL over Perfetto's trace processor.

    \b
    Start here:
      kineto-sql info trace.json.gz
      kineto-sql sql trace.json.gz "SELECT name, count(*) FROM slice GROUP BY 1 ORDER BY 2 DESC LIMIT 10"
    """


def _register() -> None:
    from kineto_sql.cli import diagnose_cmd, info_cmd, sql_cmd
    from kineto_sql.cli import open_cmd
    from kineto_sql.cli import ranks_cmd
    from kineto_sql.cli import collectives_cmd
    from kineto_sql.cli import try_cmd
    from kineto_sql.cli import fleet_cmd

    for module in (info_cmd, sql_cmd, diagnose_cmd, open_cmd, ranks_cmd, collectives_cmd, try_cmd, fleet_cmd):
        cli.add_command(module.command)
    cli.add_command(ranks_cmd.diff_command)

    from kineto_sql.cli import query_cmds

    for command in query_cmds.commands:
        cli.add_command(command)


_register()


if __name__ == "__main__":
    cli()
