"""A query's result as plain rows: what diagnose reads, without pandas.

pandas (with the pyarrow it loads) is about 75 MB of a process's memory and 0.7 s of its start; diagnose
only reads a few columns of a few dozen small results, so it reads them as lists. `to_pandas()` gives
the same DataFrame as perfetto's `as_pandas_dataframe()` for the callers that want one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Rows:
    columns: tuple[str, ...]
    data: list[list]  # one list of Python values (int, float, str, bytes, None) per row

    @classmethod
    def of_result(cls, result) -> Rows:
        """From a perfetto QueryResultIterator, read before it is iterated."""
        columns = tuple(result.column_names)
        if not columns or not result.row_count:
            return cls(columns, [])
        return cls(columns, result.cells.reshape((result.row_count, len(columns))).tolist())

    @classmethod
    def of_columns(cls, columns: dict[str, list]) -> Rows:
        """From {column: values}, the columns of equal length."""
        names = tuple(columns)
        return cls(names, [list(row) for row in zip(*columns.values())])

    def __len__(self) -> int:
        return len(self.data)

    @property
    def empty(self) -> bool:
        return not self.data

    def __contains__(self, column: str) -> bool:
        return column in self.columns

    def column(self, name: str) -> list:
        at = self.columns.index(name)
        return [row[at] for row in self.data]

    def record(self, index: int) -> dict:
        return dict(zip(self.columns, self.data[index]))

    def records(self, limit: int | None = None) -> list[dict]:
        return [dict(zip(self.columns, row)) for row in self.data[:limit]]

    def to_pandas(self):
        import numpy as np
        import pandas as pd

        cells = np.empty((len(self.data), len(self.columns)), dtype=object)
        for i, row in enumerate(self.data):
            cells[i, :] = row
        return pd.DataFrame(cells, columns=list(self.columns))


@dataclass(frozen=True)
class Columns:
    """A query's result read column by column: each column one list, no list per row. For the large results
    read straight into numpy (the dependency graph's nodes and edges), where making a list per row and then
    picking each column out of the rows cost more than the query."""

    columns: tuple[str, ...]
    cells: object  # the result's cells, one row per result row (numpy object array); None when empty

    @classmethod
    def of_result(cls, result) -> Columns:
        """From a perfetto QueryResultIterator, read before it is iterated."""
        import numpy as np

        columns = tuple(result.column_names)
        if not columns or not result.row_count:
            return cls(columns, None)
        return cls(columns, np.asarray(result.cells, dtype=object).reshape((result.row_count, len(columns))))

    def __len__(self) -> int:
        return 0 if self.cells is None else len(self.cells)

    def column(self, name: str) -> list:
        at = self.columns.index(name)
        return [] if self.cells is None else self.cells[:, at].tolist()


def missing(value) -> bool:
    """None, or a float NaN (what SQL NULL becomes once it has been through pandas)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def numeric(value):
    """The number a cell holds, as pandas.to_numeric(errors="coerce") reads it; None when it holds none."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else value
    if isinstance(value, (str, bytes)):
        text = value.decode() if isinstance(value, bytes) else value
        for kind in (int, float):
            try:
                number = kind(text)
            except ValueError:
                continue
            return None if isinstance(number, float) and math.isnan(number) else number
    return None


def numbers(values, missing_as=None) -> list:
    """The cells as numbers (pandas.to_numeric(errors="coerce")), a cell without one as `missing_as`."""
    out = []
    for value in values:
        number = numeric(value)
        out.append(missing_as if number is None else number)
    return out


def column_sum(values):
    """A column's sum as pandas takes it: exact for integers, numpy's pairwise sum once a float is in it."""
    values = list(values)
    if any(isinstance(v, float) for v in values):
        import numpy as np

        return float(np.sum(np.array(values, dtype=np.float64)))
    return sum(values)


def truthy(value) -> bool:
    """A cell that holds a true value (a NULL is not true)."""
    return bool(value) and not missing(value)


def dur_by(rows: list[dict], key: str, keep_missing: bool = False) -> dict:
    """The sum of `dur` per value of `key`, keys in sorted order (a pandas groupby: rows whose key is
    missing are left out unless `keep_missing`)."""
    groups: dict = {}
    for row in rows:
        k = row[key]
        if missing(k):
            if not keep_missing:
                continue
            k = None
        groups.setdefault(k, []).append(row["dur"])
    ordered = sorted((k for k in groups if k is not None), key=sort_key) + ([None] if None in groups else [])
    return {k: column_sum(groups[k]) for k in ordered}


def sort_key(value):
    """Orders mixed cells as pandas sorts group keys here: numbers before texts."""
    return (isinstance(value, str), value)


def present(rows: Rows, column: str) -> list:
    """The column's cells that hold a value (none when the rule returns no such column)."""
    return [v for v in rows.column(column) if not missing(v)] if column in rows else []
