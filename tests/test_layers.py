"""The package's layers (kineto_sql/__init__.py says the rule): a module imports only from its own package and
from the layers below it, never upward and never sideways, so the import graph has no cycle. Imports under
`if TYPE_CHECKING:` are annotations, not dependencies, and are not counted."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kineto_sql"

# bottom first; a part may import the parts of lower layers only
LAYERS = (
    ("errors", "envelope"),
    ("sql", "inputs"),
    ("catalog", "engine", "outputs"),
    ("loading", "run"),
    ("whatif", "trace_info"),
    ("diagnose", "diff"),
    ("fleet", "devtools"),
    ("ui", "api"),
)
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str | None:
    """kineto_sql.catalog.spec -> catalog; kineto_sql.errors -> errors; anything else -> None."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 and pieces[0] == "kineto_sql" else None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kineto_sql":
                found += [(node.lineno, f"kineto_sql.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def module_files():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_part_has_a_layer():
    parts = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in module_files()}
    parts.discard("__init__")
    assert parts <= set(LAYER_OF), f"parts without a layer in LAYERS: {sorted(parts - set(LAYER_OF))}"


@pytest.mark.parametrize("path", module_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_only(path):
    own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if own == "__init__" or own not in LAYER_OF:
        return  # test_every_part_has_a_layer names it
    wrong = []
    for line, module in imports_of(path):
        part = part_of(module)
        if part is None or part == own or part not in LAYER_OF:
            continue
        if LAYER_OF[part] >= LAYER_OF[own]:
            wrong.append(f"line {line}: {module} (layer {LAYER_OF[part]}) from {own} (layer {LAYER_OF[own]})")
    assert not wrong, "imports that run up or sideways:\n" + "\n".join(wrong)


def test_every_package_ships_in_the_wheel():
    """pyproject's explicit `packages` list names every package of kineto_sql (a plain `pip install .` leaves
    out one it does not name, which an editable install hides)."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("kineto_sql",) + p.parent.relative_to(PACKAGE).parts).rstrip(".")
             for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts}
    assert found - listed == set(), f"add to pyproject's packages: {sorted(found - listed)}"
