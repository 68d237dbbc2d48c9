"""``--db PATH``: the registry database a command reads, checked before anything opens it.

Only the default database (``$VERTEX_LOCAL_ROOT/registry.db``) is made without asking. A
``--db`` must name a registry this library made
(:mod:`~vertex_retrain.backends.local.model_registry.registry_file`), or, with ``--create``, a path
where there is none yet (or an empty file): a mistyped path, an empty file or another program's
file never becomes a registry, and a symbolic link is refused rather than followed (it could
lead anywhere, ``/etc/passwd`` included).
"""

from __future__ import annotations

from pathlib import Path

from vertex_retrain.backends.local.model_registry.registry_db import DB_FILENAME
from vertex_retrain.backends.local.model_registry.registry_file import FileKind, file_kind

__all__ = ["DbOptionError", "checked_db"]


class DbOptionError(ValueError):
    """A ``--db`` the command refuses (one line, exit 2)."""


def checked_db(db: str | None, *, create: bool = False, can_create: bool = True) -> str | None:
    """The ``--db`` path once it is known to be a registry (or one ``--create`` may make).

    Args:
        db: The ``--db`` value; None for the default database.
        create: ``--create`` was given: a missing path or an empty file becomes a registry.
        can_create: The command has ``--create`` (its refusals suggest it).

    Raises:
        DbOptionError: Missing or empty without ``create``, a link, a folder, not a regular
            file, or a file that is not a registry.
    """
    if db is None:
        return None
    path = Path(db).expanduser()
    try:
        kind = file_kind(path)
    except OSError as error:
        raise DbOptionError(f"--db {db}: {error.strerror or error}") from None
    fresh = kind in (FileKind.MISSING, FileKind.EMPTY)
    if kind is FileKind.REGISTRY or (create and fresh):
        return db
    problems = {
        FileKind.MISSING: "no registry database there; check the path",
        FileKind.FOLDER: f"is a folder; pass the database file, e.g. {path / DB_FILENAME}",
        FileKind.LINK: "is a symbolic link, not followed; pass the database file itself",
        FileKind.EMPTY: "is an empty file, not a registry database",
    }
    problem = problems.get(kind, f"is {kind.value}; pass the registry database file")
    hint = ", or pass --create to make a new registry at it" if fresh and can_create else ""
    raise DbOptionError(f"--db {db}: {problem}{hint}")
