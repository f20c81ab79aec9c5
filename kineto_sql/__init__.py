"""kineto-sql: PyTorch profiler (Kineto) traces in Perfetto's trace processor, analysed with versioned SQL.

The package is in layers; a module imports from its own package and from the layers below it, never from
one beside or above it (tests/test_layers.py holds the code to this):

    api/        the notebook API (kineto_sql.load) and the agent interface (kineto-sql mcp)    top
    ui/         the Perfetto UI, served locally
    fleet/      many ranks: per-rank tasks, Parquet tables, the cross-rank reading in DuckDB SQL
    devtools/   for rule authors: lint, the rule page, scaffolding, try, paste bundles
    diagnose/   the verdict and the findings of one trace;  diff/  before and after
    whatif/     the step's dependency graph, replay and the critical path;  trace_info.py
    loading/    a Kineto file into the engine, nothing lost;  run/  queries over a loaded trace
    catalog/    the rules: specs from headers, test cases, LOCK.toml;  engine/  the trace processor
    sql/        SQL text, literals (the one place values become SQL), the kineto package's files
    errors.py   one sentence per failure;  envelope.py  the one JSON shape of every --format json   bottom

inputs.py and outputs.py (file names and types checked up front, atomic writes) sit with sql/ and
catalog/ respectively; the CLI (kineto_sql.cli) sits on top of everything.
"""
from __future__ import annotations

__all__ = ["load", "open_trace", "EngineChoice", "KinetoTraceProcessor"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Imported on first use, so that `import kineto_sql.loading...` stays free of the engine and pandas
    # (the console script starts reading a trace before those imports: kineto_sql.cli.launch).
    if name == "load":
        from kineto_sql.api.notebook import load

        return load
    if name == "open_trace":
        from kineto_sql.loading.load import open_trace

        return open_trace
    if name in ("EngineChoice", "KinetoTraceProcessor"):
        from kineto_sql.engine import processor

        return getattr(processor, name)
    raise AttributeError(f"module 'kineto_sql' has no attribute {name!r}")
