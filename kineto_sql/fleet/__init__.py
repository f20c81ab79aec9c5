"""Fleet scale: one pure task per rank file (path in, small Arrow tables out), run on local worker
processes or a dask.distributed cluster, written as a Parquet dataset, read across ranks with DuckDB SQL
(`queries/fleet/*.sql`). The driver never holds a trace: only the tables the tasks return."""
