"""kineto-sql: PyTorch profiler (Kineto) traces in Perfetto's trace processor, analysed with versioned SQL."""
from kineto_sql.engine.processor import EngineChoice, KinetoTraceProcessor
from kineto_sql.loading.load import open_trace

__all__ = ["open_trace", "EngineChoice", "KinetoTraceProcessor"]
__version__ = "0.1.0"
