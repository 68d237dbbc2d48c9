"""Messages send a wheel's user to a section of the Components guide by its title, never to a
``docs/`` path they do not have (vertex_retrain/contracts/guide.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from vertex_retrain.contracts.dataset import DatasetDeclarationError, parse_dataset_declaration
from vertex_retrain.contracts.evaluation import EvaluationContractError, parse_metrics
from vertex_retrain.contracts.guide import EVALUATION_CONTRACT, SECTIONS, see

REPO = Path(__file__).resolve().parent.parent
LIBRARY = ("vertex_retrain", "components", "pipelines")
# A repository path such as docs/components.md#x, not a URL's .../compute/docs/gpus.
_DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w.-]+")


def _message_strings(path: Path) -> list[str]:
    """The string literals of a module that can reach a message: every one but the bare
    string statements (docstrings)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare
    ]


def test_guide_sections_are_headings_of_the_components_guide() -> None:
    headings = set(re.findall(r"^#+ (.+)$", (REPO / "docs" / "components.md").read_text(), re.M))
    assert set(SECTIONS) <= headings, set(SECTIONS) - headings


def test_guide_see_names_the_section_the_guide_and_where_it_lives() -> None:
    assert see(EVALUATION_CONTRACT) == (
        'see "Evaluation contract" in the Components guide, docs/components.md in '
        "vertex-retrain's source repository"
    )


def test_guide_see_refuses_a_section_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="'Trainer' is not one of Dataset declaration, "):
        see("Trainer")


def test_library_messages_cite_no_docs_path() -> None:
    guide = REPO / "vertex_retrain" / "contracts" / "guide.py"
    cited = [
        f"{path.relative_to(REPO)}: {text!r}"
        for folder in LIBRARY
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != guide
        for text in _message_strings(path)
        if _DOCS_PATH.search(text)
    ]
    assert cited == []


def test_contract_errors_point_at_the_guide_s_section() -> None:
    with pytest.raises(EvaluationContractError) as metrics_error:
        parse_metrics({"format": "v0"}, expect_champion=False, source="metrics.json")
    assert str(metrics_error.value).endswith(f"(evaluation contract: {see(EVALUATION_CONTRACT)})")
    with pytest.raises(DatasetDeclarationError) as declaration_error:
        parse_dataset_declaration({"table": 1})
    assert 'see "Dataset declaration" in the Components guide' in str(declaration_error.value)
