"""Hostile build-context archives: links that point out, chains of links, writes through links.

Each archive goes through `build_container_image`, as a user's would. After a refusal the
test checks that the folder next to the root (which holds a victim file) is unchanged, that
no partial extraction is left and that the build index was not written. Simple `../x` and
`/etc/x` member names and a plain absolute symlink are covered in test_local_build.py and
test_hostile_paths.py.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from vertex_retrain.backends.local.environments.build_index import index_path
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.build.context import BuildError

IMAGE = "us-docker.pkg.dev/p/r/trainer:v1"
DOCKERFILE = b'FROM python:3.11\nENTRYPOINT ["python"]\n'


def _add(tar: tarfile.TarFile, name: str, kind: bytes = tarfile.REGTYPE, link: str = "",
         data: bytes = b"") -> None:  # fmt: skip
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if info.size else None)


def _archive(path: Path, members: list[tuple[str, bytes, str]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, "Dockerfile", data=DOCKERFILE)
        for name, kind, link in members:
            _add(tar, name, kind, link, b"owned\n" if kind == tarfile.REGTYPE else b"")
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.txt").write_text("original\n")
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _assert_refused(root: Path, archive: Path, outside: Path, member: str) -> None:
    before = _snapshot(outside)
    with pytest.raises(BuildError) as raised:
        build_container_image(archive, image_uri=IMAGE)
    assert repr(member) in str(raised.value)
    assert "Traceback" not in str(raised.value)
    assert _snapshot(outside) == before
    contexts = root / "builds" / "contexts"
    assert not contexts.exists() or list(contexts.iterdir()) == []
    assert not index_path(root).exists()


def test_build_refuses_cve_2025_4517_link_chain_through_long_names(
    root: Path, tmp_path: Path, outside: Path
) -> None:
    """The published exploit: symlinks through folder names long enough that realpath gives
    up, a link out of the destination behind them, a hard link through it, then a regular
    file written over the hard link and another through the escaping link. On Python 3.11.7
    tarfile's `data` filter let all of it through."""
    long_name = "d" * 247
    steps = "abcdefghijklmnop"
    archive = tmp_path / "cve.tar"
    with tarfile.open(archive, "w") as tar:
        _add(tar, "Dockerfile", data=DOCKERFILE)
        path = ""
        for step in steps:
            _add(tar, os.path.join(path, long_name), tarfile.DIRTYPE)
            _add(tar, os.path.join(path, step), tarfile.SYMTYPE, long_name)
            path = os.path.join(path, long_name)
        link_path = os.path.join(*steps, "l" * 254)
        _add(tar, link_path, tarfile.SYMTYPE, "../" * len(steps))
        staging_depth = len((root / "builds" / "contexts" / ".x.partial").parts) - 1
        escape = link_path + "/" + "../" * staging_depth + str(outside).lstrip("/")
        _add(tar, "escape", tarfile.SYMTYPE, escape)
        _add(tar, "hard", tarfile.LNKTYPE, "escape/victim.txt")
        _add(tar, "hard", data=b"overwritten\n")
        _add(tar, "escape/created.txt", data=b"created\n")
    _assert_refused(root, archive, outside, link_path)
    assert (outside / "victim.txt").read_text() == "original\n"
    assert not (outside / "created.txt").exists()


