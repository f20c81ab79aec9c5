"""The statistical verdict of a diff: is AFTER faster than BEFORE beyond the spread of its own steps, and
which ledger buckets moved, each with a 95% interval; checked for comparability first.

Each side is summarised by its iteration windows (kineto.lib.iterations through reading.step_ledger):
one width per window and its time in every ledger bucket, with the cold windows marked. Only the steady
windows enter the intervals (a cold first step is one-time work, not the steady state). The summary is
small (numbers per window, the capture's settings), so it is also what a named baseline stores.

Comparability, before any number is read:
- blocking (no verdict is trusted, the CI gate does not judge): a capture that catalog.capture_validity
  finds invalid; fewer than MIN_WINDOWS steady windows on a side; another device model; another
  iteration source (ProfilerStep windows against windows inferred from a marker cover different spans).
- flagged (stated with the verdict): another schedule shape (where the capture starts, how many steps),
  profiler settings that change host cost (with_stack, record_shapes, profile_memory: PyTorch's profiler
  docs note each adds overhead) set differently on the two sides.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from kineto_sql.diff.stats import CONFIDENCE, MIN_WINDOWS, Interval, NestedBootstrap

SUMMARY_SCHEMA = 1
# Captures a side needs before its interval holds run-to-run variation at all (with one there is no second
# run to differ from), and before the CI gate judges without a stated noise floor. Simulated (10% run-to-run,
# 3% step-to-step spread, 4 windows a capture, 300 pairs; tests/test_diff_verdict.py): the 95% interval
# covers the true change in 24% of pairs with 1 capture a side, 69% with 2, 87% with 3, 97% with 5, and a
# pair with no change is called beyond noise in 76%, 31%, 13%, 3%. Two a side would make a flaky gate.
MIN_CAPTURES = 2
GATE_CAPTURES = 3
SETTINGS = ("with_stack", "record_shapes", "profile_memory")
# Ledger bucket kinds (the prefix of a bucket's name), summed per window for the host-side / device-side
# reading: busy.* is the device executing, idle.* the device waiting on the host, host.* a CPU-only lane.
GROUPS = {"busy": "device busy", "idle": "device idle", "host": "host"}


@dataclass
class SideSummary:
    """One capture, as numbers per iteration window (ns) and the facts that decide comparability."""

    label: str
    device: str
    source: str | None
    steps: list
    cold: list
    widths: list
    buckets: dict            # bucket -> [ns per window], 0 where the window has none
    settings: dict           # with_stack / record_shapes / profile_memory -> bool
    problems: list = field(default_factory=list)   # catalog.capture_validity evidence sentences
    # The query versions the numbers come from (reading.step_ledger and the libs it reads): a baseline
    # stored by another version may draw windows or buckets differently.
    method: str = ""
    # When the capture began, ns since the epoch on the recording host's clock (None when the trace's
    # timestamps are not epoch-based): orders a side's captures against the other side's.
    started_ns: int | None = None

    @property
    def steady(self) -> list[int]:
        return [i for i, c in enumerate(self.cold) if not c]

    def steady_values(self, values: list) -> list:
        return [values[i] for i in self.steady]

    def group(self, kind: str) -> list:
        """Per window: the summed time of the buckets of one kind (busy, idle, host)."""
        cols = [v for k, v in self.buckets.items() if k.split(".", 1)[0] == kind]
        return [sum(c[i] for c in cols) for i in range(len(self.widths))] if cols else []

    def schedule(self) -> str:
        """`ProfilerStep#5-#10 (6 windows)`, or `6 optimizer_step windows`."""
        if not self.steps:
            return "no windows"
        n = len(self.steps)
        if self.source == "profiler_step":
            first, last = self.steps[0], self.steps[-1]
            span = f"ProfilerStep#{first}" if first == last else f"ProfilerStep#{first}-#{last}"
            return f"{span} ({n} window{'s' if n != 1 else ''})"
        return f"{n} {self.source} window{'s' if n != 1 else ''}"

    def to_json(self) -> dict:
        return {"schema": SUMMARY_SCHEMA, "label": self.label, "device": self.device, "source": self.source,
                "steps": self.steps, "cold": self.cold, "widths": self.widths, "buckets": self.buckets,
                "settings": self.settings, "problems": self.problems, "method": self.method,
                "started_ns": self.started_ns}

    @classmethod
    def from_json(cls, data: dict) -> "SideSummary":
        if data.get("schema") != SUMMARY_SCHEMA:
            raise ValueError(f"summary schema {data.get('schema')!r}, expected {SUMMARY_SCHEMA}")
        n = len(data["widths"])
        if len(data["steps"]) != n or len(data["cold"]) != n or any(len(v) != n for v in data["buckets"].values()):
            raise ValueError("per-window lists of different lengths")
        return cls(str(data["label"]), str(data["device"]), data["source"], [int(s) for s in data["steps"]],
                   [bool(c) for c in data["cold"]], [int(w) for w in data["widths"]],
                   {str(k): [int(x) for x in v] for k, v in data["buckets"].items()},
                   {k: bool(data["settings"].get(k, False)) for k in SETTINGS}, [str(p) for p in data["problems"]],
                   str(data.get("method", "")), None if data.get("started_ns") is None else int(data["started_ns"]))


def summarise(tp, label: str) -> SideSummary:
    """The loaded trace's windows (reading.step_ledger), device model, settings and capture problems."""
    from kineto_sql.run.runner import capabilities, run_query, trace_device_name

    run = run_query(tp, "reading.step_ledger")
    ledger = run.df
    windows = ledger.drop_duplicates("window_id").sort_values("window_id")
    ids = [int(w) for w in windows["window_id"]]
    position = {w: i for i, w in enumerate(ids)}
    buckets: dict[str, list] = {}
    for rec in ledger.groupby(["bucket", "window_id"])["dur"].sum().reset_index().itertuples(index=False):
        buckets.setdefault(str(rec.bucket), [0] * len(ids))[position[int(rec.window_id)]] = int(rec.dur)
    sources = sorted(set(str(s) for s in windows["source"]))
    caps = capabilities(tp)
    settings = {"with_stack": caps["stacks"].present, "record_shapes": caps["shapes"].present,
                "profile_memory": caps["memory"].present}
    device = trace_device_name(tp) or ("a device without deviceProperties" if caps["gpu"].present else "CPU only")
    validity = run_query(tp, "catalog.capture_validity").df
    problems = [str(e) for e in validity["evidence"]] if len(validity) else []
    return SideSummary(label, device, "+".join(sources) if sources else None,
                       [int(s) for s in windows["step"]], [bool(c) for c in windows["is_cold"]],
                       [int(w) for w in windows["window_dur"]], buckets, settings, problems,
                       _method(run.spec), _started(tp))


