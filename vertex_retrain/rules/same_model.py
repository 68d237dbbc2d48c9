"""When a candidate is the current champion itself, and how a decision says so.

A re-run of the week that made the champion gets its training from the cache: the candidate
is the champion's own model folder, so there is nothing to judge
(:func:`vertex_retrain.steps.nothing_to_decide.nothing_to_decide`). The decision's
``champion_comparison`` then reads ``same model: version <id>``; the run summary, the week's
record and ``history`` recognise it by :func:`is_same_model`.
"""

from __future__ import annotations

__all__ = ["SAME_MODEL", "is_same_model", "same_folder", "same_model_comparison"]

SAME_MODEL = "same model"
"""The start of a decision's ``champion_comparison`` when the candidate is the champion."""


def same_folder(candidate_uri: str, champion_uri: str) -> bool:
    """Whether two model folders are one (a trailing slash aside, which registries add)."""
    return bool(candidate_uri) and candidate_uri.rstrip("/") == champion_uri.rstrip("/")


def same_model_comparison(version_id: str) -> str:
    """The ``champion_comparison`` of a candidate that is champion version ``version_id``."""
    return f"{SAME_MODEL}: version {version_id}"


def is_same_model(champion_comparison: object) -> bool:
    """Whether a decision's ``champion_comparison`` says the candidate was the champion."""
    return str(champion_comparison or "").startswith(SAME_MODEL)
