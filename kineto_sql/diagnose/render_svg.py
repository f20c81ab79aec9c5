"""The HTML report's charts as inline SVG: stacked ledger bars per window and share bars on a 0-100% axis.

Hand-drawn rather than plotly: the charts are plain bars, and inlining plotly.js made every report 4.8 MB
of script for them. SVG needs no script, prints, and carries its exact numbers (data-ns on every bar, a
<title> tooltip) for a reader and a test to check against the verdict."""
from __future__ import annotations

import html
import zlib

from kineto_sql.diagnose.narrate import ms

# Kinds of ledger time: device busy computing, communicating, copying; device idle (by what the host did);
# a CPU-only capture's host time. Known buckets get a fixed colour; a new one gets one of its kind's.
COLORS = {
    "busy.gemm": "#1b5e20", "busy.attention": "#2e7d32", "busy.elementwise": "#43a047",
    "busy.compute_other": "#81c784", "busy.memset": "#c5e1a5",
    "busy.comm_exposed": "#6a1b9a", "busy.comm_overlapped": "#ce93d8",
    "busy.copy_htod": "#0277bd", "busy.copy_dtoh": "#0288d1", "busy.copy_dtod": "#4fc3f7", "busy.copy_other": "#b3e5fc",
    "idle.launch": "#e65100", "idle.host_compute": "#ff9800", "idle.sync": "#c62828", "idle.blocking_copy": "#e53935",
    "idle.dataloader": "#ad1457", "idle.comm_wait": "#8e24aa", "idle.gc": "#6d4c41", "idle.alloc": "#f06292",
    "idle.profiler": "#9e9e9e", "idle.unattributed": "#bdbdbd",
    "host.ops": "#1565c0", "host.python": "#42a5f5", "host.sync_read": "#c62828", "host.comm_wait": "#8e24aa",
    "host.dataloader": "#ad1457", "host.gc": "#6d4c41", "host.profiler": "#9e9e9e", "host.unattributed": "#bdbdbd",
    "cold": "#90a4ae",
}
FAMILY = {"busy": ("#66bb6a", "#9ccc65", "#26a69a"), "idle": ("#ff7043", "#ffa726", "#ef5350"),
          "host": ("#5c6bc0", "#29b6f6", "#78909c")}
W, H, LEFT, BOTTOM, TOP = 720, 260, 56, 36, 12


def color(bucket: str) -> str:
    if bucket in COLORS:
        return COLORS[bucket]
    family = FAMILY.get(bucket.split(".")[0], ("#78909c", "#a1887f", "#90a4ae"))
    return family[zlib.crc32(bucket.encode()) % len(family)]


def _ticks(top: float) -> list[float]:
    """About five round ticks from 0 to at least `top`."""
    if top <= 0:
        return [0.0]
    raw = top / 5
    step = next(m * 10 ** e for e in range(-6, 12) for m in (1, 2, 5) if m * 10 ** e >= raw)
    return [i * step for i in range(int(top / step) + 2) if i * step <= top + step * 0.999]


def stacked_bars(columns, order, title: str, unit_note: str) -> str:
    """One stacked bar per column: `columns` is [(label, {bucket: ns}, faded)], buckets stacked in `order`
    (bottom first). Every bar carries data-column, data-bucket and data-ns (its exact time)."""
    if not columns:
        return ""
    totals = [sum(b.values()) for _, b, _ in columns]
    ticks = _ticks(max(totals) / 1e6)
    top_ms = ticks[-1] or 1.0
    plot_w, plot_h = W - LEFT - 8, H - BOTTOM - TOP
    slot = plot_w / len(columns)
    bar = max(min(slot * 0.7, 48), 1.0)
    out = [f"<svg class='chart' viewBox='0 0 {W} {H}' width='{W}' height='{H}' role='img' "
           f"aria-label='{html.escape(title, quote=True)}'>"]
    for t in ticks:
        y = TOP + plot_h - t / top_ms * plot_h
        out.append(f"<line x1='{LEFT}' x2='{W - 8}' y1='{y:.1f}' y2='{y:.1f}' class='grid'/>"
                   f"<text x='{LEFT - 4}' y='{y + 4:.1f}' class='tick' text-anchor='end'>{t:g}</text>")
    out.append(f"<text x='12' y='{TOP + plot_h / 2:.0f}' class='axis' transform='rotate(-90 12 {TOP + plot_h / 2:.0f})' "
               f"text-anchor='middle'>{html.escape(unit_note)}</text>")
    every = max(1, round(len(columns) / 24))  # at most ~24 labels under the bars
    for i, (label, buckets, faded) in enumerate(columns):
        x = LEFT + i * slot + (slot - bar) / 2
        y = TOP + plot_h
        cls = " class='faded'" if faded else ""
        out.append(f"<g data-column='{html.escape(str(label), quote=True)}'{cls}>")
        for name in [b for b in order if buckets.get(b)] + sorted(b for b in buckets if b not in order and buckets[b]):
            ns = buckets[name]
            h = ns / 1e6 / top_ms * plot_h
            y -= h
            tip = html.escape(f"{label}: {name} {ms(ns)}", quote=True)
            out.append(f"<rect x='{x:.1f}' y='{y:.2f}' width='{bar:.1f}' height='{h:.2f}' fill='{color(name)}' "
                       f"data-bucket='{html.escape(name, quote=True)}' data-ns='{ns}'><title>{tip}</title></rect>")
        out.append("</g>")
        if i % every == 0:
            out.append(f"<text x='{x + bar / 2:.1f}' y='{H - BOTTOM + 14}' class='tick' text-anchor='middle'>"
                       f"{html.escape(str(label))}</text>")
    return "".join(out) + "</svg>"


def share_bars(rows, title: str) -> str:
    """Horizontal bars on an axis that is all of the time (0-100%): `rows` is [(label, pct, color, tip)]."""
    if not rows:
        return ""
    line, label_w = 22, 300
    height = TOP + line * len(rows) + 24
    plot_w = W - label_w - 60
    out = [f"<svg class='chart shares' viewBox='0 0 {W} {height}' width='{W}' height='{height}' role='img' "
           f"aria-label='{html.escape(title, quote=True)}'>"]
    for t in (0, 25, 50, 75, 100):
        x = label_w + t / 100 * plot_w
        out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{height - 20}' class='grid'/>"
                   f"<text x='{x:.1f}' y='{height - 6}' class='tick' text-anchor='middle'>{t}%</text>")
    for i, (label, value, fill, tip) in enumerate(rows):
        y = TOP + i * line
        width = max(value, 0) / 100 * plot_w
        short = label if len(label) <= 46 else label[:45] + "\u2026"
        out.append(f"<text x='{label_w - 6}' y='{y + 15}' class='label' text-anchor='end'>{html.escape(short)}</text>"
                   f"<rect x='{label_w}' y='{y + 3}' width='{width:.2f}' height='{line - 6}' fill='{fill}' "
                   f"data-pct='{value}'><title>{html.escape(tip, quote=True)}</title></rect>"
                   f"<text x='{label_w + width + 4:.1f}' y='{y + 15}' class='tick'>{value:g}%</text>")
    return "".join(out) + "</svg>"