# Timestamps before 2001-09-09 (1e18 ns since the epoch) are not wall-clock times: a capture whose clock
# starts near 0 (a synthetic trace, a profiler without an epoch base) has no recording time.
_EPOCH_FLOOR_NS = 10**18


def _started(tp) -> int | None:
    """The capture's first timestamp on the recording host's clock: the engine's start, plus what the loader
    took off to rebase it, plus the trace's baseTimeNanoseconds (newer PyTorch writes times relative to it)."""
    from kineto_sql.sql.files import sections

    start = tp.rows(sections("trace_info.sql")["trace_bounds"]).column("start_ts")
    if not start or start[0] is None:
        return None
    report = getattr(tp, "report", None)
    metadata = getattr(tp, "trace_metadata", None) or {}
    try:
        base = int(metadata.get("baseTimeNanoseconds") or 0)
    except (TypeError, ValueError):
        base = 0
    started = int(start[0]) + int(getattr(report, "ts_offset_ns", 0) or 0) + base
    return started if started >= _EPOCH_FLOOR_NS else None


def _method(spec) -> str:
    """The query versions a side's numbers come from: the ledger query and the lib modules it reads
    (queries/LOCK.toml), so a baseline from other versions is flagged."""
    from kineto_sql.catalog.lock import read_lock

    libs = " ".join(read_lock().get(spec.id, {}).get("lib", ()))
    return f"{spec.id_version} {libs}".strip()


@dataclass(frozen=True)
class Check:
    """One comparability problem: `blocking` ones stop the verdict from counting (and the gate from judging)."""

    name: str
    blocking: bool
    sentence: str


