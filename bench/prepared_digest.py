"""The sha256 of the prepared text (what the engine is given), the ingest report and the metadata of each trace,
through both paths: prepared in this process (prepare_path) and in the loader's child (background.StreamedPrepared),
to show a loader change gives the engine the same bytes.

    python bench/prepared_digest.py TRACE [TRACE...] --out digests.json
    python bench/prepared_digest.py --compare before.json after.json
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from pathlib import Path

from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading import background
from kineto_sql.loading.prepare import prepare_path


def _digest(prepared) -> dict:
    h = hashlib.sha256()
    size = 0
    for chunk in prepared.chunks():
        h.update(chunk)
        size += len(chunk)
    prepared.verify()
    report = dataclasses.asdict(prepared.report)
    report.pop("timings", None)
    return {"bytes": size, "sha256": h.hexdigest(),
            "report": hashlib.sha256(json.dumps(report, sort_keys=True, default=str).encode()).hexdigest(),
            "metadata": hashlib.sha256(json.dumps(prepared.metadata, sort_keys=True, default=str).encode()).hexdigest()}


def digest(path: Path) -> dict:
    out = {}
    for how, make in (("serial", lambda: prepare_path(path)), ("child", lambda: background.StreamedPrepared(path))):
        prepared = None
        try:
            prepared = make()
            out[how] = _digest(prepared)
        except KinetoSqlError as exc:
            out[how] = {"error": str(exc)}
        finally:
            if how == "child" and prepared is not None:
                prepared.close()
    out["same"] = out["serial"] == out["child"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        print(json.dumps({"traces": len(before), "differ": differ, "paths_disagree": sorted(
            k for k, v in after.items() if not v["same"])}))
        sys.exit(1 if differ else 0)
    results = {}
    for path in args.traces:
        results[str(path)] = digest(path)
        print(path, results[str(path)]["serial"].get("sha256", results[str(path)]["serial"].get("error")), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
