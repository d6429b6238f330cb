"""Every notebook in notebooks/ is committed without outputs and runs from top to bottom."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert {path.stem for path in NOTEBOOKS} >= {"cost_model", "tree_vs_ring", "timeline",
                                                  "measured_vs_predicted", "channels",
                                                  "fidelity"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_is_clean_and_runs(path: Path, tmp_path: Path, monkeypatch) -> None:
    book = nbformat.read(path, as_version=4)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code), \
        f"{path.name} was committed with outputs; clear them"
    monkeypatch.delenv("BENCH_JSON", raising=False)
    NotebookClient(book, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert all(cell.execution_count for cell in code)
    errors = [out for cell in code for out in cell.outputs if out.output_type == "error"]
    assert errors == []
