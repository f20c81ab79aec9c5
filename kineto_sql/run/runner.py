"""Running one catalog query on a loaded trace: check what it needs, bind its parameters, return rows.

The only SQL text composed here is the entrypoint call (built by `sql_literals.table_function_call`) and
the `INCLUDE PERFETTO MODULE` line of the query's module, whose dotted name is checked word by word by
`sql_literals.identifier`. Everything else comes from .sql files.
"""
from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass, field
from typing import Mapping

from kineto_sql.catalog import spec as catalog
from kineto_sql.catalog.spec import QuerySpec
from kineto_sql.errors import QueryError
from kineto_sql.engine.rows import Rows
from kineto_sql.sql.literals import include_statement, table_function_call

_CAPABILITIES_SQL = importlib.resources.files("kineto_sql").joinpath("sql/capabilities.sql").read_text()
_DEVICE_NAME_SQL = importlib.resources.files("kineto_sql").joinpath("sql/device_name.sql").read_text()


@dataclass(frozen=True)
class Capability:
    name: str
    present: bool
    detail: str


@dataclass(frozen=True)
class QueryRun:
    """The outcome of one query on one trace: its `rows`, or as a pandas DataFrame `df` (made on first
    use). Both are empty when `not_applicable` says why."""

    spec: QuerySpec
    params: Mapping[str, object]
    rows: Rows = field(compare=False)
    not_applicable: str | None = None

    @property
    def id_version(self) -> str:
        return self.spec.id_version

    @functools.cached_property
    def df(self):
        return self.rows.to_pandas()


def resolve_spec(spec_or_id: QuerySpec | str) -> QuerySpec:
    return spec_or_id if isinstance(spec_or_id, QuerySpec) else catalog.get(spec_or_id)


def resolve_params(spec: QuerySpec, params: Mapping[str, object] | None) -> dict[str, object]:
    """Defaults overlaid with `params`, each coerced to its declared type. Unknown names are errors."""
    values = spec.defaults()
    for name, value in (params or {}).items():
        values[name] = spec.param(name).coerce(value)
    return values


def entrypoint_call(spec: QuerySpec, values: Mapping[str, object]) -> str:
    """`SELECT * FROM kineto_<area>_<name>(<literals>)`, arguments in declared order."""
    return table_function_call(spec.entrypoint, [values[p.name] for p in spec.params])


def capabilities(tp) -> dict[str, Capability]:
    """What the loaded trace contains (kineto.lib.capabilities), cached in the processor's `cache`."""
    cache = getattr(tp, "cache", {})
    if "capabilities" not in cache:
        cache["capabilities"] = {row["name"]: Capability(row["name"], bool(row["present"]), str(row["detail"]))
                                 for row in tp.rows(_CAPABILITIES_SQL).records()}
    return cache["capabilities"]


def missing_needs(tp, spec: QuerySpec) -> str | None:
    """One sentence naming what the trace lacks for this query, or None when it has everything."""
    if not spec.needs:
        return None
    caps = capabilities(tp)
    missing = [n for n in spec.needs if not (caps.get(n) and caps[n].present)]
    if not missing:
        return None
    details = "; ".join(f"{n}: {caps[n].detail}" if n in caps else f"{n}: unknown capability" for n in missing)
    return f"{spec.id} needs {', '.join(missing)}, which this trace lacks ({details})"


def trace_device_name(tp) -> str:
    """The trace's GPU model from deviceProperties ('' when absent), cached in the processor's `cache`."""
    cache = getattr(tp, "cache", {})
    if "device_name" not in cache:
        names = tp.rows(_DEVICE_NAME_SQL).column("name")
        cache["device_name"] = str(names[0]) if names and names[0] is not None else ""
    return cache["device_name"]


def fill_trace_params(tp, spec: QuerySpec, values: dict[str, object]) -> dict[str, object]:
    """A `device_name` parameter left empty becomes the trace's own device model: deviceProperties is
    in kineto_metadata, which only kineto-sql's loader creates, so queries take it as a parameter
    (pasted into the Perfetto UI, the user writes it in)."""
    if any(p.name == "device_name" for p in spec.params) and values.get("device_name") == "":
        values = {**values, "device_name": trace_device_name(tp)}
    return values


def run_query(tp, spec_or_id: QuerySpec | str, params: Mapping[str, object] | None = None) -> QueryRun:
    """Runs one query. Checks `needs` first; a lacking trace gives `not_applicable`, not an error."""
    spec = resolve_spec(spec_or_id)
    values = resolve_params(spec, params)
    reason = missing_needs(tp, spec)
    if reason:
        return QueryRun(spec, values, Rows((), []), reason)
    values = fill_trace_params(tp, spec, values)
    try:
        tp.query(include_statement(spec.module))
        rows = tp.rows(entrypoint_call(spec, values))
    except QueryError as exc:
        raise QueryError(f"{spec.id_version} ({spec.path}) failed: {exc}") from None
    return QueryRun(spec, values, rows, None)
