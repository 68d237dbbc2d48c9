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
    LeftOut,
    cli_build_image,
    stage_context,
)

COPIED = ("pyproject.toml", "constraints.txt", "README.md", "compile.py", "components",
          "pipelines", "vertex_retrain", "packages")  # fmt: skip


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


def _tarball_names(storage: FakeStorageClient) -> list[str]:
    import io
    import tarfile

    (data,) = storage.objects.values()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getnames()


def test_build_image_packs_what_dockerignore_allows_and_no_link_out_of_the_context(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The attack: a token in components/.git/config, a large file and a link to a secret
    # outside the repository, all listed in .dockerignore.
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:secret\n")
    (repo / "components" / ".git").mkdir()
    (repo / "components" / ".git" / "config").write_text("token = ghp_secret\n")
    (repo / "components" / "big.bin").write_bytes(b"\0" * 1024)
    (repo / "components" / "passwd").symlink_to(secret)
    (repo / "components" / "inside.py").symlink_to("image.py")  # within the context: a link
    (repo / "pipelines" / "notes.md").write_text("kept: not ignored\n")
    (repo / ".dockerignore").write_text(
        "components/.git\ncomponents/big.bin\n**/*.md\n!README.md\n"
    )
    build, storage = FakeCloudBuildClient(), FakeStorageClient()
    assert cli_build_image(_args(), build_client=build, storage_client=storage, repo=repo) == 0
    names = _tarball_names(storage)
    assert "components/image.py" in names and "components/inside.py" in names
    assert "README.md" in names and "pipelines/notes.md" not in names
    assert not [n for n in names if n.startswith(("components/.git", "components/big.bin"))]
    assert "components/passwd" not in names
    data = next(iter(storage.objects.values()))
    assert b"ghp_secret" not in data and b"root:x:0:0:secret" not in data
    out = capsys.readouterr().out.splitlines()
    left = out[: out.index(next(line for line in out if line.startswith("built and pushed")))]
    assert left == [
        "left out of the build context (4):",
        "  components/.git (a .git folder)",
        "  components/big.bin (.dockerignore)",
        "  components/passwd (a link out of the context)",
        "  pipelines/notes.md (.dockerignore)",
    ]


def test_stage_context_leaves_out_a_git_folder_and_a_fifo_without_a_dockerignore(
    repo: Path, tmp_path: Path
) -> None:
    import os

    (repo / "vertex_retrain" / ".git").mkdir()
    (repo / "vertex_retrain" / ".git" / "HEAD").write_text("ref: x\n")
    os.mkfifo(repo / "vertex_retrain" / "pipe")
    left_out: list[LeftOut] = []
    context = stage_context(repo, tmp_path / "ctx", left_out=left_out)
    assert {(item.path, item.reason) for item in left_out} == {
        ("vertex_retrain/.git", "a .git folder"),
        ("vertex_retrain/pipe", "not a regular file"),
    }
    files = context_files(context)
    assert not any(".git/" in f or f.endswith("/pipe") for f in files)
    assert "vertex_retrain/__init__.py" in files
