"""Gzip bombs: small valid gzip files that inflate to any size, built without holding the inflated text.

One block is deflated once, ending on a full flush (which resets the compressor, so the block's deflate
bytes are the same every time), and those bytes are repeated; the CRC32 and length in the trailer are the
true ones. Kinds (the shapes that once filled memory before the loader's check ran):

- events: one event list of small complete events;
- whitespace: spaces inside the event list;
- string: one event whose name is one long string;
- members: spaces as 1 MiB gzip members, one after another;
- nested: one event whose args nest as deep as the size allows (`{"a":` ... `}`).

Used small by tests/test_memory_cap.py (a low limit) and at 20 GiB by bench/bombs.py.
"""
from __future__ import annotations

import zlib
from pathlib import Path

KINDS = ("events", "whitespace", "string", "members", "nested")
BLOCK = 1 << 20
_EVENT = b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}'


def _flushed(raw: bytes) -> bytes:
    """`raw` deflated (raw deflate, no header) from a fresh state and ended on a full flush."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush(zlib.Z_FULL_FLUSH)


def _member(parts: list[tuple[bytes, int]], out) -> int:
    """One gzip member of each (block, times) in order, written to `out` with its true CRC32 and size."""
    out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
    crc, size = 0, 0
    for raw, times in parts:
        deflated = _flushed(raw)
        for _ in range(times):
            out.write(deflated)
            crc = zlib.crc32(raw, crc)
        size += len(raw) * times
    out.write(zlib.compressobj(9, zlib.DEFLATED, -15).flush())  # the final (empty) block
    out.write(crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))
    return size


def build(kind: str, mib: int, path: Path) -> int:
    """Writes a bomb of `kind` inflating to about `mib` MiB at `path`; returns its inflated size in bytes."""
    with open(path, "wb") as out:
        if kind == "members":
            size = _member([(b'{"traceEvents":[', 1)], out)
            one = _member_bytes(b" " * BLOCK)
            for _ in range(mib):
                out.write(one)
            return size + mib * BLOCK + _member([(_EVENT + b"]}", 1)], out)
        if kind == "events":
            parts = [(b'{"traceEvents":[', 1), ((_EVENT + b",") * (BLOCK // (len(_EVENT) + 1)), mib),
                     (_EVENT + b"]}", 1)]
        elif kind == "whitespace":
            parts = [(b'{"traceEvents":[', 1), (b" " * BLOCK, mib), (_EVENT + b"]}", 1)]
        elif kind == "string":
            parts = [(b'{"traceEvents":[{"ph":"X","name":"', 1), (b"a" * BLOCK, mib),
                     (b'","pid":1,"tid":1,"ts":1,"dur":1}]}', 1)]
        elif kind == "nested":
            depth = BLOCK // 5
            parts = [(_EVENT[:-1] + b',"args":', 1), (b'{"a":' * depth, mib // 2), (b"1", 1),
                     (b"}" * depth, mib // 2), (b"}", 1)]
            parts = [(b'{"traceEvents":[', 1)] + parts + [(b"]}", 1)]
        else:
            raise ValueError(f"unknown bomb kind {kind!r}")
        return _member(parts, out)


def _member_bytes(raw: bytes) -> bytes:
    import io

    buffer = io.BytesIO()
    _member([(raw, 1)], buffer)
    return buffer.getvalue()
