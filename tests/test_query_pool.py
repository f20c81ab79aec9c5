"""kineto_sql.run.pool: queries over one loaded trace in two forked processes, same answers as one."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kineto_sql.run import pool as query_pool
from kineto_sql.run.pool import _Board, _shared_modules, run_all

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus"
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is not available on this platform")


def test_board_seeds_the_two_first_items_then_keeps_work_near_built_modules():
    # item 0 and 1 are the two long chains; 2 shares 0's modules, 3 shares 1's
    board = _Board([frozenset({0, 1, 2, 3}), frozenset({4, 5}), frozenset({0, 1}), frozenset({4, 5, 6})], 7)
    assert board.take(0) == 0
    assert board.take(1) == 1
    assert board.take(1) == 3  # near its own modules (1 new) rather than 2 (2 new, the parent has both)
    assert board.take(0) == 2
    assert board.take(0) is None and board.take(1) is None


def test_board_leaves_an_item_to_the_process_that_built_much_more_of_it():
    board = _Board([frozenset(range(6)), frozenset({7}), frozenset(range(6)) | {6}], 8)
    assert board.take(0) == 0
    assert board.take(1) == 1
    # item 2 needs 7 modules the child lacks and 1 the parent lacks: the child leaves it
    assert board.take(1) is None
    assert board.take(0) == 2


class _FakeTrace:
    choice = None


@needs_fork
def test_run_all_gives_every_outcome_in_order_with_errors_as_outcomes():
    parent = os.getpid()
    items = list(range(12))

    def run(_tp, item):
        time.sleep(0.05)  # long enough for the child to start and take its share
        if item == 5:
            raise ValueError("five")
        return (item * item, os.getpid() == parent)

    outcomes = run_all(_FakeTrace(), items, run, lambda item: [f"m{item % 3}"], jobs=2)
    assert [o.value[0] if o.error is None else None for o in outcomes] == [i * i if i != 5 else None for i in items]
    assert isinstance(outcomes[5].error, ValueError) and str(outcomes[5].error) == "five"
    with pytest.raises(ValueError):
        outcomes[5].get()
    # both processes did some of the work
    ran_here = {o.value[1] for o in outcomes if o.error is None}
    assert ran_here == {True, False}


@needs_fork
def test_a_child_that_dies_leaves_its_items_to_the_parent():
    parent = os.getpid()

    def run(_tp, item):
        if os.getpid() != parent:
            os._exit(3)  # the child dies on its first item
        return item + 100

    outcomes = run_all(_FakeTrace(), list(range(6)), run, lambda item: [f"m{item}"], jobs=2)
    assert [o.get() for o in outcomes] == [100, 101, 102, 103, 104, 105]


def test_serial_for_the_native_engine_and_for_one_job():
    class Native:
        class choice:
            kind = "native"

    parent = os.getpid()
    for tp, jobs in ((Native(), 2), (_FakeTrace(), 1)):
        outcomes = run_all(tp, [1, 2, 3], lambda _tp, item: (item, os.getpid() == parent), lambda item: [], jobs=jobs)
        assert [o.get() for o in outcomes] == [(1, True), (2, True), (3, True)]
    assert not query_pool.can_fork(Native())


@needs_fork
@pytest.mark.parametrize("trace", ["hta_trace_diff_control.json.gz", "hta_sampled_2rank/rank-1.json.gz"])
def test_diagnose_in_two_processes_equals_diagnose_in_one(trace, diagnosed):
    """A fresh load prepared in a child process (loading.background), so the query child builds its lib tables
    itself; the reference is the session's one-process load and diagnosis."""
    from kineto_sql import open_trace
    from kineto_sql.diagnose.run import diagnose_trace

    path = (CORPUS / trace).resolve()
    if not path.exists():
        pytest.skip(f"the public corpus is not at {CORPUS}")
    with open_trace(path, jobs=2) as tp:
        two = diagnose_trace(tp, jobs=2)
    assert two == diagnosed(path)
    assert len(two.findings) >= 1


@needs_fork
def test_the_modules_both_first_items_need_are_built_once_before_the_fork():
    parent = os.getpid()
    built = []

    def build(_tp, module):
        built.append((module, os.getpid() == parent))

    def run(_tp, item):
        time.sleep(0.05)
        return item

    needs = {0: ["a", "b", "c"], 1: ["a", "c", "d"], 2: ["a"], 3: ["d"]}
    outcomes = run_all(_FakeTrace(), [0, 1, 2, 3], run, needs.__getitem__, jobs=2, build=build)
    assert [o.get() for o in outcomes] == [0, 1, 2, 3]
    assert built == [("a", True), ("c", True)]  # in the first item's order, here only


@needs_fork
def test_the_modules_most_items_need_are_built_once_before_the_fork_too():
    parent = os.getpid()
    built = []

    def build(_tp, module):
        built.append((module, os.getpid() == parent))

    # the first two items share nothing; "a" and its include "b" are needed by three of the four items
    # (SHARED_SHARE), "c" and "d" by one each: each process builds those if it needs them
    needs = {0: ["b", "a"], 1: ["c"], 2: ["b", "a", "d"], 3: ["b", "a"]}
    outcomes = run_all(_FakeTrace(), [0, 1, 2, 3], lambda _tp, item: item, needs.__getitem__, jobs=2, build=build)
    assert [o.get() for o in outcomes] == [0, 1, 2, 3]
    assert built == [("b", True), ("a", True)]


def test_a_module_under_three_quarters_of_the_items_is_not_shared():
    # "a" needed by two of three items (0.67 < 0.75), "b" by all three
    assert _shared_modules([["b", "a"], ["b", "c"], ["b", "a"]]) == ["b"]
    assert _shared_modules([["b", "a"], ["b", "a", "c"], ["b", "a"], ["b", "c"]]) == ["b", "a"]
