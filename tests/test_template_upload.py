"""Template upload: the local directory registry for real, Artifact Registry through a fake."""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.cli import template_upload, upload_command
from vertex_retrain.cli.template_upload import (
    LocalDirectoryRegistry,
    UploadError,
    default_tags,
    git_revision,
    package_version,
    upload_templates,
)

HOST = "https://asia-east1-kfp.pkg.dev/drink-shops/pipelines"


def _template(folder: Path, name: str = "weekly-retraining", marker: str = "one") -> Path:
    path = folder / f"{name}-{marker}.yaml"
    path.write_text(
        f"# {marker}\npipelineInfo:\n  name: {name}\nroot:\n  dag: {{tasks: {{}}}}\n"
        "schemaVersion: 2.1.0\n",
        encoding="utf-8",
    )
    return path


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_local_registry_stores_templates_by_content_and_records_tags(tmp_path: Path) -> None:
    registry = LocalDirectoryRegistry(tmp_path / "registry")
    template = _template(tmp_path)
    (result,) = upload_templates([template], registry, ["v0.1.0", "latest"], lambda n, v: v)

    assert result.pipeline_name == "weekly-retraining"
    assert result.version == _digest(template)
    stored = (
        tmp_path / "registry" / "weekly-retraining" / f"{_digest(template).replace(':', '-')}.yaml"
    )
    assert stored.read_bytes() == template.read_bytes()
    tags = json.loads((tmp_path / "registry" / "weekly-retraining" / "tags.json").read_text())
    assert tags == {"latest": result.version, "v0.1.0": result.version}
    assert registry.path_of("weekly-retraining", "latest") == stored
    # The RegistryClient-style upload with tags attaches them in the same call.
    assert registry.upload_pipeline(str(template), tags="again") == (
        "weekly-retraining",
        result.version,
    )
    assert registry.tags("weekly-retraining")["again"] == result.version
    with pytest.raises(UploadError, match=r"pipeline name '\.\./etc'"):
        registry.path_of("../etc", "latest")


def test_local_registry_reupload_is_idempotent(tmp_path: Path) -> None:
    registry = LocalDirectoryRegistry(tmp_path / "registry")
    template = _template(tmp_path)
    first = upload_templates([template], registry, ["v0.1.0"], lambda n, v: v)
    before = _files(tmp_path / "registry")
    second = upload_templates([template], registry, ["v0.1.0"], lambda n, v: v)
    assert first == second
    assert _files(tmp_path / "registry") == before


def test_local_registry_moves_tags_to_new_content_and_keeps_old_versions(tmp_path: Path) -> None:
    registry = LocalDirectoryRegistry(tmp_path / "registry")
    old = _template(tmp_path, marker="one")
    new = _template(tmp_path, marker="two")
    upload_templates([old], registry, ["latest", "abc1234"], lambda n, v: v)
    upload_templates([new], registry, ["latest", "def5678"], lambda n, v: v)

    assert registry.tags("weekly-retraining") == {
        "latest": _digest(new),
        "abc1234": _digest(old),
        "def5678": _digest(new),
    }
    assert registry.path_of("weekly-retraining", _digest(old)).read_bytes() == old.read_bytes()
    assert registry.path_of("weekly-retraining", "latest").read_bytes() == new.read_bytes()


def test_upload_templates_checks_every_file_before_uploading_any(tmp_path: Path) -> None:
    registry = LocalDirectoryRegistry(tmp_path / "registry")
    not_a_pipeline = tmp_path / "component.yaml"
    not_a_pipeline.write_text("name: x\nimplementation: {}\n", encoding="utf-8")
    with pytest.raises(UploadError, match=r"component\.yaml: not a compiled KFP pipeline"):
        upload_templates([_template(tmp_path), not_a_pipeline], registry, ["v1"], lambda n, v: v)
    assert not (tmp_path / "registry").exists()
    with pytest.raises(UploadError, match="no templates to upload"):
        upload_templates([], registry, ["v1"], lambda n, v: v)


