"""A seeded property-based run over hostile file names, directories of ranks and command lines (see
tests/input_fuzz.py for the rules each run is held to). The same derandomized examples every run, so CI
is stable; bench/fuzz_inputs.py runs many more."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from tests import input_fuzz

EXAMPLES = 8


# no shrinking: each example runs the console script (seconds); the failing example is printed as drawn
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(layout=input_fuzz.layouts(), command=input_fuzz.commands())
def test_hostile_names_and_rank_directories_get_sentences_not_tracebacks(layout, command):
    root = input_fuzz.fresh_root()
    try:
        target = input_fuzz.build(layout, root)
        outcome = input_fuzz.run(command, target)
        input_fuzz.check(layout, outcome, root)
    finally:
        input_fuzz.remove(root)
