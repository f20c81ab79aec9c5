"""Where one module's SQL time goes, statement by statement, on one trace (one process, one load).

bench/profile_diagnose.py charges a whole module (lib.ledger: a dozen tables and macros) to one stage; this
runs the modules it includes first (untimed, or timed with --deps), then the module's own statements one at
a time, and prints each statement's wall and CPU seconds with the name it creates (or its first line).

    python bench/statement_costs.py TRACE kineto.lib.ledger [--deps] [--sql FILE]

Statements are split at a `;` that ends a line outside comments, as the modules are written (lint keeps it
so). One module a run: it is not INCLUDEd, so a second module that includes it would run it again.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import time
from pathlib import Path

from kineto_sql import open_trace
from kineto_sql.sql.includes import kineto_dependencies, module_path
from kineto_sql.sql.literals import include_statement

NAME = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?PERFETTO\s+(TABLE|VIEW|MACRO|FUNCTION|INDEX)\s+([\w!]+)", re.I)


def statements(sql: str) -> list[str]:
    out, current = [], []
    for line in sql.splitlines():
        current.append(line)
        code = line.split("--", 1)[0].rstrip()
        if code.endswith(";"):
            text = "\n".join(current).strip()
            if any(ln.strip() and not ln.strip().startswith("--") for ln in current):
                out.append(text)
            current = []
    return out


def label(statement: str) -> str:
    m = NAME.search(statement)
    if m:
        return f"{m.group(1).lower()} {m.group(2)}"
    code = [ln for ln in statement.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    return code[0][:70] if code else "?"


def timed(tp, sql: str) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    tp.query(sql)
    return time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("module", help="a kineto module, e.g. kineto.lib.ledger")
    ap.add_argument("--deps", action="store_true", help="time each included module too")
    ap.add_argument("--digest", nargs="*", default=(),
                    help="tables to fingerprint afterwards (every row, in the table's order): a rewrite keeps them")
    args = ap.parse_args()
    with open_trace(args.trace) as tp:
        done: set[str] = set()
        for module in [args.module]:
            text = module_path(module).read_text()
            for dep in kineto_dependencies(text):
                if dep not in done:
                    done.add(dep)
                    wall, cpu = timed(tp, include_statement(dep))
                    if args.deps:
                        print(f"{wall:7.3f} {cpu:7.3f}  (include) {dep}")
            print(f"{module}:")
            total = 0.0
            for statement in statements(text):
                if label(statement).upper().startswith("INCLUDE"):
                    continue
                wall, cpu = timed(tp, statement)
                total += cpu
                print(f"{wall:7.3f} {cpu:7.3f}  {label(statement)}", flush=True)
            print(f"{'':7} {total:7.3f}  total CPU")
        for table in args.digest:
            rows = tp.rows(f"SELECT * FROM {table}")
            digest = hashlib.sha256(repr((rows.columns, [tuple(r.values()) for r in rows.records()])).encode())
            print(f"{table}: {len(rows)} rows, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
