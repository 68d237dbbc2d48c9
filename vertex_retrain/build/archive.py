"""Safe extraction of a build-context tar archive, independent of the Python patch level.

tarfile's own protection is not enough: its `data` filter decides whether a link escapes
with `os.path.realpath`, which gives up on paths longer than `PATH_MAX`, so a chain of
symlinks through long folder names can place a link that points outside the destination,
and a hard link through it then overwrites a file there (CVE-2025-4517; Python 3.11.7 and
every release before 3.11.13 / 3.12.11 / 3.13.4 are affected). So this module never lets
tarfile write anything. It checks the whole archive against a model of the tree it would
create, before the first byte is written:

- every member name is relative, free of `..`, NUL and duplicates (a second member with the
  same name would replace the first, for example a file by a link);
- only regular files, folders, symbolic links and hard links are allowed;
- no member lies below a symbolic link or a file of the archive, so nothing is ever written
  through a link;
- a symbolic link's target is relative and, followed through the archive's own links as the
  kernel would follow them, stays inside the destination;
- a hard link names a regular file that an earlier member created.

It then writes the members itself: folders with `mkdir`, files with `O_CREAT | O_EXCL |
O_NOFOLLOW` (a file is never overwritten and a link is never followed), links with
`os.symlink` and `os.link`. Modes keep only the owner's executable bit (0o644 or 0o755);
ownership is never copied. Any error is a `BuildError` naming the member.
"""

from __future__ import annotations

import os
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vertex_retrain.build.context import BuildError

# Linux's limit for following symbolic links in one lookup (MAXSYMLINKS).
_MAX_LINK_HOPS = 40
_CHUNK = 1 << 20

__all__ = ["extract_archive"]


@dataclass(frozen=True)
class _Entry:
    member: tarfile.TarInfo
    parts: tuple[str, ...]


class _RefusedError(Exception):
    """A member breaks a rule; carries the reason, the caller adds archive and member."""


def _parts(name: str) -> tuple[str, ...]:
    if "\0" in name:
        raise _RefusedError("contains a NUL character")
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise _RefusedError("would land outside the context")
    return tuple(part for part in path.parts if part != ".")


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.isdir():
        return "folder"
    if member.isreg():
        return "file"
    raise _RefusedError(
        "is a device, FIFO or other special file; only files, folders and links are allowed"
    )


def _resolve(
    start: tuple[str, ...], target: str, links: dict[tuple[str, ...], str], hops: list[int]
) -> tuple[str, ...]:
    """Follow `target` from folder `start` through the archive's own symlinks.

    `..` applies to the folder a link resolved to, as in the kernel, so `s/y/../f` with `s/y`
    a link to `..` leaves the destination although its text does not. Raises `_RefusedError`
    when the walk leaves the destination or follows more than `_MAX_LINK_HOPS` links.
    """
    if target.startswith("/"):
        raise _RefusedError("is an absolute path outside the context")
    stack = list(start)
    for component in target.split("/"):
        if component in {"", "."}:
            continue
        if component == "..":
            if not stack:
                raise _RefusedError("leaves the context once its links are followed")
            stack.pop()
            continue
        stack.append(component)
        next_target = links.get(tuple(stack))
        if next_target is not None:
            hops[0] += 1
            if hops[0] > _MAX_LINK_HOPS:
                raise _RefusedError(f"goes through more than {_MAX_LINK_HOPS} links (a loop?)")
            stack = list(_resolve(tuple(stack[:-1]), next_target, links, hops))
    return tuple(stack)


def _unsafe(archive: Path, member: tarfile.TarInfo, refused: _RefusedError) -> BuildError:
    return BuildError(
        f"build context archive {archive} is unsafe: member {member.name!r} {refused}"
    )


