"""A query as one self-contained script for the Perfetto UI query page (`kineto-sql show ID --paste`).

The bundle is: every kineto lib module the query includes, transitively, in dependency order, with its
kineto INCLUDE lines removed (Perfetto stdlib INCLUDEs stay: the UI has the stdlib), then the query's own
SQL, then `SELECT * FROM <entrypoint>(<defaults or params>);`. Every statement is CREATE OR REPLACE, so
the script runs twice in a row in one session.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kineto_sql.catalog.spec import QuerySpec
from kineto_sql.sql.includes import kineto_dependencies, module_path, strip_kineto_includes
from kineto_sql.run.runner import entrypoint_call, resolve_params, resolve_spec


@dataclass(frozen=True)
class PasteBundle:
    """A query for a bare session: `setup` (every module it needs and the query's own SQL) and `call`
    (`SELECT * FROM <entrypoint>(<literals>)`, no trailing `;`). `text` is the script to paste."""

    setup: str
    call: str

    @property
    def text(self) -> str:
        return f"{self.setup}\n\n{self.call};\n"


def paste_parts(spec_or_id: QuerySpec | str, params: Mapping[str, object] | None = None) -> PasteBundle:
    spec = resolve_spec(spec_or_id)
    values = resolve_params(spec, params)
    parts = [f"-- kineto-sql {spec.id_version}: {spec.title}\n-- Paste into the Perfetto UI query page and run."]
    for module in kineto_dependencies(spec.sql):
        parts.append(f"-- ---- {module} ----\n" + strip_kineto_includes(module_path(module).read_text()).strip())
    parts.append(f"-- ---- {spec.module} ----\n" + strip_kineto_includes(spec.sql).strip())
    return PasteBundle("\n\n".join(parts), entrypoint_call(spec, values))


def paste_bundle(spec_or_id: QuerySpec | str, params: Mapping[str, object] | None = None) -> str:
    """The script to paste: `paste_parts(...).text`."""
    return paste_parts(spec_or_id, params).text