class FakeRegistryClient:
    """Mimics kfp.registry.RegistryClient against an in-memory Artifact Registry."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.versions: dict[str, set[str]] = {}
        self.tags: dict[tuple[str, str], str] = {}
        self.calls: list[str] = []

    def _name(self, package: str, version: str) -> str:
        repository = "projects/drink-shops/locations/asia-east1/repositories/pipelines"
        return f"{repository}/packages/{package}/versions/{version}"

    def upload_pipeline(
        self, file_name: str, tags: Any = None, extra_headers: Any = None
    ) -> tuple[str, str]:
        self.calls.append("upload")
        assert tags is None  # tags are set separately, so existing ones can be moved
        name, content = template_upload.read_template(file_name)
        version = "sha256:" + hashlib.sha256(content).hexdigest()
        self.versions.setdefault(name, set()).add(version)
        return name, version

    def get_tag(self, package_name: str, tag: str) -> dict[str, Any]:
        self.calls.append(f"get {tag}")
        if (package_name, tag) not in self.tags:
            import requests

            response = requests.Response()
            response.status_code = 404
            raise requests.HTTPError("404 Not Found", response=response)
        return {
            "name": f".../tags/{tag}",
            "version": self._name(package_name, self.tags[package_name, tag]),
        }

    def create_tag(self, package_name: str, version: str, tag: str) -> dict[str, Any]:
        self.calls.append(f"create {tag}")
        assert (package_name, tag) not in self.tags
        self.tags[package_name, tag] = version
        return {}

    def update_tag(self, package_name: str, version: str, tag: str) -> dict[str, Any]:
        self.calls.append(f"update {tag}")
        assert (package_name, tag) in self.tags
        self.tags[package_name, tag] = version
        return {}


def test_artifact_registry_upload_creates_then_leaves_then_moves_tags(tmp_path: Path) -> None:
    client = FakeRegistryClient(HOST)
    first = _template(tmp_path, marker="one")
    upload_templates([first], client, ["v0.1.0", "abc1234"], lambda n, v: f"{HOST}/{n}/{v}")
    assert client.calls == [
        "upload",
        "get v0.1.0",
        "create v0.1.0",
        "get abc1234",
        "create abc1234",
    ]

    client.calls.clear()
    upload_templates([first], client, ["v0.1.0", "abc1234"], lambda n, v: f"{HOST}/{n}/{v}")
    assert client.calls == ["upload", "get v0.1.0", "get abc1234"]  # nothing to change

    client.calls.clear()
    second = _template(tmp_path, marker="two")
    (result,) = upload_templates([second], client, ["v0.1.0"], lambda n, v: f"{HOST}/{n}/{v}")
    assert client.calls == ["upload", "get v0.1.0", "update v0.1.0"]
    assert client.tags["weekly-retraining", "v0.1.0"] == _digest(second)
    assert client.tags["weekly-retraining", "abc1234"] == _digest(first)
    assert result.location == f"{HOST}/weekly-retraining/{_digest(second)}"


def test_artifact_registry_upload_propagates_errors_other_than_a_missing_tag(
    tmp_path: Path,
) -> None:
    client = FakeRegistryClient(HOST)

    def forbidden(package_name: str, tag: str) -> dict[str, Any]:
        raise PermissionError("403: artifactregistry.tags.get denied")

    client.get_tag = forbidden  # type: ignore[method-assign]
    with pytest.raises(PermissionError, match="403"):
        upload_templates([_template(tmp_path)], client, ["v1"], lambda n, v: v)
    assert client.tags == {}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )


def test_git_revision_is_the_short_sha_marked_dirty_or_nogit(tmp_path: Path) -> None:
    assert git_revision(tmp_path) == "nogit"
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("1", encoding="utf-8")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    sha = git_revision(tmp_path)
    assert len(sha) >= 7 and all(c in "0123456789abcdef" for c in sha)
    (tmp_path / "a.txt").write_text("2", encoding="utf-8")
    assert git_revision(tmp_path) == f"{sha}-dirty"


def test_default_tags_are_the_version_and_revision_then_extras(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(template_upload, "git_revision", lambda: "abc1234-dirty")
    assert default_tags(["latest", "latest"]) == [
        f"v{package_version()}",
        "abc1234-dirty",
        "latest",
    ]
    for bad in ["sha256:0", "has space", "-leading", "x" * 129]:
        with pytest.raises(UploadError, match="tag"):
            default_tags([bad])


def test_package_version_reads_pyproject() -> None:
    import tomllib

    pyproject = Path(template_upload.__file__).resolve().parents[2] / "pyproject.toml"
    assert package_version() == tomllib.loads(pyproject.read_text())["project"]["version"]


def _args(**overrides: Any) -> argparse.Namespace:
    values: dict[str, Any] = {
        "files": [],
        "project": None,
        "location": None,
        "repository": None,
        "registry_dir": None,
        "tag": [],
    }
    values.update(overrides)
    return argparse.Namespace(**values)


def test_cli_upload_to_a_local_registry_prints_the_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(template_upload, "git_revision", lambda: "abc1234")
    template = _template(tmp_path)
    code = upload_command.cli_upload(
        _args(files=[str(template)], registry_dir=str(tmp_path / "reg"), tag=["latest"])
    )
    assert code == 0
    out = capsys.readouterr().out
    assert (
        f"weekly-retraining  {_digest(template)}  tags: v{package_version()}, abc1234, latest"
        in out
    )
    assert "sha256-" in out  # the stored file's path


def test_cli_upload_to_artifact_registry_prints_the_version_uri(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(template_upload, "git_revision", lambda: "nogit")
    clients: list[FakeRegistryClient] = []

    def factory(host: str) -> FakeRegistryClient:
        clients.append(FakeRegistryClient(host))
        return clients[-1]

    template = _template(tmp_path)
    args = _args(
        files=[str(template)], project="drink-shops", location="asia-east1", repository="pipelines"
    )
    assert upload_command.cli_upload(args, client_factory=factory) == 0
    assert clients[0].host == HOST
    assert f"  {HOST}/weekly-retraining/{_digest(template)}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"project": "drink-shops"}, "missing --location, --repository"),
        (
            {"project": "Bad_Project", "location": "asia-east1", "repository": "r"},
            "project 'Bad_Project'",
        ),
        ({"registry_dir": "x", "project": "drink-shops"}, "either --registry-dir or --project"),
        ({"registry_dir": "x", "tag": ["bad tag"]}, "tag 'bad tag'"),
    ],
)
def test_cli_upload_rejects_bad_arguments_and_uploads_nothing(
    tmp_path: Path,
    overrides: dict[str, Any],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = _args(files=[str(_template(tmp_path))], **overrides)
    assert upload_command.cli_upload(args, client_factory=FakeRegistryClient) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_upload_without_compiled_templates_says_to_compile_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert upload_command.cli_upload(_args(registry_dir="reg")) == 2
    assert "`vertex-retrain compile`" in capsys.readouterr().err


def test_compile_py_upload_subcommand_uploads_to_a_registry_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vertex_retrain.cli import main as cli

    template = _template(tmp_path)
    registry = tmp_path / "reg"
    assert cli.main(["upload", str(template), "--registry-dir", str(registry), "--tag", "rc"]) == 0
    assert _digest(template) in capsys.readouterr().out
    assert LocalDirectoryRegistry(registry).tags("weekly-retraining")["rc"] == _digest(template)
