"""kineto-sql: PyTorch profiler (Kineto) traces in Perfetto's trace processor, analysed with versioned SQL."""
from __future__ import annotations

__all__ = ["load", "open_trace", "EngineChoice", "KinetoTraceProcessor"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Imported on first use, so that `import kineto_sql.loading...` stays free of the engine and pandas
    # (the console script starts reading a trace before those imports: kineto_sql.cli.launch).
    if name == "load":
        from kineto_sql.notebook import load

        return load
    if name == "open_trace":
        from kineto_sql.loading.load import open_trace

        return open_trace
    if name in ("EngineChoice", "KinetoTraceProcessor"):
        from kineto_sql.engine import processor

        return getattr(processor, name)
    raise AttributeError(f"module 'kineto_sql' has no attribute {name!r}")