def checks(before, after) -> list[Check]:
    """`before`, `after`: one SideSummary or a list of them (the captures of a side)."""
    sides = {"BEFORE": _captures(before), "AFTER": _captures(after)}
    several = any(len(c) > 1 for c in sides.values())
    out = []
    for tag, caps in sides.items():
        for i, side in enumerate(caps):
            for problem in side.problems:
                out.append(Check("capture_validity", True, f"{_name(tag, caps, i)}'s capture is not valid: {problem}"))
    for tag, caps in sides.items():
        if not several:
            side = caps[0]
            n, cold = len(side.steady), len(side.cold) - len(side.steady)
            if n < MIN_WINDOWS:
                left = f", {cold} cold left out" if cold else ""
                out.append(Check("steady_windows", True, f"{tag} is too short: {n} steady window{_s(n)} "
                                 f"in {side.schedule()}{left}; {MIN_WINDOWS} are needed for an interval."))
            continue
        empty = [i for i, side in enumerate(caps) if not side.steady]
        for i in empty:
            out.append(Check("steady_windows", True, f"{_name(tag, caps, i)} has no steady window "
                             f"({caps[i].schedule()}): drop it or record it again."))
        total = sum(len(side.steady) for side in caps)
        if not empty and total < MIN_WINDOWS:
            out.append(Check("steady_windows", True, f"{tag} is too short: {total} steady window{_s(total)} in "
                             f"{len(caps)} captures; {MIN_WINDOWS} are needed for an interval."))
    first_b, first_a = sides["BEFORE"][0], sides["AFTER"][0]
    for attr, name in (("device", "device"), ("source", "iteration_source")):
        values = {tag: sorted({str(getattr(c, attr)) for c in caps}) for tag, caps in sides.items()}
        mixed = [tag for tag, v in values.items() if len(v) > 1]
        if mixed:
            out.append(Check(name, True, f"{mixed[0]}'s captures differ among themselves: "
                             f"{' and '.join(values[mixed[0]])}."))
        elif getattr(first_b, attr) != getattr(first_a, attr):
            if attr == "device":
                out.append(Check(name, True, f"Not the same device: BEFORE ran on {first_b.device}, AFTER on "
                                 f"{first_a.device}."))
            else:
                out.append(Check(name, True, f"Not the same iterations: BEFORE's windows are {first_b.source}, "
                                 f"AFTER's {first_a.source}."))
    if first_b.source == first_a.source:
        shapes = {tag: {(tuple(c.steps[:1]), len(c.steps)) for c in caps} for tag, caps in sides.items()}
        if len(shapes["BEFORE"] | shapes["AFTER"]) > 1 and all(c.steps for caps in sides.values() for c in caps):
            out.append(Check("schedule", False, f"Another schedule shape: BEFORE captured {_schedules(sides['BEFORE'])}, "
                             f"AFTER {_schedules(sides['AFTER'])}."))
    order = _batched(sides["BEFORE"], sides["AFTER"])
    if order:
        out.append(Check("order", False, order))
    methods = {c.method for caps in sides.values() for c in caps if c.method}
    if len(methods) > 1:
        mb = " / ".join(sorted({c.method for c in sides["BEFORE"] if c.method}))
        ma = " / ".join(sorted({c.method for c in sides["AFTER"] if c.method}))
        out.append(Check("method", False, "BEFORE's and AFTER's numbers come from different query versions "
                         f"({mb} against {ma}): windows or buckets may be drawn differently; store the baseline "
                         "again."))
    values = {tag: {k: {bool(c.settings.get(k)) for c in caps} for k in SETTINGS} for tag, caps in sides.items()}
    differ = [k for k in SETTINGS if len(values["BEFORE"][k] | values["AFTER"][k]) > 1]
    if differ:
        says = ", ".join(f"{k} {_on(values['BEFORE'][k])} -> {_on(values['AFTER'][k])}" for k in differ)
        out.append(Check("settings", False, f"Profiler settings that change host cost differ ({says}): part of "
                         "the change may be the profiler's own overhead."))
    return out


