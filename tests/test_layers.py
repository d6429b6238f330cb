"""The layers hold: collsim (tools) > simulator > collectives > topology, each importing only
the layers below it -- import statements anywhere (import-linter's contract in
pyproject.toml) and imports by name (``importlib.import_module`` with a literal module)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("topology", "collectives", "simulator", "collsim")


def test_import_linter_contract_is_kept() -> None:
    command = shutil.which("lint-imports") or pytest.fail("lint-imports is not installed")
    result = subprocess.run([command], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0 and "0 broken" in result.stdout, result.stdout[-3000:]


def _named_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``import_module``/``__import__`` call with a literal
    (or f-string) module name in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name not in ("import_module", "__import__"):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append((node.lineno, arg.value))
        elif isinstance(arg, ast.JoinedStr) and arg.values \
                and isinstance(arg.values[0], ast.Constant):
            found.append((node.lineno, str(arg.values[0].value)))
    return found


def _dispatch_tables(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of string constants naming one of our modules (``"pkg.mod"``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.split(".")[0] in LAYERS and "." in node.value \
                and " " not in node.value and node.value.replace(".", "").replace("_", "").isalnum():
            found.append((node.lineno, node.value))
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_no_module_is_imported_by_name_from_a_higher_layer(layer: str) -> None:
    allowed = set(LAYERS[:LAYERS.index(layer) + 1])
    wrong = [f"{path.relative_to(ROOT)}:{line}: {module}"
             for path in sorted((ROOT / layer).rglob("*.py"))
             for line, module in _named_imports(path) + _dispatch_tables(path)
             if module.split(".")[0] in LAYERS and module.split(".")[0] not in allowed]
    assert not wrong, "\n".join(wrong)


def test_importing_topology_loads_nothing_of_ours_above_it() -> None:
    code = ("import sys, topology; print(sorted({m.split('.')[0] for m in sys.modules} & "
            f"{set(LAYERS)!r}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    assert result.stdout.strip() == "['topology']"
