"""Trace diff: what changed between two traces, and why one is faster or slower.

diff v2 (the default): each trace is summarised by the `reading.diff_side` query (per step: width, CPU /
GPU busy, kernel total, GPU time by kernel class and idle; every op and kernel by call path). Both sides
are reduced to one window: the mean per step over all steps (default), the median-width step, or one
step number, so traces with different step counts compare. Then:

- a headline sentence. When both sides have at least 3 steady iteration windows, it is the verdict of
  kineto_sql.diff.verdict: the change in the median step with its 95% bootstrap interval ("AFTER is
  faster by 28.2% (95% CI ...)" or "No change beyond noise"), the ledger buckets (kineto.lib.ledger:
  busy.gemm, idle.dataloader, idle.launch...) that moved beyond noise with theirs, and the reason from
  the device busy / device idle intervals; the comparability checks follow. Otherwise, from the point
  values: median step before -> after, GPU busy, kernel total, host busy, the buckets that moved most and
  the reason: host-side when the kernels did the same work (kernel total moved less than a quarter of the
  step change) while GPU idle (the idle.* buckets) moved with the step; device-side when the kernel total
  moved at least half of it; both otherwise.
- rows ranked by time moved, status by time: increased / decreased when the per-step time moved by more
  than `threshold_pct` of its before time and `min_us`; otherwise unchanged (a count change alone is not a
  change that costs time). appeared / disappeared for names only on one side.
- structural alignment: kernels are keyed by the call path of the op that launched them; kernels that
  exist on one side only but share a call path with kernels on the other side only are the same work
  renamed (another cuDNN / cuBLAS algorithm, a vendor library, a recompiled triton kernel) and pair into
  one `renamed` row.

The HTA-compatible diff (`hta.op_summary`: by name, the first step, status by count, like HTA's
TraceDiff.compare_traces) stays available as `SummaryOptions` / `diff_summaries`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import pandas as pd

STATUSES = ("appeared", "disappeared", "increased", "decreased", "unchanged")


@dataclass(frozen=True)
class SummaryOptions:
    all_steps: bool = False
    step: int = -1

    def params(self) -> dict[str, object]:
        return {"all_steps": self.all_steps, "step": self.step}


def summarise(tp, options: SummaryOptions = SummaryOptions()) -> pd.DataFrame:
    """One trace's per-(device, name) summary, from the hta.op_summary query."""
    from kineto_sql.run.runner import run_query

    return run_query(tp, "hta.op_summary", options.params()).df


def summarise_file(path, options: SummaryOptions = SummaryOptions(), engine=None) -> pd.DataFrame:
    """Loads a trace, summarises it and closes it (the unit of work of a diff worker process)."""
    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace

    tp = open_trace(path, engine or EngineChoice())
    try:
        return summarise(tp, options)
    finally:
        tp.close()


def diff_summaries(before: pd.DataFrame, after: pd.DataFrame, device: str | None = None) -> pd.DataFrame:
    """Outer join of two summaries by (device, name), with deltas and a status per row.

    status: appeared (only in after), disappeared (only in before), increased / decreased / unchanged
    by count. Sorted by the absolute change in total time, largest first.
    """
    cols = ["device", "name", "count", "total_us"]
    b = before[cols].rename(columns={"count": "before_count", "total_us": "before_total_us"})
    a = after[cols].rename(columns={"count": "after_count", "total_us": "after_total_us"})
    merged = b.merge(a, on=["device", "name"], how="outer", indicator=True)
    if device:
        merged = merged[merged["device"] == device]
    for c in ("before_count", "after_count", "before_total_us", "after_total_us"):
        merged[c] = merged[c].fillna(0)
    merged["before_count"] = merged["before_count"].astype(int)
    merged["after_count"] = merged["after_count"].astype(int)
    merged["before_mean_us"] = _safe_div(merged["before_total_us"], merged["before_count"])
    merged["after_mean_us"] = _safe_div(merged["after_total_us"], merged["after_count"])
    merged["diff_count"] = merged["after_count"] - merged["before_count"]
    merged["diff_total_us"] = merged["after_total_us"] - merged["before_total_us"]
    merged["diff_mean_us"] = merged["after_mean_us"].fillna(0) - merged["before_mean_us"].fillna(0)
    merged["status"] = [
        "appeared" if m == "right_only" else "disappeared" if m == "left_only"
        else "increased" if d > 0 else "decreased" if d < 0 else "unchanged"
        for m, d in zip(merged["_merge"], merged["diff_count"])]
    merged = merged.drop(columns="_merge")
    order = merged["diff_total_us"].abs().sort_values(ascending=False, kind="stable").index
    return merged.loc[order, ["device", "name", "status", "before_count", "after_count", "diff_count",
                              "before_total_us", "after_total_us", "diff_total_us",
                              "before_mean_us", "after_mean_us", "diff_mean_us"]].reset_index(drop=True)


