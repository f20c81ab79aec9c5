"""The ingest report: every change the loader made to the input before the engine saw it, and why."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fix:
    """One kind of change, how many events it touched, and a few examples a person can look up."""

    kind: str
    count: int
    why: str
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drop:
    """Events the loader could not keep (they never reach the engine): why, how many, the first indices."""

    reason: str
    count: int
    indices: tuple[int, ...]


@dataclass
class IngestReport:
    source: str
    input_bytes: int
    events_by_phase: dict[str, int] = field(default_factory=dict)
    fixes: list[Fix] = field(default_factory=list)
    # ns added back to every timestamp to recover the file's own clock (0 when not rebased).
    ts_offset_ns: int = 0
    rewritten: bool = False
    # Entries of traceEvents that could not become events (validate.py): data loss, by index and reason.
    dropped: list[Drop] = field(default_factory=list)
    # The engine's own data-loss / error stats after the load: (name, value) pairs; empty means none.
    engine_loss: list[tuple[str, int]] = field(default_factory=list)

    @property
    def expected_slices(self) -> int:
        """Every X and every i/I event of the input must become exactly one slice."""
        return sum(self.events_by_phase.get(ph, 0) for ph in ("X", "i", "I"))

    @property
    def expected_flow_events(self) -> int:
        return sum(self.events_by_phase.get(ph, 0) for ph in ("s", "t", "f"))

    def add(self, kind: str, count: int, why: str, examples=()) -> None:
        if count:
            self.fixes.append(Fix(kind, count, why, tuple(str(e) for e in list(examples)[:5])))

    def drop(self, reason: str, indices: list[int], keep: int = 10) -> None:
        if indices:
            self.dropped.append(Drop(reason, len(indices), tuple(indices[:keep])))

    @property
    def dropped_count(self) -> int:
        return sum(d.count for d in self.dropped)

    @property
    def lossy(self) -> bool:
        """Whether anything of the input is missing from the engine: dropped here, or lost by the engine."""
        return bool(self.dropped or self.engine_loss)

    def loss_sentences(self) -> list[str]:
        """The loss, one sentence per cause, each with the event indices or the engine stat."""
        out = [f"{d.count} event(s) dropped: {d.reason} (event index {', '.join(map(str, d.indices))}"
               f"{', ...' if d.count > len(d.indices) else ''})" for d in self.dropped]
        out += [f"the engine lost data: stat {name} = {value}" for name, value in self.engine_loss]
        return out

    def fix_count(self, kind: str) -> int:
        return sum(f.count for f in self.fixes if f.kind == kind)
