"""``vertex-retrain build-image``: the component image, built and pushed with Cloud Build.

The build context holds exactly what ``components/Dockerfile`` copies and ``.dockerignore``
lets through (staged in a scratch folder: bytecode, ``.git`` folders, links out of the
repository and special files left out, each refusal listed), so the image's tag,
``ctx-<digest>``, changes when and only when those sources do, and a build of unchanged
sources is skipped
(:func:`vertex_retrain.backends.vertex.cloud_build.build_image_with_cloud_build`). The command
ends by printing the ``compile`` command that uses the image.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from vertex_retrain.cli.console import printable
from vertex_retrain.invocation import command

__all__ = ["COMPONENT_DOCKERFILE", "LeftOut", "cli_build_image", "stage_context"]

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPONENT_DOCKERFILE = "components/Dockerfile"
IMAGE_NAME = "vertex-retrain"
_SKIPPED = ("__pycache__", "*.pyc", "*.egg-info", ".DS_Store", "build", "dist")
DOCKERIGNORE_REASON = ".dockerignore"


@dataclass(frozen=True)
class LeftOut:
    """A path under what the Dockerfile copies that the context does not hold.

    Attributes:
        path: Relative to the repository (posix).
        reason: Why: ``.dockerignore``, ``a .git folder``, ``a link out of the context`` or
            ``not a regular file``.
    """

    path: str
    reason: str


def stage_context(
    repo: Path,
    target: Path,
    dockerfile: str = COMPONENT_DOCKERFILE,
    left_out: list[LeftOut] | None = None,
) -> Path:
    """Copies a Dockerfile and what it ``COPY``s from ``repo`` into ``target``, as Docker
    would send it.

    ``repo``'s ``.dockerignore`` is applied with Docker's rules; a ``.git`` folder is never
    copied (git never counts it as content; it may hold tokens); a symbolic link is copied as
    a link when it points inside ``repo`` and left out when it points anywhere else, so no
    file from outside the context (``/etc/passwd``) is ever read; FIFOs and devices are left
    out unread. Bytecode and build leftovers are skipped silently.

    Args:
        repo: The repository root (the context ``docker build -f DOCKERFILE .`` uses).
        target: An empty folder.
        dockerfile: The Dockerfile, relative to ``repo``.
        left_out: Collects what was refused, for the caller to list.

    Returns:
        ``target``, ready to be the build context.

    Raises:
        BuildError: The Dockerfile is missing or copies something that is not there.
    """
    from vertex_retrain.build.context import DOCKERIGNORE, BuildError, parse_dockerignore
    from vertex_retrain.build.dockerfile_lint import parse_dockerfile

    path = repo / dockerfile
    if not path.is_file():
        raise BuildError(f"no {dockerfile} in {repo}: run from a clone of vertex-retrain")
    info = parse_dockerfile(path.read_text(encoding="utf-8"))
    ignore_file = repo / DOCKERIGNORE
    patterns = (
        parse_dockerignore(ignore_file.read_text(encoding="utf-8"))
        if ignore_file.is_file() and not ignore_file.is_symlink()
        else []
    )
    refused = left_out if left_out is not None else []
    sources = {source for _line, copied in info.copies for source in copied}
    for source in sorted(sources | {dockerfile}):
        origin = repo / source
        if not os.path.lexists(origin):
            raise BuildError(f"{dockerfile} copies {source!r}, which is not in {repo}")
        _stage(repo, PurePosixPath(source).as_posix(), target, patterns, refused)
    return target


def _stage(
    repo: Path, relative: str, target: Path, patterns: list[Any], refused: list[LeftOut]
) -> None:
    """Stages one path (and, for a folder, what is below it) unless it is refused."""
    from vertex_retrain.build.context import is_ignored

    origin, destination = repo / relative, target / relative
    name = PurePosixPath(relative).name
    if any(fnmatch.fnmatch(name, skipped) for skipped in _SKIPPED):
        return
    if ".git" in PurePosixPath(relative).parts:
        refused.append(LeftOut(relative, "a .git folder"))
        return
    info = origin.lstat()
    folder = stat.S_ISDIR(info.st_mode)
    re_included = any(pattern.exclusion for pattern in patterns)
    if is_ignored(relative, patterns) and not (folder and re_included):
        refused.append(LeftOut(relative, DOCKERIGNORE_REASON))
        return
    if stat.S_ISLNK(info.st_mode):
        pointed = os.path.realpath(origin)
        if os.path.commonpath([pointed, os.path.realpath(repo)]) != os.path.realpath(repo):
            refused.append(LeftOut(relative, "a link out of the context"))
            return
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.symlink_to(os.readlink(origin))
    elif folder:
        destination.mkdir(parents=True, exist_ok=True)
        for child in sorted(os.listdir(origin)):
            _stage(repo, f"{relative}/{child}", target, patterns, refused)
    elif stat.S_ISREG(info.st_mode):
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, destination, follow_symlinks=False)
    else:
        refused.append(LeftOut(relative, "not a regular file"))


def cli_build_image(
    args: argparse.Namespace,
    out: TextIO | None = None,
    *,
    build_client: Any = None,
    storage_client: Any = None,
    repo: Path = REPO_ROOT,
) -> int:
    """Builds and pushes the component image unless the same sources were built, then prints
    the compile command.

    Args:
        args: Parsed arguments (project, location, repository, staging_bucket, force).
        out: Where the result goes.
        build_client: A ``cloudbuild_v1.CloudBuildClient`` (tests pass a fake).
        storage_client: A ``google.cloud.storage.Client`` (tests pass a fake).
        repo: The repository root.

    Returns:
        0 when the image is in the registry, 1 when the build failed, 2 on bad input.
    """
    from vertex_retrain.backends.vertex.cloud_build import (
        CloudBuildError,
        build_image_with_cloud_build,
    )
    from vertex_retrain.build.context import BuildError

    out = out or sys.stdout
    image = f"{args.location}-docker.pkg.dev/{args.project}/{args.repository}/{IMAGE_NAME}"
    staging = args.staging_bucket or f"gs://{args.project}-vertex-retrain-staging"
    try:
        with tempfile.TemporaryDirectory(prefix="vertex-retrain-image-") as scratch:
            left_out: list[LeftOut] = []
            context = stage_context(repo, Path(scratch), left_out=left_out)
            _list_left_out(left_out, out)
            built = build_image_with_cloud_build(
                context,
                project=args.project,
                location=args.location,
                image=image,
                staging_uri=staging,
                dockerfile=COMPONENT_DOCKERFILE,
                gpu=False,
                force=bool(getattr(args, "force", False)),
                build_client=build_client,
                storage_client=storage_client,
            )
    except (ValueError, BuildError) as error:
        print(f"build-image: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except CloudBuildError as error:
        print(f"build-image: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    tag = f"{image}:ctx-{built.context_digest}"
    verb = "unchanged sources, reusing" if built.skipped else "built and pushed"
    print(f"{verb} {tag}", file=out)
    print(f"  digest: {built.image_uri}", file=out)
    print("compile with it:", file=out)
    print(f"  {command('compile --component-image ' + built.image_uri)}", file=out)
    return 0


def _list_left_out(left_out: list[LeftOut], out: TextIO) -> None:
    """Says what the build context does not hold, one path a line, before anything is sent."""
    if left_out:
        print(f"left out of the build context ({len(left_out)}):", file=out)
    for item in left_out:
        print(f"  {printable(item.path)} ({item.reason})", file=out)
