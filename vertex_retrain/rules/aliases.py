"""Which aliases a registered version takes, after the evaluation gate decided.

A version that passed the gate takes the champion alias and becomes the default version, in
one alias move, so no reader sees one without the other. A version that did not pass takes
the challenger alias only; the champion and the default version stay where they are.
"""

from __future__ import annotations

import re

DEFAULT_ALIAS = "default"
"""The alias of a model's default version (both registries keep it on exactly one version)."""

CHAMPION_ALIAS = "champion"
"""register_model's default champion alias: the version that should be serving."""

ALIAS_PATTERN = re.compile(r"[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]")
"""A version alias, as Vertex accepts it: it never looks like a version id."""


def is_valid_alias(alias: object) -> bool:
    """Whether both registries accept ``alias`` as a version alias."""
    return isinstance(alias, str) and ALIAS_PATTERN.fullmatch(alias) is not None


def role_alias(*, make_champion: bool, champion_alias: str, challenger_alias: str) -> str:
    """The alias naming the version's role: the champion alias or the challenger alias."""
    return champion_alias if make_champion else challenger_alias


def aliases_to_move(
    *, make_champion: bool, champion_alias: str, challenger_alias: str
) -> list[str]:
    """The aliases to move onto the new version, in one move.

    Args:
        make_champion: The evaluation gate passed.
        champion_alias: The serving version's alias (``champion`` unless configured).
        challenger_alias: The alias of versions that did not pass.

    Returns:
        ``[champion_alias, "default"]`` or ``[challenger_alias]``.

    Raises:
        ValueError: An alias is invalid, is ``default``, or both roles share one alias;
            checked before anything is registered.
    """
    for name, alias in (("champion_alias", champion_alias), ("challenger_alias", challenger_alias)):
        if not is_valid_alias(alias) or alias == DEFAULT_ALIAS:
            raise ValueError(
                f"{name} must be a version alias other than {DEFAULT_ALIAS!r} (which moves "
                "with the champion), matching [a-z][a-zA-Z0-9-]{0,126}[a-z0-9], e.g. "
                f"'champion' or 'candidate-2'; got {alias!r}"
            )
    if champion_alias == challenger_alias:
        raise ValueError(
            f"champion_alias and challenger_alias must differ; both are {champion_alias!r}"
        )
    role = role_alias(
        make_champion=make_champion,
        champion_alias=champion_alias,
        challenger_alias=challenger_alias,
    )
    return [role, DEFAULT_ALIAS] if make_champion else [role]
