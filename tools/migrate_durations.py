"""One-off (issue 14): duration parameters in us / ms become DURATION in ns (`max_op_us DOUBLE 50` ->
`max_op DURATION`, default `50us`). Results are unchanged; the parameter's name and unit change, so the
query's version is bumped. Rerunnable: a file already converted is left alone."""
from __future__ import annotations

import re
from pathlib import Path

KINETO = Path(__file__).resolve().parents[1] / "queries" / "kineto"
# file: [(old name, new name, unit of the old value)]
PARAMS = {
    "catalog/gc_gil_stall": [("min_gc_ms", "min_gc", "ms"), ("min_gap_ms", "min_gap", "ms")],
    "catalog/optimizer_step_dominance": [("max_op_us", "max_op", "us")],
    "catalog/small_op_storm": [("max_op_us", "max_op", "us")],
    "catalog/with_stack_overhead": [("frame_cost_us", "frame_cost", "us")],
    "guide/overhead_vs_compute": [("small_op_us", "small_op", "us")],
    "hta/idle_time_breakdown": [("consecutive_kernel_delay_us", "consecutive_kernel_delay", "us")],
    "hta/kernel_launch_stats": [("runtime_cutoff_us", "runtime_cutoff", "us"),
                                ("launch_delay_cutoff_us", "launch_delay_cutoff", "us")],
    "reading/gap_attribution": [("min_gap_us", "min_gap", "us")],
    "reading/gap_totals": [("min_gap_us", "min_gap", "us")],
}
SCALE = {"us": ("1000", "1e3"), "ms": ("1e6", "1e6")}


def convert(path: Path, params: list[tuple[str, str, str]]) -> bool:
    text = path.read_text()
    if not any(re.search(rf"\b{old}\b", text) for old, _, _ in params):
        return False
    for old, new, unit in params:
        factor, divisor = SCALE[unit]
        text = re.sub(rf"^(-- default {old}: )(\S+)$", lambda m: f"-- default {new}: {_fmt(m[2])}{unit}", text,
                      flags=re.MULTILINE)
        text = re.sub(rf"\b{old}(\s+)DOUBLE\b", rf"{new}\1DURATION", text)
        # value * scale -> value (ns); a compare in the old unit -> the ns value scaled back; printf args keep
        # their old-unit text
        text = re.sub(rf"\${old}\s*\*\s*(?:1000|1e3|1e6|1000000)\b", f"${new}", text)
        text = re.sub(rf"\(ts - prev_end\) / 1e3 < \${old}\b", f"(ts - prev_end) < ${new}", text)
        text = re.sub(rf"(cpu_us\s*(?:<=|>)\s*|delay_us\s*>\s*)\${old}\b", rf"\1${new} / {divisor}", text)
        text = re.sub(rf"^(\s*)\${old},$", rf"\1${new} / {divisor},", text, flags=re.MULTILINE)
        text = re.sub(rf"\b{old}\b", new, text)
    text = re.sub(r"^-- version: (\d+)$", lambda m: f"-- version: {int(m[1]) + 1}", text, count=1,
                  flags=re.MULTILINE)
    path.write_text(text)
    return True


def _fmt(value: str) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else value


if __name__ == "__main__":
    changed = [f for f, params in PARAMS.items() if convert(KINETO / f"{f}.sql", params)]
    print(f"converted {len(changed)} files: {', '.join(changed)}")
