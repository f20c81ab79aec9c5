"""Mutation check for the rules' thresholds: for each rule's first numeric `-- default`, multiply it by 4 and
run that rule's own exact-row cases (tests/test_rules.py -k "test_case and <name>"); print how many fail. A
rule whose cases all pass with its threshold moved 4x has no case at its boundary. Each file is restored
after its run (also on Ctrl-C).

    python bench/mutate_thresholds.py .      # from the repository root, with the editable install in .venv
    python bench/mutate_thresholds.py . catalog.small_op_storm guide.cold_start   # only these rules
"""
import re, subprocess, sys
from pathlib import Path
repo = Path(sys.argv[1])
py = repo / ".venv/bin/python"
only = set(sys.argv[2:])
rows = []
for sql in sorted((repo / "queries/kineto").glob("*/*.sql")):
    if sql.parent.name == "lib" or (only and f"{sql.parent.name}.{sql.stem}" not in only):
        continue
    text = sql.read_text()
    m = re.search(r"^-- default (\w+): ([0-9.]+)(\w*)$", text, re.M)
    if not m:
        continue
    name, value, unit = m.groups()
    new = str(float(value) * 4).rstrip("0").rstrip(".") if "." in value else str(int(value) * 4)
    mutated = text[:m.start(2)] + new + text[m.end(2):]
    sql.write_text(mutated)
    try:
        out = subprocess.run([str(py), "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "tests/test_rules.py",
                              "-k", f"test_case and {sql.stem}"],
                             cwd=repo, capture_output=True, text=True, timeout=600).stdout
    finally:
        sql.write_text(text)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    failed = re.search(r"(\d+) failed", last)
    passed = re.search(r"(\d+) passed", last)
    rows.append((f"{sql.parent.name}.{sql.stem}", f"{name}: {value}{unit} -> {new}{unit}",
                 int(failed.group(1)) if failed else 0, int(passed.group(1)) if passed else 0))
    print(*rows[-1], sep=" | ", flush=True)
