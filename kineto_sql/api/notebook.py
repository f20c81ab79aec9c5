"""The notebook API: what a pandas or HTA user types.

    import kineto_sql as ks
    t = ks.load("trace.json.gz")        # one trace; a rank directory gives every rank as one object
    t.diagnose()                         # the verdict and findings; .to_pandas(); an HTML table in Jupyter
    t.query("SELECT name, dur FROM slice ORDER BY dur DESC LIMIT 5")   # a DataFrame with numeric dtypes
    t.run("reading.op_table", top_n=10)                                # one catalog query, as a DataFrame
    t.close()                            # or: with ks.load(...) as t: ...

Numbers come back as pandas reads SQL (`pandas.read_sql`): int64 where a column has no NULL, float64 with
NaN where it has, text as pandas' text dtype. A query the trace cannot answer gives an empty frame whose
`attrs["not_applicable"]` says why, and a warning."""
from __future__ import annotations

import html
import numbers
import warnings
from pathlib import Path

import pandas as pd

from kineto_sql.diagnose.model import Diagnosis
from kineto_sql.diagnose.narrate import cost, reason
from kineto_sql.diagnose.render_text import render_text
from kineto_sql.diagnose.run import diagnose_trace
from kineto_sql.engine.processor import EngineChoice
from kineto_sql.errors import TraceInputError
from kineto_sql.loading.load import open_rank_dir, open_trace
from kineto_sql.engine.rows import Rows
from kineto_sql.run.runner import run_query


def load(path, engine: EngineChoice = EngineChoice()) -> Trace | Ranks:
    """A trace file (`.json`, `.json.gz`) as a Trace, or a directory of rank files as Ranks."""
    path = Path(path)
    return Ranks(path, engine) if path.is_dir() else Trace(path, engine)


# The entrypoint column types (PerfettoSQL) whose values are numbers: such a column is numeric even when every
# cell is NULL (a CPU trace's device columns), float64 then.
NUMERIC_TYPES = ("LONG", "INT", "DOUBLE", "DURATION", "TIMESTAMP", "BOOL", "ID", "JOINID", "ARGSETID")


def frame(rows: Rows, numeric: tuple[str, ...] = ()) -> pd.DataFrame:
    """Rows as a DataFrame with numeric dtypes: a column whose cells are all numbers (or NULL) is numeric,
    and so is every column named in `numeric` (declared numeric by its rule)."""
    df = rows.to_pandas()
    for column in df.columns:
        cells = [v for v in df[column] if v is not None]
        if column in numeric and not cells:
            df[column] = df[column].astype("float64")
        elif cells and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in cells):
            df[column] = pd.to_numeric(df[column])
    return df


def declared_numeric(spec) -> tuple[str, ...]:
    """The columns a rule's entrypoint declares with a numeric type (RETURNS TABLE(...))."""
    from kineto_sql.sql.text import entrypoint_signature

    signature = entrypoint_signature(spec.sql, spec.entrypoint)
    if signature is None:
        return ()
    return tuple(c.name for c in signature.columns if c.type.split("(")[0].strip() in NUMERIC_TYPES)


class Trace:
    """One loaded trace: the engine stays open until `close()` (or the end of a `with` block)."""

    def __init__(self, path: Path, engine: EngineChoice = EngineChoice(), rank_from_name: int | None = None):
        self.path = Path(path)
        self._tp = open_trace(self.path, engine, rank_from_name=rank_from_name)

    @property
    def report(self):
        """What the loader changed so that nothing is lost, and why (the ingest report)."""
        return self._tp.report

    @property
    def processor(self):
        """The perfetto TraceProcessor underneath, for anything this API does not cover."""
        return self._tp

    def query(self, sql: str) -> pd.DataFrame:
        """Any PerfettoSQL over the loaded trace."""
        return frame(self._tp.rows(sql))

    def run(self, query_id: str, **params) -> pd.DataFrame:
        """One catalog query (`kineto-sql list`), its parameters as keyword arguments."""
        result = run_query(self._tp, query_id, params)
        df = frame(result.rows, declared_numeric(result.spec))
        if result.not_applicable:
            df.attrs["not_applicable"] = result.not_applicable
            warnings.warn(f"not applicable: {result.not_applicable}", stacklevel=2)
        return df

    def diagnose(self) -> Report:
        """The verdict on the step and every finding, ranked by the step time it claims."""
        return Report(Diagnosis(str(self.path), (diagnose_trace(self._tp),), None, 0.0))

    def close(self) -> None:
        self._tp.close()

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<kineto_sql.Trace {self.path.name}: {len(self.report.fixes)} loader change(s)>"


