"""``vertex-retrain build-image``: the component image, built and pushed with Cloud Build.

The build context holds exactly what ``components/Dockerfile`` copies (staged in a scratch
folder, bytecode left out), so the image's tag, ``ctx-<digest>``, changes when and only when
those sources do, and a build of unchanged sources is skipped
(:func:`vertex_retrain.backends.vertex.cloud_build.build_image_with_cloud_build`). The command
ends by printing the ``compile`` command that uses the image.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from vertex_retrain.invocation import command

__all__ = ["COMPONENT_DOCKERFILE", "cli_build_image", "stage_context"]

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPONENT_DOCKERFILE = "components/Dockerfile"
IMAGE_NAME = "vertex-retrain"
_SKIPPED = ("__pycache__", "*.pyc", "*.egg-info", ".DS_Store", "build", "dist")


def stage_context(repo: Path, target: Path, dockerfile: str = COMPONENT_DOCKERFILE) -> Path:
    """Copies a Dockerfile and what it ``COPY``s from ``repo`` into ``target``.

    Args:
        repo: The repository root (the context ``docker build -f DOCKERFILE .`` uses).
        target: An empty folder.
        dockerfile: The Dockerfile, relative to ``repo``.

    Returns:
        ``target``, ready to be the build context.

    Raises:
        BuildError: The Dockerfile is missing or copies something that is not there.
    """
    from vertex_retrain.build.context import BuildError
    from vertex_retrain.build.dockerfile_lint import parse_dockerfile

    path = repo / dockerfile
    if not path.is_file():
        raise BuildError(f"no {dockerfile} in {repo}: run from a clone of vertex-retrain")
    info = parse_dockerfile(path.read_text(encoding="utf-8"))
    sources = {source for _line, copied in info.copies for source in copied}
    for source in sorted(sources | {dockerfile}):
        origin = repo / source
        destination = target / source
        if origin.is_dir():
            shutil.copytree(origin, destination, ignore=shutil.ignore_patterns(*_SKIPPED))
        elif origin.is_file():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, destination)
        else:
            raise BuildError(f"{dockerfile} copies {source!r}, which is not in {repo}")
    return target


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
            context = stage_context(repo, Path(scratch))
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
