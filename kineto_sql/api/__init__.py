"""The top: the notebook API (`kineto_sql.load`) and the agent interface (`kineto-sql mcp`), both
built on the same layers the CLI uses."""
