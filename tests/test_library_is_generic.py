"""The library holds nothing of one model or dataset: the examples' domain stays in examples/.

Issue 20's rule, as code: no module, default, schema or message of the installed library
(`vertex_retrain/`, `components/`, `pipelines/`) names the drink shops' domain or their
trainer's modules. Words with another common meaning are matched in the domain's forms only
(``member_id``, not a tar archive's members; ``transactions before``, not a database's
transactions).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LIBRARY = ("vertex_retrain", "components", "pipelines")
SUFFIXES = (".py", ".yaml", ".yml", ".txt", ".json", ".toml", ".cfg")
DOMAIN = re.compile(
    r"drink|\bshops?\b|member_id|\"members\"|store_id|guess.your.order|ndcg|recall_at|\busual\b"
    r"|transactions_uri|transactions (before|schema)|\"transactions\"|/transactions\b"
    r"|\btrainer\.(task|evaluate|serve|data)\b",
    re.IGNORECASE,
)


def _library_files() -> list[Path]:
    return sorted(
        path
        for folder in LIBRARY
        for path in (REPO / folder).rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and (path.suffix in SUFFIXES or path.name.startswith("Dockerfile"))
    )


def domain_mentions(text: str) -> list[str]:
    """Each line of ``text`` that names the example's domain, with its number."""
    return [
        f"{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), start=1)
        if DOMAIN.search(line)
    ]


def test_library_files_name_no_example_domain() -> None:
    found = {
        str(path.relative_to(REPO)): mentions
        for path in _library_files()
        if (mentions := domain_mentions(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert found == {}, "\n".join(
        f"{name}:{line}" for name, lines in found.items() for line in lines[:5]
    )


@pytest.mark.parametrize(
    ("line", "domain"),
    [
        ("NDCG@10 of the candidate", True),
        ("python -m trainer.task", True),
        ("the drink-shops bucket", True),
        ('{"member_id": 1}', True),
        ("for member in archive.getmembers():", False),
        ("in one registry transaction", False),
        ("opening, transactions and clear errors", False),
        ("data steps see only transactions before it", True),
        ("trainer_source = mine.task", False),
    ],
)
def test_domain_mentions_match_the_domain_forms_only(line: str, domain: bool) -> None:
    assert bool(domain_mentions(line)) is domain
