"""A sha256 per trace of `kineto-sql diagnose --format json` (less what must differ: elapsed time, query
versions), so that a speed-up of the Python or the SQL can be shown to leave every diagnosis byte-identical.

Run it once with the checkout before the change (its venv's python) and once after, and compare:

    /work/main/.venv/bin/python bench/diagnosis_digest.py --out /tmp/before.tsv TRACE...
    .venv/bin/python bench/diagnosis_digest.py --out /tmp/after.tsv --compare /tmp/before.tsv TRACE...

Each trace runs in its own process (`--jobs 1`), through the CLI of the interpreter that runs this script.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from same_diagnosis import report  # noqa: E402


def digest(trace: Path, work: Path) -> str:
    body = report(trace, None, work / "d.json")
    if isinstance(body, str):
        return body.replace("\t", " ").replace("\n", " ")
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True, help="trace<TAB>sha256 per line")
    ap.add_argument("--compare", type=Path, help="an earlier --out to compare with")
    args = ap.parse_args()
    before = {}
    if args.compare:
        before = dict(line.split("\t", 1) for line in args.compare.read_text().splitlines() if line)
    differ = 0
    with tempfile.TemporaryDirectory() as tmp, args.out.open("w") as out:
        for trace in args.traces:
            d = digest(trace, Path(tmp))
            out.write(f"{trace}\t{d}\n")
            out.flush()
            if args.compare:
                same = before.get(str(trace)) == d
                differ += not same
                print(f"{'same' if same else 'DIFFERS'}  {trace.name}", flush=True)
    if args.compare:
        print(f"{len(args.traces) - differ} of {len(args.traces)} identical")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
