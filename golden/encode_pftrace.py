"""Encode a CPU Kineto JSON trace as a Perfetto protobuf trace (.pftrace) with torch's own encoder.

torch 2.15 writes .pftrace only through its experimental Cuspy backend (``CuspyConfig``), which needs CUPTI
and a CUDA driver: on a CPU-only machine the profiler warns "Cuspy observer unavailable; skipping chrome trace
export" and writes nothing. The encoder behind it (``torch.profiler._cuspy.trace``) takes the Kineto CPU JSON
plus a window of GPU records; given an empty window it encodes the CPU events alone, which is the CPU half of
what a GPU session would write.

Usage (torch >= 2.15 with cupti-python installed):
    python golden/encode_pftrace.py TRACE.json.gz OUT.pftrace
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from torch.profiler._cuspy import trace as cuspy_trace

    cuspy_trace.merge_trace_window_into_chrome_trace(argv[0], argv[1], {"columns": {}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
