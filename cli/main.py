"""The `kineto-sql` command line: one click group; each command lives in its own module."""
from __future__ import annotations

import importlib

import click

from kineto_sql import __version__


# Each command's module is imported when the command runs (or --help lists it), not before: the modules
# of `sql` and `info` import pandas, which `diagnose` never needs (kineto_sql.engine.rows).
COMMANDS = {
    "info": "kineto_sql.cli.info_cmd:command",
    "sql": "kineto_sql.cli.sql_cmd:command",
    "diagnose": "kineto_sql.cli.diagnose_cmd:command",
    "open": "kineto_sql.cli.open_cmd:command",
    "ranks": "kineto_sql.cli.ranks_cmd:command",
    "diff": "kineto_sql.cli.diff_cmd:diff_command",
    "collectives": "kineto_sql.cli.collectives_cmd:command",
    "try": "kineto_sql.cli.try_cmd:command",
    "fleet": "kineto_sql.cli.fleet_cmd:command",
    "list": "kineto_sql.cli.query_cmds:list_command",
    "show": "kineto_sql.cli.query_cmds:show_command",
    "run": "kineto_sql.cli.query_cmds:run_command",
    "lint": "kineto_sql.cli.query_cmds:lint_command",
    "test": "kineto_sql.cli.test_cmd:command",
    "new": "kineto_sql.cli.query_cmds:new_command",
    "mcp": "kineto_sql.cli.mcp_cmd:command",
}


class LazyGroup(click.Group):
    """A click group whose commands are named up front and imported on first use."""

    def __init__(self, *args, lazy: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx):
        return sorted(set(self.lazy) | set(super().list_commands(ctx)))

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's own errors (an unknown option, a bad value, a missing argument) as every other error:
        one `error: ...` line on stderr (a hint to --help instead of the usage block), the error envelope
        on stdout when --format json was asked, exit status 2."""
        import sys

        argv = list(sys.argv[1:] if args is None else args)
        try:
            return super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as stop:
            sys.exit(stop.exit_code)
        except click.Abort:
            _click_failure(argv, "aborted", "interrupted", 1)
        except click.exceptions.NoArgsIsHelpError as exc:  # `kineto-sql` alone: the help, as --help prints it
            click.echo(exc.ctx.get_help())
            sys.exit(0)
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see `{exc.ctx.command_path} --help`)"
            _click_failure(argv, exc.format_message() + hint, "usage", exc.exit_code)

    def format_commands(self, ctx, formatter):
        """Each command with its whole first sentence, wrapped (click cuts it at the terminal's width)."""
        rows = [(name, command.get_short_help_str(limit=10_000)) for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx, name):
        if name in self.lazy and name not in self.commands:
            module, attr = self.lazy[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


def _click_failure(argv: list[str], message: str, kind: str, code: int) -> None:
    from kineto_sql.cli.output import fail

    wants_json = "--format=json" in argv or any(a == "--format" and b == "json" for a, b in zip(argv, argv[1:]))
    command = next((a for a in argv if a in COMMANDS), "kineto-sql")
    fail(" ".join(message.split()), kind, code, as_json=wants_json, command=command)


@click.group(cls=LazyGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="kineto-sql")
def cli():
    """The framework view of a PyTorch profiler (Kineto) trace, as SQL over Perfetto's trace processor.

    \b
    Start here:
      kineto-sql diagnose trace.json.gz      what is wrong with the step, ranked by the time it costs
      kineto-sql info trace.json.gz          what the trace holds, and that nothing was lost loading it
      kineto-sql list                        the queries; `kineto-sql run ID TRACE` runs one
      kineto-sql sql trace.json.gz "SELECT name, count(*) FROM slice GROUP BY 1 ORDER BY 2 DESC LIMIT 10"
    """


if __name__ == "__main__":
    cli()
