"""Mutation check for the rules: two mutations per rule, each run against the rule's own exact-row cases
(tests/test_rules.py -k "test_case and <id>:"), printing how many fail; rules without [[case]] are skipped. A mutation that fails none of them
shows a part of the rule no case pins.

1. threshold: the rule's first numeric `-- default`, multiplied by 4.
2. join: the rule's first join condition broken (in the rule's own SQL; a rule without a join of its own
   gets the first join of the first lib module it includes):
   - `ON a = b` -> `ON a != b`, `ON a IS b` -> `ON a IS NOT b` (every row paired with the partners it
     should not have);
   - `JOIN T AS x USING (c)` -> `JOIN (SELECT c + 1 AS c, * FROM T) AS x USING (c)` (each row paired with
     the partner one key further on: window i with window i-1, op i with op i-1).
   `ON 1` (a deliberate cross join with a one-row table) is left alone.
Each file is restored after its run (also on Ctrl-C).

    python bench/mutate_thresholds.py .      # from the repository root, with the editable install in .venv
    python bench/mutate_thresholds.py . catalog.small_op_storm guide.cold_start   # only these rules
"""
import re, subprocess, sys
from pathlib import Path
repo = Path(sys.argv[1])
py = repo / ".venv/bin/python"
only = set(sys.argv[2:])

ON_EQ = re.compile(r"\bON\s+([\w.]+)\s*=\s*([\w.]+)")
ON_IS = re.compile(r"\bON\s+([\w.]+)\s+IS\s+(?!NOT\b)([\w.]+)")
USING = re.compile(r"\bJOIN\s+(\w+!?\([^()]*\)|\w+)\s+AS\s+(\w+)\s+USING\s*\((\w+)\)")
INCLUDE = re.compile(r"^INCLUDE PERFETTO MODULE kineto\.lib\.(\w+);", re.M)


def break_join(text):
    """(mutated text, what changed) for the first breakable join, or None."""
    hits = []
    for m in ON_EQ.finditer(text):
        hits.append((m.start(), m.start(0), m.end(0), f"ON {m[1]} != {m[2]}", m[0]))
    for m in ON_IS.finditer(text):
        hits.append((m.start(), m.start(0), m.end(0), f"ON {m[1]} IS NOT {m[2]}", m[0]))
    for m in USING.finditer(text):
        table, alias, col = m.groups()
        hits.append((m.start(), m.start(0), m.end(0),
                     f"JOIN (SELECT {col} + 1 AS {col}, * FROM {table}) AS {alias} USING ({col})", m[0]))
    if not hits:
        return None
    _, a, b, new, old = min(hits)
    return text[:a] + new + text[b:], f"{' '.join(old.split())} -> {new}"


def run_cases(rule_id):
    out = subprocess.run([str(py), "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "tests/test_rules.py",
                          "-k", f"test_case and {rule_id}:"],
                         cwd=repo, capture_output=True, text=True, timeout=600).stdout
    last = out.strip().splitlines()[-1] if out.strip() else ""
    failed = re.search(r"(\d+) failed", last)
    passed = re.search(r"(\d+) passed", last)
    errors = len(re.findall(r"(?i)(sqlite|perfetto|trace processor).*error|Error in query", out))
    return int(failed.group(1)) if failed else 0, int(passed.group(1)) if passed else 0, errors


def mutated_run(path, new_text, rule_id):
    old = path.read_text()
    path.write_text(new_text)
    try:
        return run_cases(rule_id)
    finally:
        path.write_text(old)


print("rule | threshold x4 | failed/total | join broken | failed/total", flush=True)
for sql in sorted((repo / "queries/kineto").glob("*/*.sql")):
    rule_id = f"{sql.parent.name}.{sql.stem}"
    if sql.parent.name == "lib" or (only and rule_id not in only):
        continue
    cases = sql.with_suffix(".test.toml")
    if not cases.exists() or not re.search(r"^\[\[case\]\]", cases.read_text(), re.M):
        continue
    text = sql.read_text()
    cells = [rule_id]
    m = re.search(r"^-- default (\w+): ([0-9.]+)(\w*)$", text, re.M)
    if m:
        name, value, unit = m.groups()
        new = str(float(value) * 4).rstrip("0").rstrip(".") if "." in value else str(int(value) * 4)
        f, p, _ = mutated_run(sql, text[:m.start(2)] + new + text[m.end(2):], rule_id)
        cells += [f"{name}: {value}{unit} -> {new}{unit}", f"{f}/{f + p}"]
    else:
        cells += ["(no numeric default)", "-"]
    target, broken = sql, break_join(text)
    if broken is None:
        for lib in INCLUDE.findall(text):
            lib_path = repo / "queries/kineto/lib" / f"{lib}.sql"
            broken = break_join(lib_path.read_text())
            if broken:
                target = lib_path
                break
    if broken is None:
        cells += ["(no join found)", "-"]
    else:
        f, p, err = mutated_run(target, broken[0], rule_id)
        where = "" if target == sql else f"lib.{target.stem}: "
        cells += [where + broken[1], f"{f}/{f + p}" + (" (SQL error)" if err and f else "")]
    print(*cells, sep=" | ", flush=True)
