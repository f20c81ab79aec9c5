"""The native backend (a trace_processor_shell binary) gives the same rows as the embedded wasm engine.

No binary can be downloaded here, so this runs only where one is given: KINETO_SQL_TP_SHELL=/path/to/shell.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kineto_sql import EngineChoice, open_trace
from kineto_sql.run.runner import run_query
from tests.conftest import CORPUS, needs_corpus

SHELL = os.environ.get("KINETO_SQL_TP_SHELL")


@needs_corpus
@pytest.mark.skipif(not SHELL or not Path(SHELL).exists(),
                    reason="no native trace_processor_shell: set KINETO_SQL_TP_SHELL to test the native backend")
def test_native_and_wasm_agree_on_slices_and_the_step_table():
    path = CORPUS / "hta_sampled_2rank" / "rank-0.json.gz"
    with open_trace(path, EngineChoice("native", SHELL)) as native, open_trace(path, EngineChoice("wasm")) as wasm:
        sql = "SELECT count(*) AS n, sum(dur) AS d FROM slice"
        assert native.df(sql).values.tolist() == wasm.df(sql).values.tolist()
        assert run_query(native, "reading.step_table").df.equals(run_query(wasm, "reading.step_table").df)