# fmt: off
ESCAPES = [
    # hard links out: absolute, relative, and through a link of the archive
    ([("h", tarfile.LNKTYPE, "{outside}/victim.txt")], "h"),
    ([("h", tarfile.LNKTYPE, "../../outside/victim.txt")], "h"),
    ([("s", tarfile.SYMTYPE, "."), ("h", tarfile.LNKTYPE, "s/Dockerfile")], "h"),
    ([("h", tarfile.LNKTYPE, "later.txt"), ("later.txt", tarfile.REGTYPE, "")], "h"),
    # chains of symlinks that each look inside, but end outside
    ([("a", tarfile.SYMTYPE, "b/victim.txt"), ("b", tarfile.SYMTYPE, "..")], "a"),
    ([("a", tarfile.SYMTYPE, "b/c"), ("b", tarfile.SYMTYPE, "sub/.."),
      ("sub", tarfile.SYMTYPE, "x/y"), ("c", tarfile.SYMTYPE, "../../..")], "c"),
    ([("s", tarfile.DIRTYPE, ""), ("s/y", tarfile.SYMTYPE, ".."),
      ("x", tarfile.SYMTYPE, "s/y/../outside/victim.txt")], "x"),
    ([("l1", tarfile.SYMTYPE, "l2/victim.txt"), ("l2", tarfile.SYMTYPE, "l3/.."),
      ("l3", tarfile.SYMTYPE, ".")], "l1"),
    ([("p", tarfile.SYMTYPE, "q"), ("q", tarfile.SYMTYPE, "p")], "p"),  # a loop
    # a link first, then a file written through it or over it
    ([("s", tarfile.SYMTYPE, "sub"), ("sub", tarfile.DIRTYPE, ""),
      ("s/x.txt", tarfile.REGTYPE, "")], "s/x.txt"),
    ([("s", tarfile.SYMTYPE, "{outside}"), ("s/created.txt", tarfile.REGTYPE, "")],
     "s/created.txt"),
    ([("x", tarfile.SYMTYPE, "Dockerfile"), ("x", tarfile.REGTYPE, "")], "x"),
    ([("Dockerfile", tarfile.SYMTYPE, "{outside}/victim.txt")], "Dockerfile"),
    ([("f.txt", tarfile.REGTYPE, ""), ("f.txt/x", tarfile.REGTYPE, "")], "f.txt/x"),
    ([("sub/x.txt", tarfile.REGTYPE, ""), ("sub", tarfile.SYMTYPE, "{outside}")], "sub"),
    # names
    ([("./Dockerfile", tarfile.REGTYPE, "")], "./Dockerfile"),
    ([("blk", tarfile.BLKTYPE, "")], "blk"),
]
ESCAPE_IDS = [
    "hardlink-absolute", "hardlink-dotdot", "hardlink-through-symlink",
    "hardlink-to-later-member", "chain-two", "chain-dotdot-after-link", "dotdot-after-link",
    "chain-three", "loop", "file-through-inside-link", "file-through-outside-link",
    "link-then-file-same-name", "dockerfile-replaced-by-link-out", "file-below-file",
    "folder-then-link-over-it",
    "duplicate-after-normalising", "block-device",
]
# fmt: on


@pytest.mark.parametrize(("members", "named"), ESCAPES, ids=ESCAPE_IDS)
def test_build_refuses_archive_whose_links_or_names_escape(
    root: Path,
    tmp_path: Path,
    outside: Path,
    members: list[tuple[str, bytes, str]],
    named: str,
) -> None:
    resolved = [(n, k, link.format(outside=outside)) for n, k, link in members]
    archive = _archive(tmp_path / "ctx.tar.gz", resolved)
    _assert_refused(root, archive, outside, named)


@pytest.mark.parametrize("content", [b"not a tar at all", b"\x1f\x8b\x08\x00truncated"])
def test_build_refuses_unreadable_archive_with_build_error(
    root: Path, tmp_path: Path, content: bytes
) -> None:
    archive = tmp_path / "ctx.tar.gz"
    archive.write_bytes(content)
    with pytest.raises(BuildError, match="cannot be read"):
        build_container_image(archive, image_uri=IMAGE)
    assert not index_path(root).exists()


def test_build_extracts_archive_with_links_that_stay_inside(root: Path, tmp_path: Path) -> None:
    archive = _archive(
        tmp_path / "ctx.tar.gz",
        [
            ("./", tarfile.DIRTYPE, ""),
            ("src", tarfile.DIRTYPE, ""),
            ("src/app.py", tarfile.REGTYPE, ""),
            ("src/current", tarfile.SYMTYPE, "../src/app.py"),
            ("top", tarfile.SYMTYPE, "src"),
            ("via-top", tarfile.SYMTYPE, "top/../Dockerfile"),
            ("copy.py", tarfile.LNKTYPE, "src/app.py"),
        ],
    )
    result = build_container_image(archive, image_uri=IMAGE)
    context = result.path
    assert (context / "src" / "current").read_bytes() == b"owned\n"
    assert os.readlink(context / "top") == "src"
    assert (context / "via-top").read_bytes() == DOCKERFILE
    assert (context / "copy.py").read_bytes() == b"owned\n"
    assert (context / "copy.py").stat().st_mode & 0o777 == 0o644
