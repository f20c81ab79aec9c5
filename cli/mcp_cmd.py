"""`kineto-sql mcp`: the agent interface (kineto_sql/api/agent.py) on stdio."""
from __future__ import annotations

import importlib.util

import click


@click.command("mcp")
def command():
    """Serve the trace tools to a coding agent over MCP (stdio; nothing listens on the network).

    Tools: load_trace, list_rules, show_rule, run_rule, sql, diagnose; each answers the envelope of
    `--format json`: {"schema_version": N, "command": TOOL, "result": ...} or {..., "error": {"kind",
    "message"}} (README: Machine output).

    \b
    Examples:
      kineto-sql mcp                      # an agent's MCP config runs this command
      claude mcp add kineto-sql -- kineto-sql mcp
    """
    if importlib.util.find_spec("mcp") is None:
        from kineto_sql.cli.output import fail

        fail("`kineto-sql mcp` needs the mcp package: pip install 'kineto-sql[mcp]'", "bad_input", as_json=False)
    from kineto_sql.api.agent import serve

    serve()