def status_counts(diff: pd.DataFrame) -> dict[str, int]:
    counts = diff["status"].value_counts()
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def _safe_div(total: pd.Series, count: pd.Series) -> pd.Series:
    return total.where(count > 0) / count.where(count > 0)


# ---------------------------------------------------------------------------------------------- v2


@dataclass(frozen=True)
class DiffOptions:
    """Which window to compare and when a row counts as changed."""

    # all: mean per step over every step; median: the median-width step; step: ProfilerStep#`step`.
    window: str = "all"
    step: int | None = None
    threshold_pct: float = 5.0
    min_us: float = 10.0


@dataclass(frozen=True)
class Side:
    """One trace, as the worker brings it back: the reading.diff_side rows and its window summary (the
    verdict's input; None for a side built from rows alone)."""

    path: str
    rows: pd.DataFrame
    summary: object = None  # diff_verdict.SideSummary


@dataclass(frozen=True)
class Window:
    """One side reduced to its window: per-step means (ns) of the window quantities and buckets."""

    steps: tuple
    median_step_ns: float
    totals: dict
    buckets: dict
    rows: pd.DataFrame  # kind, path, key, count, dur (per-step means)


@dataclass
class DiffReport:
    before: Window
    after: Window
    rows: pd.DataFrame
    headline: str
    step_change_pct: float | None
    status_counts: dict = field(default_factory=dict)
    verdict: object = None  # diff_verdict.Verdict, when both sides have a summary


STATUSES_V2 = ("appeared", "disappeared", "renamed", "increased", "decreased", "unchanged")


def side_file(path, engine=None) -> Side:
    """Loads a trace, runs reading.diff_side and closes it (the unit of work of a diff worker process)."""
    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace
    from kineto_sql.run.runner import run_query

    from kineto_sql.diff.verdict import summarise

    tp = open_trace(path, engine or EngineChoice())
    try:
        return Side(str(path), run_query(tp, "reading.diff_side").df, summarise(tp, str(path)))
    finally:
        tp.close()


