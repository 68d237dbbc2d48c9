"""Whether a file is a registry database this library made, read from its header alone.

A registry is a SQLite file whose schema version (``PRAGMA user_version``, bytes 60-63 of
the header) this library stamped when it created it (or, before the first checkpoint, one
with its write-ahead log beside it). Knowing that without opening it lets the
CLI refuse a ``--db`` that names another file (a symlink, ``/etc/passwd``, an empty file, some
other program's database) before SQLite writes a journal beside it or a schema into it, and
lets the corrupt-database advice suggest moving a file aside only when we made that file.
"""

from __future__ import annotations

import os
import stat
from enum import Enum
from pathlib import Path

__all__ = ["FileKind", "file_kind"]

SQLITE_MAGIC = b"SQLite format 3\x00"
_USER_VERSION = slice(60, 64)
_HEADER_BYTES = 100


class FileKind(Enum):
    """What a path holds, as far as the registry is concerned."""

    MISSING = "missing"
    LINK = "a symbolic link"
    FOLDER = "a folder"
    SPECIAL = "not a regular file (a device, FIFO or socket)"
    EMPTY = "an empty file"
    REGISTRY = "a registry database"
    FOREIGN = "not a registry database"


def file_kind(path: str | os.PathLike[str]) -> FileKind:
    """What `path` is, without following a link or blocking on a FIFO.

    Raises:
        OSError: The path cannot be examined (permissions...), other than missing.
    """
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return FileKind.MISSING
    if stat.S_ISLNK(info.st_mode):
        return FileKind.LINK
    if stat.S_ISDIR(info.st_mode):
        return FileKind.FOLDER
    if not stat.S_ISREG(info.st_mode):
        return FileKind.SPECIAL
    if info.st_size == 0:
        return FileKind.EMPTY
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        header = handle.read(_HEADER_BYTES)
    if len(header) < _HEADER_BYTES or not header.startswith(SQLITE_MAGIC):
        return FileKind.FOREIGN
    stamped = int.from_bytes(header[_USER_VERSION], "big") > 0
    # A registry made a moment ago may hold its schema only in its write-ahead log until the
    # first checkpoint: the stamp in the file's own header is still 0 then.
    logged = path.with_name(path.name + "-wal").is_file()
    return FileKind.REGISTRY if stamped or logged else FileKind.FOREIGN