def _batched(before: list, after: list) -> str | None:
    """A sentence when each side has several captures and every one of one side was recorded before every one
    of the other: a drift of the machine between the two batches is then indistinguishable from a change."""
    if min(len(before), len(after)) < 2:
        return None
    tb, ta = [c.started_ns for c in before], [c.started_ns for c in after]
    if None in tb or None in ta:
        return None
    if max(tb) < min(ta):
        first, second = "BEFORE", "AFTER"
    elif max(ta) < min(tb):
        first, second = "AFTER", "BEFORE"
    else:
        return None
    return (f"All of {first}'s captures were recorded before all of {second}'s (the traces' clocks): a drift of "
            "the machine between the two batches (load, clock speed, temperature) reads as a change the interval "
            "cannot tell apart; record the sides in turn.")


def _captures(side) -> list:
    return list(side) if isinstance(side, (list, tuple)) else [side]


def _name(tag: str, caps: list, i: int) -> str:
    return tag if len(caps) == 1 else f"{tag} capture {i + 1} ({caps[i].label})"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _schedules(caps: list) -> str:
    shapes = sorted({c.schedule() for c in caps})
    return shapes[0] if len(shapes) == 1 else " / ".join(shapes)


def _on(value) -> str:
    if isinstance(value, set):
        return "on" if value == {True} else "off" if value == {False} else "mixed"
    return "on" if value else "off"


@dataclass
class Verdict:
    """Intervals of the change between the steady windows of two sides (one capture or several each), and
    the comparability checks."""

    before_windows: int
    after_windows: int
    median_before_ns: float | None
    median_after_ns: float | None
    step: Interval | None            # relative change of the median width, %
    step_ns: Interval | None         # its difference, ns
    buckets: dict                    # bucket -> Interval (ns)
    groups: dict                     # busy / idle / host -> Interval (ns)
    checks: list
    before_captures: int = 1
    after_captures: int = 1

    @property
    def comparable(self) -> bool:
        return not any(c.blocking for c in self.checks)

    @property
    def run_to_run(self) -> bool:
        """The interval resampled captures on both sides, so it holds run-to-run variation."""
        return min(self.before_captures, self.after_captures) >= MIN_CAPTURES

    def to_json(self) -> dict:
        return {
            "confidence": CONFIDENCE, "before_captures": self.before_captures,
            "after_captures": self.after_captures, "run_to_run": self.run_to_run,
            "before_steady_windows": self.before_windows,
            "after_steady_windows": self.after_windows, "median_before_ns": self.median_before_ns,
            "median_after_ns": self.median_after_ns, "comparable": self.comparable,
            "step_change_pct": self.step.to_json() if self.step else None,
            "step_change_ns": self.step_ns.to_json() if self.step_ns else None,
            "buckets": {k: v.to_json() for k, v in self.buckets.items()},
            "groups": {k: v.to_json() for k, v in self.groups.items()},
            "checks": [{"name": c.name, "blocking": c.blocking, "sentence": c.sentence} for c in self.checks],
        }


def verdict(before, after) -> Verdict:
    """`before`, `after`: one SideSummary or a list of them (several captures of a side). With one capture a
    side the interval is the window bootstrap; with several, the nested bootstrap (captures, then windows)."""
    found = checks(before, after)
    caps_b, caps_a = _captures(before), _captures(after)
    # a capture without a steady window adds nothing to its side (and is a blocking check above)
    caps_b = [c for c in caps_b if c.steady] or caps_b[:1]
    caps_a = [c for c in caps_a if c.steady] or caps_a[:1]
    wb = [c.steady_values(c.widths) for c in caps_b]
    wa = [c.steady_values(c.widths) for c in caps_a]
    nb, na = sum(map(len, wb)), sum(map(len, wa))
    median = _median([x for w in wb for x in w]), _median([x for w in wa for x in w])
    counts = (len(_captures(before)), len(_captures(after)))
    if nb < MIN_WINDOWS or na < MIN_WINDOWS or not median[0] or any(not w for w in wb + wa):
        return Verdict(nb, na, *median, None, None, {}, {}, found, *counts)
    boot = NestedBootstrap([len(w) for w in wb], [len(w) for w in wa])
    buckets = {}
    for name in sorted({k for c in caps_b + caps_a for k in c.buckets}):
        b = [c.steady_values(c.buckets.get(name, [0] * len(c.widths))) for c in caps_b]
        a = [c.steady_values(c.buckets.get(name, [0] * len(c.widths))) for c in caps_a]
        buckets[name] = boot.difference(b, a)
    groups = {}
    for kind in GROUPS:
        b, a = [c.group(kind) for c in caps_b], [c.group(kind) for c in caps_a]
        if any(b) or any(a):
            groups[kind] = boot.difference([c.steady_values(g or [0] * len(c.widths)) for c, g in zip(caps_b, b)],
                                           [c.steady_values(g or [0] * len(c.widths)) for c, g in zip(caps_a, a)])
    return Verdict(nb, na, *median, boot.relative_change(wb, wa), boot.difference(wb, wa), buckets, groups, found,
                   *counts)


