"""Whether a change to the SQL left every diagnosis as it was: `kineto-sql diagnose --format json` on every
golden and corpus trace (and any trace given), once with a saved copy of queries/ and once with the
working tree's, the two reports compared after leaving out what must differ (elapsed time, query versions).

A speed-up of the SQL must not change a single number of any report. The tests hold each query to its own
expectations; this holds the whole reading, end to end, on every real trace at hand.

    cp -r queries /tmp/queries_before        # before the change
    python bench/same_diagnosis.py --before /tmp/queries_before [--extra /tmp/dc_x4.json.gz]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import CORPUS  # noqa: E402

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "traces"
VOLATILE = ("elapsed_s", "version", "query_version", "versions", "id_version")  # a bumped rule says @N+1
# ... and so does every text that names it (the narration's "catalog.input_bound@7"): the version goes
QUERY_AT_VERSION = re.compile(r"\b((?:catalog|reading|guide|lib|hta|custom)\.[a-z0-9_]+)@\d+")


def traces(extra: list[Path]) -> list[Path]:
    return (sorted(GOLDEN.glob("*.json.gz")) + sorted(CORPUS.glob("*.json.gz")) + sorted(CORPUS.glob("*/*.json.gz"))
            + extra)


def report(trace: Path, queries: Path | None, out: Path) -> dict | str:
    env = dict(os.environ)
    if queries is not None:
        env["KINETO_SQL_QUERIES"] = str(queries)
    script = Path(sys.executable).parent / "kineto-sql"
    command = [str(script), "diagnose", str(trace), "--format", "json", "-o", str(out), "-q", "--jobs", "1"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    return _stable(json.loads(out.read_text()))


def _stable(value):
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str):
        return QUERY_AT_VERSION.sub(r"\1", value)
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="a saved copy of queries/ (the SQL before the change)")
    ap.add_argument("--extra", type=Path, nargs="*", default=[], help="more traces (e.g. a replica)")
    args = ap.parse_args()
    if not (args.before / "kineto").is_dir():
        sys.exit(f"{args.before}: not a copy of queries/ (no kineto/ inside)")
    differ = []
    with tempfile.TemporaryDirectory(prefix="kineto_same_") as tmp:
        for n, trace in enumerate(traces(args.extra)):
            before = report(trace, args.before, Path(tmp) / "before.json")
            after = report(trace, None, Path(tmp) / "after.json")
            if before != after:
                differ.append(trace.name)
                print(f"DIFFERS: {trace}", flush=True)
            print(f"{n + 1}: {trace.name}", file=sys.stderr, flush=True)
    print(f"{n + 1} traces, {len(differ)} with a different diagnosis" + (f": {', '.join(differ)}" if differ else ""))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
