"""Where an error message sends its reader: a section of the Components guide, by its title.

Someone who installed the wheel has no ``docs/`` folder, and the project declares no
documentation URL (``[project.urls]``), so a message names the guide and the section, and says
where the guide lives: ``docs/components.md`` in vertex-retrain's source repository.
"""

from __future__ import annotations

__all__ = [
    "DATASET_DECLARATION",
    "EVALUATION_CONTRACT",
    "EVALUATION_DECLARATION",
    "SECTIONS",
    "WAREHOUSE_SOURCES",
    "see",
]

DATASET_DECLARATION = "Dataset declaration"
WAREHOUSE_SOURCES = "Warehouse sources"
EVALUATION_DECLARATION = "Evaluation declaration"
EVALUATION_CONTRACT = "Evaluation contract"
SECTIONS = (DATASET_DECLARATION, WAREHOUSE_SOURCES, EVALUATION_DECLARATION, EVALUATION_CONTRACT)
"""The section titles messages cite; each is a heading of docs/components.md."""


def see(section: str) -> str:
    """The pointer a message ends with, e.g. ``see "Evaluation contract" in the Components
    guide, docs/components.md in vertex-retrain's source repository``.

    Args:
        section: One of :data:`SECTIONS`.

    Raises:
        ValueError: ``section`` is not one of :data:`SECTIONS`.
    """
    if section not in SECTIONS:
        raise ValueError(f"section {section!r} is not one of {', '.join(SECTIONS)}")
    return (
        f'see "{section}" in the Components guide, '
        "docs/components.md in vertex-retrain's source repository"
    )