def _median(values: list) -> float | None:
    return float(statistics.median(values)) if values else None


# ------------------------------------------------------------------------------------------ wording


def signed_time(ns: float) -> str:
    return f"{ns / 1e6:+.1f} ms" if abs(ns) >= 1e6 else f"{ns / 1e3:+.0f} us"


def time_interval(iv: Interval) -> str:
    """`-69.3 ms (95% CI -71.0..-67.2 ms)` in the unit of the point estimate."""
    unit, scale, digits = ("ms", 1e6, 1) if max(abs(iv.point), abs(iv.low), abs(iv.high)) >= 1e6 else ("us", 1e3, 0)
    return (f"{iv.point / scale:+.{digits}f} {unit} ({_conf()} CI {iv.low / scale:+.{digits}f}.."
            f"{iv.high / scale:+.{digits}f} {unit})")


def _conf() -> str:
    return f"{100 * CONFIDENCE:g}%"


def step_phrase(v: Verdict) -> str | None:
    """`AFTER is faster by 28.2% (95% CI 24.1-31.0%; 6 vs 6 steady windows)` or `No change beyond noise
    (+1.2%, 95% CI -3.0..+5.0%; ...)`; None without an interval."""
    if v.step is None:
        return None
    s = v.step
    windows = f"{v.before_windows} vs {v.after_windows} steady windows"
    if v.before_captures > 1 or v.after_captures > 1:
        windows = f"{v.before_captures} vs {v.after_captures} captures, {windows}"
    if not s.beyond_noise:
        return f"No change beyond noise ({s.point:+.1f}%, {_conf()} CI {s.low:+.1f}..{s.high:+.1f}%; {windows})"
    word = "faster" if s.point < 0 else "slower"
    lo, hi = sorted((abs(s.low), abs(s.high)))
    return f"AFTER is {word} by {abs(s.point):.1f}% ({_conf()} CI {lo:.1f}-{hi:.1f}%; {windows})"


def moved_phrase(v: Verdict, limit: int = 3) -> str:
    moved = sorted(((k, iv) for k, iv in v.buckets.items() if iv.beyond_noise), key=lambda kv: -abs(kv[1].point))
    if not moved:
        return "No ledger bucket moved beyond noise."
    return "Moved beyond noise: " + ", ".join(f"{k} {time_interval(iv)}" for k, iv in moved[:limit]) + "."


def reason(v: Verdict, has_gpu: bool, host_hint: str) -> str:
    """Why, as a claim with numbers: host-side when device idle moved beyond noise with the step while device
    busy did not (or by under a quarter of the step's change), device-side the other way round."""
    step, step_ns = v.step, v.step_ns
    if step is None or step_ns is None or not step.beyond_noise:
        return "Why: the step did not move beyond noise" + host_hint + "."
    gain = "saving" if step_ns.point < 0 else "loss"
    if not has_gpu or "busy" not in v.groups:
        host = v.groups.get("host")
        numbers = f" (host lane {time_interval(host)} per step)" if host else ""
        return f"Why: a CPU-only trace, so the {gain} is host time{numbers}" + host_hint + "."
    busy, idle = v.groups["busy"], v.groups.get("idle", Interval(0.0, 0.0, 0.0))
    d = step_ns.point

    def carries(iv: Interval) -> bool:
        return iv.beyond_noise and iv.point * d > 0

    def small(iv: Interval, share: float) -> bool:
        return not iv.beyond_noise or abs(iv.point) <= share * abs(d)

    said = f"device busy {time_interval(busy)} and device idle {time_interval(idle)} per step"
    if carries(idle) and small(busy, 0.25):
        return f"Why: {said}: the {gain} is host-side" + host_hint + "."
    if carries(busy) and small(idle, 0.25):
        return f"Why: {said}: the {gain} is device-side."
    return f"Why: {said}: both sides moved" + host_hint + "."


