"""``compile.py build-image`` against fake Cloud Build and Cloud Storage clients."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from tests.fakes.vertex_build import FakeCloudBuildClient, FakeStorageClient
from vertex_retrain.build.context import context_files
from vertex_retrain.cli.build_image import (
    COMPONENT_DOCKERFILE,
    REPO_ROOT,
    cli_build_image,
    stage_context,
)

COPIED = ("pyproject.toml", "constraints.txt", "README.md", "compile.py", "components",
          "pipelines", "vertex_retrain")  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of what the component Dockerfile needs, to change sources in."""
    target = tmp_path / "repo"
    for name in COPIED:
        origin = REPO_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target / name)
    return target


def _args(**overrides: object) -> argparse.Namespace:
    values: dict[str, object] = {
        "project": "drink-shops",
        "location": "europe-west4",
        "repository": "ml",
        "staging_bucket": None,
        "force": False,
    }
    values.update(overrides)
    return argparse.Namespace(**values)


def test_stage_context_holds_exactly_what_the_dockerfile_copies(tmp_path: Path) -> None:
    context = stage_context(REPO_ROOT, tmp_path / "ctx")
    files = context_files(context)
    assert COMPONENT_DOCKERFILE in files
    assert {f.split("/", 1)[0] for f in files} == {*COPIED, "components"}
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    assert not any(f.startswith(("tests/", "trainer/", "docs/", ".venv/")) for f in files)


def test_build_image_pushes_once_per_source_digest_and_prints_the_compile_command(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build, storage = FakeCloudBuildClient(), FakeStorageClient()
    assert cli_build_image(_args(), build_client=build, storage_client=storage, repo=repo) == 0
    first = capsys.readouterr().out.splitlines()
    image = "europe-west4-docker.pkg.dev/drink-shops/ml/vertex-retrain"
    assert first[0].startswith(f"built and pushed {image}:ctx-")
    assert first[-1].startswith(f"  vertex-retrain compile --component-image {image}@sha256:")
    (staged,) = storage.objects
    assert staged.startswith("gs://drink-shops-vertex-retrain-staging/cloud-build/")
    assert build.builds[0].steps[0].args[-3:] == ["-f", COMPONENT_DOCKERFILE, "."]

    assert cli_build_image(_args(), build_client=build, storage_client=storage, repo=repo) == 0
    again = capsys.readouterr().out.splitlines()
    assert again[0] == first[0].replace("built and pushed", "unchanged sources, reusing")
    assert len(build.builds) == 1

    (repo / "vertex_retrain" / "specs" / "defaults.py").write_text("CHANGED = 1\n", "utf-8")
    assert cli_build_image(_args(), build_client=build, storage_client=storage, repo=repo) == 0
    changed = capsys.readouterr().out.splitlines()
    assert changed[0].startswith("built and pushed") and changed[0] != first[0]
    assert len(build.builds) == 2


def test_build_image_failure_is_one_line_and_exit_1(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = FakeCloudBuildClient(status="FAILURE")
    code = cli_build_image(
        _args(), build_client=build, storage_client=FakeStorageClient(), repo=repo
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "ended FAILURE" in err and err.count("\n") == 1


def test_build_image_bad_input_is_exit_2(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_build_image(
        _args(staging_bucket="/tmp/staging"),
        build_client=FakeCloudBuildClient(),
        storage_client=FakeStorageClient(),
        repo=repo,
    )
    assert code == 2
    assert "staging_uri must be a gs://BUCKET" in capsys.readouterr().err
