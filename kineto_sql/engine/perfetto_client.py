"""perfetto's Python client, imported without pandas.

perfetto's query-result module imports pandas (and so pyarrow) when it is imported, only to offer
`as_pandas_dataframe()`: about 75 MB and 0.7 s in every process, though `diagnose` reads its results as
plain rows (kineto_sql.engine.rows) and never needs pandas. Here that module is imported with pandas hidden,
and given a stand-in that imports pandas at the first DataFrame asked for, so `as_pandas_dataframe()`
works as before, for whoever calls it.
"""
from __future__ import annotations

import importlib
import sys

_RESULTS = "perfetto.common.query_result_iterator"


class _PandasOnFirstUse:
    def __getattr__(self, name: str):
        return getattr(importlib.import_module("pandas"), name)


def _import_results_without_pandas() -> None:
    if _RESULTS in sys.modules:
        return
    hidden = sys.modules.get("pandas", _RESULTS)
    sys.modules["pandas"] = None  # `import pandas` raises ImportError, which the module expects
    try:
        results = importlib.import_module(_RESULTS)
    finally:
        if hidden is _RESULTS:
            del sys.modules["pandas"]
        else:
            sys.modules["pandas"] = hidden
    if not results.HAS_PANDAS:
        results.pd = _PandasOnFirstUse()
        results.HAS_PANDAS = True


_import_results_without_pandas()

from perfetto.common.exceptions import PerfettoException  # noqa: E402
from perfetto.trace_processor.api import TraceProcessor, TraceProcessorConfig  # noqa: E402

__all__ = ["PerfettoException", "TraceProcessor", "TraceProcessorConfig"]
