"""The loader child forks before numpy is imported and, on a trace that needs no overlap lane and no
rebase, prepares it without importing numpy at all: numpy's import (~58 ms here) would otherwise sit
between the command's start and the engine's first piece (kineto_sql.cli.launch starts the child first)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kineto_sql.loading import rawcheck, scan
from tests.conftest import CORPUS

PREPARE_AND_LIST_IMPORTS = """
import sys
from pathlib import Path
from kineto_sql.loading import background, prepare
before = 'numpy' in sys.modules
prepared = prepare.prepare_path(Path(sys.argv[1]), facts_helper=True)
written = sum(len(piece) for piece in prepared.chunks())
kinds = sorted(fix.kind for fix in prepared.report.fixes if fix.count)
print(before, 'numpy' in sys.modules, written, ' '.join(kinds))
"""


def _prepare_in_a_fresh_process(path) -> list[str]:
    if not path.exists():
        pytest.skip(f"{path} is not here (the shared corpus)")
    done = subprocess.run([sys.executable, "-c", PREPARE_AND_LIST_IMPORTS, str(path)], capture_output=True,
                          text=True, check=True)
    return done.stdout.split()


@pytest.mark.skipif(scan._cscan is None or scan._coverlaps is None or rawcheck._crawcheck is None,
                    reason="without the compiled loops the loader takes numpy's forms of the sorts")
@pytest.mark.parametrize("name", ["hta_trace_diff_control.json.gz", "dlrm_8rank/worker0.pt.trace.json.gz"])
def test_a_trace_without_lanes_or_rebase_is_prepared_without_numpy(name):
    imported_first, imported_after, written, *kinds = _prepare_in_a_fresh_process(CORPUS / name)
    assert imported_first == "False", "importing the loader imports numpy: the child would fork after it"
    assert int(written) > 100_000
    assert "overlap_lane" not in kinds and "timestamps_rebased" not in kinds
    assert imported_after == "False", f"preparing {name} imported numpy (fixes: {kinds})"


def test_the_console_script_forks_the_child_before_numpy_is_imported():
    imported = subprocess.run([sys.executable, "-c", "import sys; from kineto_sql.cli import launch; "
                               "from kineto_sql.loading import background; print(sorted(m for m in sys.modules "
                               "if m.split('.')[0] in ('numpy', 'pandas')))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert imported == "[]"