def _plan(archive: Path, members: list[tarfile.TarInfo]) -> list[_Entry]:
    """Check every member against the tree the whole archive would create."""
    kinds: dict[tuple[str, ...], str] = {}
    links: dict[tuple[str, ...], str] = {}
    plan: list[_Entry] = []
    for member in members:
        try:
            parts = _parts(member.name)
            kind = _kind(member)
            previous = kinds.get(parts)
            if previous is not None and not (previous == kind == "folder"):
                raise _RefusedError("appears twice; a later member would replace the earlier one")
            if not parts and kind != "folder":
                raise _RefusedError("names the context folder itself")
            for depth in range(1, len(parts)):
                # A folder made implicitly for this member stays a folder: a later member may
                # not turn it into a link.
                above = kinds.setdefault(parts[:depth], "folder")
                if above != "folder":
                    raise _RefusedError(
                        f"lies below the {above} {'/'.join(parts[:depth])!r}; "
                        "nothing may be written through a link or into a file"
                    )
            if kind == "hardlink":
                try:
                    target = _parts(member.linkname)
                except _RefusedError:
                    target = ("..",)  # not a member name: refused just below
                if kinds.get(target) not in {"file", "hardlink"}:
                    raise _RefusedError(
                        f"is a hard link to {member.linkname!r}, which is not a regular file "
                        "of this archive listed before it"
                    )
            if kind == "symlink":
                if not member.linkname or "\0" in member.linkname:
                    raise _RefusedError("is a link with an empty target or a NUL character in it")
                links[parts] = member.linkname
            kinds[parts] = kind
        except _RefusedError as refused:
            raise _unsafe(archive, member, refused) from None
        plan.append(_Entry(member, parts))
    for entry in plan:
        if entry.member.issym():
            link = entry.member.linkname
            try:
                _resolve(entry.parts[:-1], link, links, [0])
            except _RefusedError as refused:
                reason = _RefusedError(f"is a link to {link!r}, which {refused}")
                raise _unsafe(archive, entry.member, reason) from None
    return plan


def _write_file(tar: tarfile.TarFile, member: tarfile.TarInfo, path: Path) -> None:
    mode = 0o755 if member.mode & 0o100 else 0o644
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    source = tar.extractfile(member)
    if source is None:
        raise OSError(f"no data for {member.name!r}")
    descriptor = os.open(path, flags, mode)
    with source, os.fdopen(descriptor, "wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
    os.chmod(path, mode)  # the umask may have removed the executable bit


def _write(
    tar: tarfile.TarFile,
    entry: _Entry,
    destination: Path,
    by_parts: dict[tuple[str, ...], tarfile.TarInfo],
) -> None:
    path = destination.joinpath(*entry.parts)
    member = entry.member
    if entry.parts[:-1]:
        path.parent.mkdir(parents=True, exist_ok=True)
    if member.isdir():
        path.mkdir(exist_ok=True)
    elif member.issym():
        os.symlink(member.linkname, path)
    elif member.islnk():
        target_parts = _parts(member.linkname)
        try:
            os.link(destination.joinpath(*target_parts), path, follow_symlinks=False)
        except PermissionError:  # a filesystem without hard links: write a copy instead
            _write_file(tar, by_parts[target_parts], path)
    else:
        _write_file(tar, member, path)


def extract_archive(archive: Path, destination: Path) -> None:
    """Extract a tar build context into an empty folder, refusing anything that escapes it.

    Args:
        archive: A `.tar`, `.tar.gz` or `.tgz` file.
        destination: Empty folder to extract into.

    Raises:
        BuildError: The archive cannot be read, or a member breaks one of the rules in this
            module's docstring (checked before anything is written), or writing a member
            failed; the message names the member.
    """
    try:
        with tarfile.open(archive) as tar:
            _extract(tar, archive, destination)
    except (OSError, tarfile.TarError, EOFError, zlib.error) as exc:
        raise BuildError(f"build context archive {archive} cannot be read: {exc}") from None


def _extract(tar: tarfile.TarFile, archive: Path, destination: Path) -> None:
    plan = _plan(archive, tar.getmembers())
    by_parts: dict[tuple[str, ...], tarfile.TarInfo] = {}
    for entry in plan:
        if entry.parts:
            try:
                _write(tar, entry, destination, by_parts)
            except (OSError, ValueError, tarfile.TarError, EOFError, zlib.error) as exc:
                raise BuildError(
                    f"build context archive {archive}: cannot extract member "
                    f"{entry.member.name!r}: {exc}"
                ) from None
        by_parts.setdefault(entry.parts, entry.member)
