"""Every column of ``vertex-retrain history``'s table is explained in docs/operations.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from vertex_retrain.cli.history_command import COLUMNS

OPERATIONS = Path(__file__).resolve().parent.parent / "docs" / "operations.md"


def _explained() -> str:
    """The bullets under "The table's columns" of the weeks on record."""
    text = OPERATIONS.read_text(encoding="utf-8")
    start = text.index("The table's columns")
    return text[start : text.index("\n\n", text.index("\n- ", start))]


@pytest.mark.parametrize("header", [column.header for column in COLUMNS])
def test_history_column_is_explained_in_the_operations_docs(header: str) -> None:
    bullets = [line for line in _explained().splitlines() if line.startswith("- ")]
    assert any(f"`{header}`" in line.split(":")[0] for line in bullets), header