class Ranks:
    """The rank files of one job (what tensorboard_trace_handler writes). Each rank is loaded when it is
    read and closed after, so memory holds one rank at a time."""

    def __init__(self, directory: Path, engine: EngineChoice = EngineChoice()):
        self.path = Path(directory)
        self._engine = engine
        self.files = tuple(open_rank_dir(self.path))  # (path, rank from the file name or None)
        if not self.files:
            raise TraceInputError(f"{self.path} holds no trace files (*.json, *.json.gz)")

    def query(self, sql: str) -> pd.DataFrame:
        """The query on every rank, one frame with a leading `rank` column."""
        return self._each(lambda t: t.query(sql))

    def run(self, query_id: str, **params) -> pd.DataFrame:
        return self._each(lambda t: t.run(query_id, **params))

    def diagnose(self, jobs: int = 1) -> Report:
        """Every rank's diagnosis and the cross-rank reading (straggler, collectives)."""
        from kineto_sql.fleet.run import diagnose_directory

        return Report(diagnose_directory(self.path, self._engine, jobs=jobs))

    def _each(self, read) -> pd.DataFrame:
        frames = []
        for i, (path, rank) in enumerate(self.files):
            with Trace(path, self._engine, rank) as t:
                df = read(t)
                df.insert(0, "rank", t.processor.rank if t.processor.rank is not None else i)
                frames.append(df)
        return pd.concat(frames, ignore_index=True)

    def __repr__(self) -> str:
        return f"<kineto_sql.Ranks {self.path.name}: {len(self.files)} rank file(s)>"


COLUMNS = ["rank", "query_id", "title", "severity", "per_step_ns", "impact_pct", "scope", "cost", "impact_ns",
           "count", "steps", "cross_rank_note", "evidence", "fix"]


class Report:
    """A diagnosis: `findings` (every trace's, ranked), `to_pandas()`, text as `str()`, HTML in Jupyter."""

    def __init__(self, diagnosis: Diagnosis):
        self.diagnosis = diagnosis

    @property
    def findings(self):
        return tuple(f for t in self.diagnosis.traces for f in t.findings)

    @property
    def verdicts(self):
        return tuple(t.verdict for t in self.diagnosis.traces)

    def to_pandas(self) -> pd.DataFrame:
        """One row per finding, costed as the text report costs it: per step (`per_step_ns`, the claimed time
        over the windows it is drawn from; NaN for a one-time cold-start finding) and in the report's words
        (`cost`); `impact_ns` is the total over the capture. Then steps, the cross-rank note of a rank
        directory, the first evidence row and the fix."""
        rows = [{"rank": t.rank, "query_id": f.query_id, "title": f.title, "severity": f.severity,
                 "per_step_ns": f.per_step_ns, "impact_pct": f.impact_pct, "scope": f.scope, "cost": cost(f),
                 "impact_ns": f.impact_ns, "count": f.count, "steps": list(f.where.steps),
                 "cross_rank_note": f.cross_rank_note, "evidence": f.evidence[0] if f.evidence else "", "fix": f.fix}
                for t in self.diagnosis.traces for f in t.findings]
        df = pd.DataFrame(rows, columns=COLUMNS)
        df["per_step_ns"] = df["per_step_ns"].astype("float64" if df["per_step_ns"].isna().any() else "int64")
        return df

    def __str__(self) -> str:
        return render_text(self.diagnosis)

    def __repr__(self) -> str:
        return render_text(self.diagnosis)

    def _repr_html_(self) -> str:
        verdicts = "".join(f"<p><b>{html.escape(v.regime)}</b>: {html.escape(reason(v))}</p>" for v in self.verdicts)
        shown = self.to_pandas()[["rank", "query_id", "severity", "cost", "evidence", "fix"]]
        if shown["rank"].isna().all():
            shown = shown.drop(columns=["rank"])
        return verdicts + shown.to_html(index=False, escape=True)
