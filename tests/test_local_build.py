"""The local builder: .dockerignore, context digests, Dockerfile lint, wheels, build index."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from vertex_retrain.backends.local.environments.build_index import (
    ImageNotBuiltError,
    index_path,
    lookup_image,
)
from vertex_retrain.backends.local.environments.builder import (
    build_container_image,
    build_python_package,
)
from vertex_retrain.build.context import (
    BuildError,
    context_files,
    is_ignored,
    parse_dockerignore,
)
from vertex_retrain.build.dockerfile_lint import parse_dockerfile

JOBS = Path(__file__).parent / "data" / "local_jobs"
IMAGE = "us-docker.pkg.dev/p/r/trainer:v1"


@pytest.fixture
def context(tmp_path: Path) -> Path:
    ctx = tmp_path / "ctx"
    (ctx / "trainer").mkdir(parents=True)
    (ctx / "trainer" / "__init__.py").write_text("")
    (ctx / "trainer" / "task.py").write_text("print('hi')\n")
    (ctx / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY trainer/ /app/trainer/\n"
        'ENTRYPOINT ["python", "-m", "trainer.task"]\n'
    )
    return ctx


@pytest.mark.parametrize(
    ("path", "ignored"),
    [
        ("data/big.csv", True),
        ("data/keep.csv", False),
        ("notes.md", True),
        ("README.md", False),
        ("src/deep/x.pyc", True),
        ("src/deep/x.py", False),
        ("secrets/a/b.txt", True),
        ("tmpfile", True),
        ("tmp/x", False),
    ],
)
def test_is_ignored_follows_docker_rules(path: str, ignored: bool) -> None:
    patterns = parse_dockerignore(
        "# comment\ndata\n!data/keep.csv\n*.md\n!README.md\n**/*.pyc\n/secrets/\ntmp?ile\n"
    )
    assert is_ignored(path, patterns) is ignored


def test_context_files_and_digest_honour_dockerignore(root: Path, context: Path) -> None:
    (context / "scratch").mkdir()
    (context / "scratch" / "big.bin").write_bytes(b"x" * 100)
    (context / ".dockerignore").write_text("scratch\n")
    assert context_files(context) == [
        ".dockerignore",
        "Dockerfile",
        "trainer/__init__.py",
        "trainer/task.py",
    ]
    first = build_container_image(context, image_uri=IMAGE)
    (context / "scratch" / "big.bin").write_bytes(b"y" * 100)  # ignored: same digest
    second = build_container_image(context, image_uri=IMAGE)
    assert second.skipped and second.digest == first.digest
    (context / "trainer" / "task.py").write_text("print('changed')\n")
    third = build_container_image(context, image_uri=IMAGE)
    assert not third.skipped and third.digest != first.digest


def test_build_container_image_records_entrypoint_and_returns_digest_reference(
    root: Path, context: Path
) -> None:
    result = build_container_image(context, image_uri=IMAGE)
    assert not result.skipped
    assert result.uri == f"{IMAGE}@sha256:{result.digest}"
    record = lookup_image(result.uri, root)
    assert record["entrypoint"] == ["python", "-m", "trainer.task"]
    assert record["workdir"] == "/app"
    assert record["context"] == str(context)
    assert json.loads(index_path(root).read_text())["images"][IMAGE]["digest"] == result.digest
    assert lookup_image(IMAGE, root) == record  # a tag without digest finds the latest build


def test_lookup_image_earlier_digest_runs_from_its_context_while_it_holds_that_build(
    root: Path, context: Path
) -> None:
    # A cached step returns the earlier reference A after B was built, as on Vertex (the
    # registry keeps A): A resolves to its own build while its context holds A's content.
    first = build_container_image(context, image_uri=IMAGE)
    (context / "trainer" / "task.py").write_text("print('v2')\n")
    second = build_container_image(context, image_uri=IMAGE)
    with pytest.raises(ImageNotBuiltError) as refused:
        lookup_image(first.uri, root)
    message = str(refused.value)
    assert "\n" not in message and "content changed since" in message
    assert "run again with --no-cache" in message and second.digest in message
    (context / "trainer" / "task.py").write_text("print('hi')\n")  # the edit reverted
    assert lookup_image(first.uri, root)["digest"] == first.digest
    assert lookup_image(second.uri, root)["digest"] == second.digest
    assert lookup_image(IMAGE, root)["digest"] == second.digest  # no digest: the newest


def test_lookup_image_earlier_digest_missing_from_an_old_index_says_how_to_get_out(
    root: Path, context: Path
) -> None:
    built = build_container_image(context, image_uri=IMAGE)
    index = json.loads(index_path(root).read_text())
    del index["image_builds"]  # as written before each build had its own record
    index["images"][IMAGE]["digest"] = "b" * 64
    index_path(root).write_text(json.dumps(index))
    assert lookup_image(IMAGE, root)["digest"] == "b" * 64
    with pytest.raises(ImageNotBuiltError, match=r"no record of it.*run again with --no-cache"):
        lookup_image(built.uri, root)


@pytest.mark.parametrize("secret", [".env", "id_rsa", "sa-key.json", "creds/app.json"])
def test_build_container_image_refuses_copying_credentials(
    root: Path, context: Path, secret: str
) -> None:
    target = context / secret
    target.parent.mkdir(parents=True, exist_ok=True)
    body = (
        '{"type": "service_account", "private_key": "-----BEGIN"}'
        if secret.endswith(".json")
        else "X=1"
    )
    target.write_text(body)
    (context / "Dockerfile").write_text('FROM python:3.11\nCOPY . /app\nCMD ["python", "x.py"]\n')
    with pytest.raises(BuildError, match=f"credential-copied.*{secret}"):
        build_container_image(context, image_uri=IMAGE)
    assert not index_path(root).exists()
    (context / ".dockerignore").write_text(secret + "\n")
    assert build_container_image(context, image_uri=IMAGE).lint == ()


def test_build_container_image_warns_gpu_without_cuda_and_missing_entrypoint(
    root: Path, context: Path
) -> None:
    (context / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY trainer /app/trainer\n")
    codes = {f.code for f in build_container_image(context, image_uri=IMAGE, gpu=True).lint}
    assert codes == {"gpu-without-cuda", "no-entrypoint"}
    (context / "Dockerfile").write_text(
        'FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCMD ["python3", "-m", "trainer.task"]\n'
    )
    assert build_container_image(context, image_uri=IMAGE, gpu=True).lint == ()


def test_parse_dockerfile_follows_stages_continuations_and_env() -> None:
    info = parse_dockerfile(
        "FROM nvidia/cuda:12.4.1-devel AS build\nRUN make \\\n  all\n"
        'FROM build\nWORKDIR /srv\nWORKDIR app\nENV A=1 B="two words"\n'
        "COPY --from=build /out /out\nCOPY src/ ./src/\nENTRYPOINT python -m app.main\n"
    )
    assert info.base_image == "nvidia/cuda:12.4.1-devel"
    assert info.workdir == "/srv/app"
    assert info.env == {"A": "1", "B": "two words"}
    assert info.copies == [(9, ["src/"])]
    assert info.entrypoint == ["/bin/sh", "-c", "python -m app.main"]


def _tar_with(member: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'FROM python:3.11\nCMD ["python"]\n'
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize("member", ["../evil/Dockerfile", "/etc/Dockerfile"])
def test_build_container_image_refuses_archive_escaping_context(
    root: Path, tmp_path: Path, member: str
) -> None:
    archive = tmp_path / "ctx.tar.gz"
    archive.write_bytes(_tar_with(member))
    with pytest.raises(BuildError, match="outside the context"):
        build_container_image(archive, image_uri=IMAGE)
    assert not (tmp_path / "evil").exists()
    contexts = root / "builds" / "contexts"
    assert not contexts.exists() or not any(contexts.iterdir())


def test_build_container_image_accepts_safe_archive(root: Path, tmp_path: Path) -> None:
    archive = tmp_path / "ctx.tar.gz"
    archive.write_bytes(_tar_with("Dockerfile"))
    result = build_container_image(archive, image_uri=IMAGE)
    assert (result.path / "Dockerfile").is_file()
    assert result.path.parent == root / "builds" / "contexts"


def test_build_python_package_bare_package_gets_synthesised_metadata(
    root: Path, tmp_path: Path
) -> None:
    source = tmp_path / "tinypkg"
    shutil.copytree(JOBS / "tinypkg", source)
    result = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.2.3")
    relative = f"{hashlib.sha256(result.path.read_bytes()).hexdigest()[:16]}/" + (
        "tinypkg-1.2.3-py3-none-any.whl"
    )
    assert result.uri == f"gs://bkt/pkgs/{relative}"
    assert result.path == root / "gcs" / "bkt" / "pkgs" / relative
    with zipfile.ZipFile(result.path) as wheel:
        names = wheel.namelist()
        metadata = wheel.read("tinypkg-1.2.3.dist-info/METADATA").decode()
    assert "tinypkg/task.py" in names
    assert "Requires-Dist: numpy" in metadata
    assert not (source / "build").exists() and not list(source.glob("*.egg-info"))
    again = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.2.3")
    assert again.skipped and again.uri == result.uri
    (source / "task.py").write_text("print('changed')\n")
    changed = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.2.3")
    assert not changed.skipped and changed.digest != result.digest


def test_build_python_package_keeps_each_builds_bytes_when_code_is_reverted(
    root: Path, tmp_path: Path
) -> None:
    # A newcomer's report: good build, edit (a second build of the same version), revert;
    # the cached first build must still hold the good code, not the edit's overwrite.
    source = tmp_path / "tinypkg"
    shutil.copytree(JOBS / "tinypkg", source)
    task = source / "task.py"
    good_text = task.read_text()
    good = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.0.0")
    good_bytes = good.path.read_bytes()
    task.write_text("raise ValueError('broken')\n")
    broken = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.0.0")
    assert broken.uri != good.uri and broken.path.name == good.path.name
    task.write_text(good_text)
    reverted = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.0.0")
    assert reverted.uri == good.uri
    assert good.path.read_bytes() == good_bytes


def test_build_python_package_rebuilds_a_published_wheel_whose_bytes_changed(
    root: Path, tmp_path: Path
) -> None:
    source = tmp_path / "tinypkg"
    shutil.copytree(JOBS / "tinypkg", source)
    first = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.0.0")
    original = first.path.read_bytes()
    first.path.write_bytes(b"tampered")
    again = build_python_package(source, destination_uri="gs://bkt/pkgs", version="1.0.0")
    assert not again.skipped
    assert again.path.read_bytes() == original


def test_build_python_package_refuses_non_package_folder(root: Path, tmp_path: Path) -> None:
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "x.py").write_text("")
    with pytest.raises(BuildError, match="neither a Python project"):
        build_python_package(tmp_path / "loose", destination_uri="gs://bkt/pkgs")


def test_build_step_names_source_uri_when_it_is_not_a_folder(root: Path, tmp_path: Path) -> None:
    from vertex_retrain.steps.build import build

    missing = tmp_path / "nowhere"
    with pytest.raises(BuildError) as raised:
        build(backend="local", source_uri=str(missing), destination="gs://bkt/pkgs")
    message = str(raised.value)
    assert message.startswith(f"source_uri {str(missing)!r} is not a folder here")
    assert "--param source_uri=" in message and "configure(" in message
    (tmp_path / "afile").write_text("x")
    with pytest.raises(BuildError, match="is not a folder here"):
        build(backend="local", source_uri=str(tmp_path / "afile"), destination="gs://bkt/pkgs")


@pytest.mark.parametrize("scheme", ["gs://", "/gcs/"])
def test_source_path_tells_a_local_run_to_pass_a_local_source_for_cloud_storage(
    root: Path, scheme: str
) -> None:
    from vertex_retrain.steps.backend import resolve_backend
    from vertex_retrain.steps.build import build, source_path
    from vertex_retrain.steps.digest import digest_source

    uri = f"{scheme}bkt/source/pkg"
    with pytest.raises(BuildError) as raised:
        digest_source(backend="local", source_uri=uri)
    message = str(raised.value)
    assert message.startswith(f"source_uri {uri!r} cannot be read here")
    assert "pass --param source_uri=<local path>" in message and "\n" not in message
    with pytest.raises(BuildError, match="cannot be read here"):
        build(backend="local", source_uri=uri, destination="gs://bkt/pkgs")
    (root / "gcs" / "bkt" / "source" / "pkg").mkdir(parents=True)  # there now: read
    assert source_path(resolve_backend("local"), uri).is_dir()