def reduce_window(rows: pd.DataFrame, options: DiffOptions = DiffOptions()) -> Window:
    """The side's window: which steps, and per-step means of everything launched or run in them."""
    rows = rows.copy()
    rows["step"] = rows["step"].astype("Int64")
    widths = rows[(rows["kind"] == "window") & (rows["key"] == "width")]
    stepped = widths.dropna(subset=["step"])
    if stepped.empty:
        chosen: tuple = (None,)
        sel = rows[rows["step"].isna()]
    else:
        if options.window == "step":
            if options.step not in set(stepped["step"].astype(int)):
                from kineto_sql.errors import KinetoSqlError

                have = ", ".join(str(int(s)) for s in sorted(stepped["step"]))
                raise KinetoSqlError(f"ProfilerStep#{options.step} is not in the trace (steps: {have})")
            chosen = (options.step,)
        elif options.window == "median":
            ordered = stepped.sort_values(["dur", "step"]).reset_index(drop=True)
            chosen = (int(ordered.loc[(len(ordered) - 1) // 2, "step"]),)
        else:
            chosen = tuple(int(s) for s in sorted(stepped["step"]))
        sel = rows[rows["step"].isin(chosen)]
    n = len(chosen)
    sel_widths = sel[(sel["kind"] == "window") & (sel["key"] == "width")]["dur"]
    median = float(sel_widths.median()) if len(sel_widths) else float("nan")
    per = sel.groupby(["kind", "path", "key"], dropna=False)[["count", "dur"]].sum().reset_index()
    per["count"] = per["count"] / n
    per["dur"] = per["dur"] / n
    win = per[per["kind"] == "window"].set_index("key")["dur"].to_dict()
    buckets = per[per["kind"] == "bucket"].set_index("key")["dur"].to_dict()
    items = per[per["kind"].isin(["cpu", "gpu"])].reset_index(drop=True)
    return Window(chosen, median, win, buckets, items)


def diff_windows(before: Window, after: Window, options: DiffOptions = DiffOptions(),
                 device: str | None = None) -> pd.DataFrame:
    """Rows per (device, call path, name), per-step times in us, ranked by time moved; renamed kernels paired."""
    key = ["kind", "path", "key"]
    b = before.rows.rename(columns={"count": "before_count", "dur": "before_ns"})
    a = after.rows.rename(columns={"count": "after_count", "dur": "after_ns"})
    m = b.merge(a, on=key, how="outer", indicator=True)
    m["path"] = m["path"].fillna("")
    for c in ("before_count", "after_count", "before_ns", "after_ns"):
        m[c] = m[c].fillna(0.0)
    m["status"] = m["_merge"].astype(str).map({"left_only": "disappeared", "right_only": "appeared", "both": "both"})
    m = m.drop(columns="_merge")
    m = _pair_renamed(m)
    m["diff_ns"] = m["after_ns"] - m["before_ns"]
    moved = m["diff_ns"].abs() > [max(options.min_us * 1e3, options.threshold_pct / 100.0 * b_ns)
                                  for b_ns in m["before_ns"]]
    both = m["status"] == "both"
    m.loc[both & moved & (m["diff_ns"] > 0), "status"] = "increased"
    m.loc[both & moved & (m["diff_ns"] < 0), "status"] = "decreased"
    m.loc[m["status"] == "both", "status"] = "unchanged"
    out = pd.DataFrame({
        "device": m["kind"].str.upper(),
        "status": m["status"],
        "name": m["key"],
        "path": m["path"],
        "before_count": m["before_count"],
        "after_count": m["after_count"],
        "before_us": m["before_ns"] / 1e3,
        "after_us": m["after_ns"] / 1e3,
        "diff_us": m["diff_ns"] / 1e3,
        "diff_pct": [100.0 * d / bn if bn > 0 else math.nan for d, bn in zip(m["diff_ns"], m["before_ns"])],
    })
    if device:
        out = out[out["device"] == device.upper()]
    order = out["diff_us"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order].reset_index(drop=True)


def _pair_renamed(m: pd.DataFrame) -> pd.DataFrame:
    """GPU rows only on one side, under a call path that has rows only on the other side: one renamed row."""
    gpu_one_side = (m["kind"] == "gpu") & m["status"].isin(["appeared", "disappeared"]) & (m["path"] != "")
    groups = m[gpu_one_side].groupby("path")
    drop, add = [], []
    for path, g in groups:
        gone, new = g[g["status"] == "disappeared"], g[g["status"] == "appeared"]
        if gone.empty or new.empty:
            continue
        drop.extend(g.index)
        name = (f"{_names(gone['key'])} -> {_names(new['key'])}")
        add.append({"kind": "gpu", "path": path, "key": name, "status": "renamed",
                    "before_count": gone["before_count"].sum(), "after_count": new["after_count"].sum(),
                    "before_ns": gone["before_ns"].sum(), "after_ns": new["after_ns"].sum()})
    if not drop:
        return m
    return pd.concat([m.drop(index=drop), pd.DataFrame(add)], ignore_index=True)


def _names(names: pd.Series) -> str:
    names = sorted(set(names))
    return names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} more)"


def _fmt_ms(ns: float) -> str:
    return f"{ns / 1e6:.1f} ms" if abs(ns) >= 1e6 else f"{ns / 1e3:.0f} us"


def _signed(ns: float) -> str:
    return f"{ns / 1e6:+.1f} ms" if abs(ns) >= 1e6 else f"{ns / 1e3:+.0f} us"


def _delta(before: float, after: float) -> str:
    d = after - before
    pct = f" ({100.0 * d / before:+.0f}%)" if before else ""
    return f"{_fmt_ms(before)} -> {_fmt_ms(after)}{pct}"


def headline(before: Window, after: Window, rows: pd.DataFrame, options: DiffOptions = DiffOptions(),
             verdict=None) -> str:
    """One sentence (or three): what changed and why it is faster or slower. With a `verdict`
    (diff_verdict.Verdict) that has an interval, the change and the buckets that moved are read from the
    steady windows with their 95% intervals; otherwise from the window's point values, against
    `threshold_pct`, and the verdict's comparability problems (if any) are said at the end."""
    from kineto_sql.diff import verdict as diff_verdict

    if verdict is not None and verdict.step is not None:
        return _interval_headline(before, after, rows, verdict)
    sb, sa = before.median_step_ns, after.median_step_ns
    if not (sb == sb and sa == sa) or sb <= 0:
        return "No step width on one side: nothing to compare."
    pct = 100.0 * (sa - sb) / sb
    label = "median step" if len(before.steps) > 1 or len(after.steps) > 1 else "step"
    if abs(pct) < options.threshold_pct:
        said = f"No material change ({pct:+.1f}%, under the {options.threshold_pct:g}% threshold)"
    else:
        said = f"AFTER is {abs(pct):.1f}% {'faster' if pct < 0 else 'slower'}"
    parts = [f"{label} {_delta(sb, sa)}"] + _totals(before, after)
    moved = sorted(((k, after.buckets.get(k, 0.0) - before.buckets.get(k, 0.0))
                    for k in set(before.buckets) | set(after.buckets)), key=lambda kv: -abs(kv[1]))
    moved = [(k, d) for k, d in moved if abs(d) >= options.min_us * 1e3][:3]
    text = f"{said}: " + ", ".join(parts) + " per step."
    if moved:
        text += " Moved most: " + ", ".join(f"{k} {_signed(d)}" for k, d in moved) + "."
    text += " " + _reason(before, after, rows, pct, options)
    if verdict is not None and verdict.checks:
        text += " " + diff_verdict.comparability_phrase(verdict)
    return text


def _interval_headline(before: Window, after: Window, rows: pd.DataFrame, verdict) -> str:
    from kineto_sql.diff import verdict as diff_verdict

    parts = [f"median step {_delta(verdict.median_before_ns, verdict.median_after_ns)}"] + _totals(before, after)
    has_gpu = before.totals.get("kernel_total", 0.0) > 0 or after.totals.get("kernel_total", 0.0) > 0
    text = (f"{diff_verdict.step_phrase(verdict)}: " + ", ".join(parts) + " per step. "
            + diff_verdict.moved_phrase(verdict) + " " + diff_verdict.reason(verdict, has_gpu, _host_hint(rows)))
    if verdict.checks:
        text += " " + diff_verdict.comparability_phrase(verdict)
    return text + " " + diff_verdict.captures_phrase(verdict)


def _totals(before: Window, after: Window) -> list[str]:
    tb, ta = before.totals, after.totals
    return [f"{name} {_delta(tb.get(key, 0.0), ta.get(key, 0.0))}"
            for key, name in (("gpu_busy", "GPU busy"), ("kernel_total", "kernel total"), ("cpu_busy", "host busy"))
            if key in tb or key in ta]


def _host_hint(rows: pd.DataFrame) -> str:
    cpu = rows[(rows["device"] == "CPU") & (rows["status"] != "unchanged")]
    if not len(cpu):
        return ""
    top = cpu.iloc[0]
    return f"; the largest host change is {short_name(top['name'], 60)} {_signed(top['diff_us'] * 1e3)}"


def _reason(before: Window, after: Window, rows: pd.DataFrame, pct: float, options: DiffOptions) -> str:
    d_width = after.totals.get("width", 0.0) - before.totals.get("width", 0.0)
    d_kernel = after.totals.get("kernel_total", 0.0) - before.totals.get("kernel_total", 0.0)
    d_idle = _kind_total(after, "idle.") - _kind_total(before, "idle.")
    host_hint = _host_hint(rows)
    if abs(pct) < options.threshold_pct or d_width == 0:
        return "Why: nothing moved the step beyond the threshold" + host_hint + "."
    gain = "saving" if d_width < 0 else "loss"
    has_gpu = before.totals.get("kernel_total", 0.0) > 0 or after.totals.get("kernel_total", 0.0) > 0
    if not has_gpu:
        return f"Why: a CPU-only trace, so the {gain} is host time" + host_hint + "."
    if abs(d_kernel) <= 0.25 * abs(d_width) and d_idle * d_width > 0:
        return (f"Why: the GPU did the same work (kernel total {d_kernel / 1e6:+.1f} ms) while GPU idle moved "
                f"{d_idle / 1e6:+.1f} ms per step: the {gain} is host-side" + host_hint + ".")
    if d_kernel * d_width > 0 and abs(d_kernel) >= 0.5 * abs(d_width):
        kernel_buckets = sorted(((k, after.buckets.get(k, 0.0) - before.buckets.get(k, 0.0))
                                 for k in set(before.buckets) | set(after.buckets) if k.startswith("busy.")),
                                key=lambda kv: kv[1] if d_width < 0 else -kv[1])
        top = kernel_buckets[0] if kernel_buckets else ("kernels", d_kernel)
        return (f"Why: the kernels themselves took {d_kernel / 1e6:+.1f} ms per step, most in {top[0]} "
                f"({top[1] / 1e6:+.1f} ms): the {gain} is device-side.")
    return (f"Why: both sides moved: kernel total {d_kernel / 1e6:+.1f} ms and GPU idle {d_idle / 1e6:+.1f} ms "
            "per step" + host_hint + ".")


def _kind_total(window: Window, prefix: str) -> float:
    return sum(v for k, v in window.buckets.items() if k.startswith(prefix))


def reduce_captures(captures: list, options: DiffOptions = DiffOptions()) -> Window:
    """Several captures of one side reduced to one window: each capture's window (reduce_window), then the
    mean over captures of every per-step quantity (a row absent from a capture counts 0 there); the median
    step is the median of the captures' medians. One capture: its window."""
    windows = [reduce_window(c, options) for c in captures]
    if len(windows) == 1:
        return windows[0]
    k = len(windows)

    def mean(dicts):
        return {key: sum(d.get(key, 0.0) for d in dicts) / k for key in sorted({x for d in dicts for x in d})}

    rows = pd.concat([w.rows for w in windows], ignore_index=True)
    rows = rows.groupby(["kind", "path", "key"], dropna=False)[["count", "dur"]].sum().reset_index()
    rows["count"], rows["dur"] = rows["count"] / k, rows["dur"] / k
    medians = [w.median_step_ns for w in windows if w.median_step_ns == w.median_step_ns]
    median = float(pd.Series(medians).median()) if medians else float("nan")
    return Window(tuple(s for w in windows for s in w.steps), median, mean([w.totals for w in windows]),
                  mean([w.buckets for w in windows]), rows)


def build_diff(before, after, options: DiffOptions = DiffOptions(), device: str | None = None) -> DiffReport:
    """The rows of the chosen window and, when both sides carry a summary, the verdict of the steady windows.
    `before`, `after`: one Side or a list of them (several captures of the same code)."""
    from kineto_sql.diff.verdict import verdict as steady_verdict

    before, after = _as_list(before), _as_list(after)
    b, a = reduce_captures([s.rows for s in before], options), reduce_captures([s.rows for s in after], options)
    rows = diff_windows(b, a, options, device)
    sb, sa = b.median_step_ns, a.median_step_ns
    change = 100.0 * (sa - sb) / sb if sb == sb and sa == sa and sb > 0 else None
    counts = rows["status"].value_counts()
    summaries = [s.summary for s in before], [s.summary for s in after]
    verdict = steady_verdict(*summaries) if all(x is not None for x in summaries[0] + summaries[1]) else None
    return DiffReport(b, a, rows, headline(b, a, rows, options, verdict), change,
                      {s: int(counts.get(s, 0)) for s in STATUSES_V2}, verdict)


def _as_list(side) -> list:
    return list(side) if isinstance(side, (list, tuple)) else [side]


_PARAMS = re.compile(r"(?<=[\w>])\((?:[^()]|\([^()]*\))*\)\s*$")
_NAMESPACE = re.compile(r"\b[A-Za-z_]\w*::")


def short_name(name: str, width: int = 48) -> str:
    """A kernel or op name that fits `width` columns. Only names too long are touched, in this order:
    `void` and the parameter list go, then namespaces, then template arguments fold to the first one that
    names something (`vectorized_elementwise_kernel<CUDAFunctor_add<int>, ...>`), then the tail is cut."""
    text = str(name).strip()
    if text.startswith("void "):
        text = text[5:]
    if len(text) <= width:
        return text
    text = _PARAMS.sub("", text).strip() or text
    if len(text) > width:
        text = _NAMESPACE.sub("", text)
    if len(text) > width and "<" in text:
        head, _, rest = text.partition("<")
        args = _template_args(rest)
        named = next((a for a in args if re.search(r"[A-Za-z_]", a) and a not in ("true", "false")), None)
        text = f"{head}<{named}, ...>" if named and len(args) > 1 else f"{head}<{named or '...'}>"
        if len(text) > width:
            text = f"{head}<...>"
    if len(text) > width:
        text = text[: width - 3] + "..."
    return text


def _template_args(rest: str) -> list[str]:
    """Top-level comma-separated arguments of `a, b<c, d>, e>...` (the text after the first `<`)."""
    args, depth, cur = [], 0, []
    for ch in rest:
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    args.append("".join(cur).strip())
    return [a for a in args if a]