def comparability_phrase(v: Verdict) -> str:
    blocking = [c.sentence for c in v.checks if c.blocking]
    flagged = [c.sentence for c in v.checks if not c.blocking]
    text = ""
    if blocking:
        text += "Not a trusted comparison: " + " ".join(blocking)
    if flagged:
        text += (" " if text else "") + "Flagged: " + " ".join(flagged)
    return text


# One capture per side: the interval resamples windows inside each capture, so run-to-run variation is outside
# it. Measured: of six back-to-back CPU recordings of golden `checkpoint` (golden/reruns), 13 of the 15
# one-against-one pairs were called a change beyond noise; three against three said no change.
ONE_CAPTURE = ("One capture per side: the interval covers step-to-step noise inside each capture, not "
               "run-to-run variation; record each side more than once before trusting a small change.")


def captures_phrase(v: Verdict) -> str:
    """What the interval holds: step-to-step noise only (a side of one capture) or run-to-run variation too."""
    if v.before_captures == 1 and v.after_captures == 1:
        return ONE_CAPTURE
    single = [tag for tag, n in (("BEFORE", v.before_captures), ("AFTER", v.after_captures)) if n == 1]
    if single:
        return (f"One capture on {single[0]}: the interval covers its step-to-step noise, not its run-to-run "
                "variation; record it more than once before trusting a small change.")
    text = (f"{v.before_captures} and {v.after_captures} captures: the interval resamples captures, then windows "
            "in each, so it holds the run-to-run variation these captures show")
    if min(v.before_captures, v.after_captures) < 3:
        text += "; with 2 on a side it is often too narrow, 3 or more are better"
    return text + "."


# ------------------------------------------------------------------------------------------ the gate

# Exit codes of `diff --fail-on-regression`: 0 judged and passed, 1 judged and failed, NOT_JUDGED when the
# gate could not judge (a CI job must not read "could not tell" as green). 2 stays click's usage error.
NOT_JUDGED = 3


@dataclass(frozen=True)
class GateResult:
    failed: bool
    judged: bool
    line: str

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0 if self.judged else NOT_JUDGED


def gate(v: Verdict, pct: float, noise_floor: float | None = None) -> GateResult:
    """Judges only a comparison whose interval holds run-to-run variation: at least GATE_CAPTURES captures a
    side, or a run-to-run `noise_floor` (%) the user measured, which widens the interval's low end by that
    much. Fails when both sides are valid and comparable and that low end of the slowdown is above `pct` (so
    a slowdown inside the noise, or below the allowance, passes)."""
    blocking = [c.sentence for c in v.checks if c.blocking]
    if blocking or v.step is None:
        why = blocking[0] if blocking else "no interval could be computed."
        return GateResult(False, False, f"regression gate: not judged: {why}")
    s = v.step
    few = [(tag, n) for tag, n in (("BEFORE", v.before_captures), ("AFTER", v.after_captures)) if n < GATE_CAPTURES]
    if noise_floor is None and few:
        said = " and ".join(f"{n} capture{_s(n)} on {tag}" for tag, n in few)
        why = ("holds no run-to-run variation" if any(n == 1 for _, n in few)
               else "is too narrow to judge (2 captures a side show little of the run-to-run variation)")
        return GateResult(False, False, f"regression gate: not judged: {said}, "
                          f"so the interval ({s.point:+.1f}%, {_conf()} CI {s.low:+.1f}..{s.high:+.1f}%) {why}; give "
                          f"each side {GATE_CAPTURES} or more captures (BEFORE... --vs AFTER...) or a measured "
                          "--noise-floor PCT.")
    interval = f"{s.point:+.1f}% ({_conf()} CI {s.low:+.1f}..{s.high:+.1f}%)"
    low, said = s.low, f"its low end, {s.low:+.1f}%,"
    if noise_floor is not None:
        low = s.low - noise_floor
        said = f"its low end less the --noise-floor {noise_floor:g}%, {low:+.1f}%,"
    if low > pct:
        return GateResult(True, True, f"regression gate: FAILED: the median step changed {interval}; even "
                          f"{said} exceeds --fail-on-regression {pct:g}%.")
    return GateResult(False, True, f"regression gate: passed: the median step changed {interval}; {said} does "
                      f"not exceed --fail-on-regression {pct:g}%.")
