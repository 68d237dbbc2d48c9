"""Hostile model folders: `artifact.json` is schema-checked and confined to its folder.

A bad index or a file name that leads out of the folder (absolute, `..`, a symlink) or to
something that is not a regular file (`/dev/zero`, a FIFO) is refused before any file is
opened for reading: `load_artifact` raises `ArtifactError` naming the key,
`python -m trainer.serve` prints one line and exits 2, and a local deploy is refused with
that line while the endpoint stays as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data.hostile.support import (
    GOOD_INSTANCE,
    REPO,
    TRAINER_SERVING_EXTRAS,
    TRAINER_SERVING_SPEC,
    trainer_serving_package,
    write_tiny_artifact,
)

from trainer.artifact_index import ArtifactError
from trainer.export import load_artifact
from trainer.paths import sha256_file
from trainer.serve import main as serve_main
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.model_server import ServerStartError
from vertex_retrain.backends.local.storage import to_local_path

ZEROS = "0" * 64


def _index(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "artifact.json").read_text()))


def _write_index(folder: Path, index: Any) -> None:
    (folder / "artifact.json").write_text(json.dumps(index))


def _list(folder: Path, name: str, digest: str = ZEROS) -> None:
    index = _index(folder)
    index["sha256"][name] = digest
    _write_index(folder, index)


def _fifo(folder: Path) -> None:
    os.mkfifo(folder / "pipe")
    _list(folder, "pipe")


def _link_out(folder: Path) -> None:
    (folder / "weights.pt").unlink()
    (folder / "weights.pt").symlink_to("/etc/hostname")


def _link_to_zero(folder: Path) -> None:
    (folder / "zeros").symlink_to("/dev/zero")
    _list(folder, "zeros")


def _config_of_wrong_shape(folder: Path) -> None:
    (folder / "config.json").write_text("[1, 2]")
    _list(folder, "config.json", sha256_file(folder / "config.json"))


def _rewrite(name: str, change: Callable[[Any], Any]) -> Callable[[Path], None]:
    """A case that rewrites the JSON file `name` and lists its new hash: every hash holds."""

    def apply(folder: Path) -> None:
        path = folder / name
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
        _list(folder, name, sha256_file(path))

    return apply


def _model_sizes(**sizes: Any) -> Callable[[Path], None]:
    return _rewrite("config.json", lambda config: {**config, "model": {**config["model"], **sizes}})


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing sha256": (
        lambda folder: _write_index(folder, {"format": _index(folder)["format"]}),
        "missing key 'sha256'",
    ),
    "a list": (lambda folder: _write_index(folder, [1, 2]), "expected a JSON object"),
    "not JSON": (
        lambda folder: (folder / "artifact.json").write_text("{"),
        "artifact.json: not valid JSON",
    ),
    "unknown key": (
        lambda folder: _write_index(folder, {**_index(folder), "run": "x"}),
        "unknown key 'run'",
    ),
    "sha256 a list": (
        lambda folder: _write_index(folder, {**_index(folder), "sha256": ["weights.pt"]}),
        "'sha256' must map file names",
    ),
    "digest not hex": (
        lambda folder: _list(folder, "vocab.json", "abc"),
        "sha256['vocab.json'] must be 64 lowercase hex digits",
    ),
    "/dev/zero": (lambda folder: _list(folder, "/dev/zero"), "sha256['/dev/zero']: expected a"),
    "../x": (lambda folder: _list(folder, "../x"), "sha256['../x']: '.' and '..'"),
    "symlink out": (_link_out, "sha256['weights.pt']: leads outside the model folder"),
    "symlink to /dev/zero": (_link_to_zero, "sha256['zeros']: leads outside the model folder"),
    "FIFO": (_fifo, "sha256['pipe']: not a regular file"),
    "required file unlisted": (
        lambda folder: _write_index(folder, {**_index(folder), "sha256": {}}),
        "'sha256' does not list ['weights.pt'",
    ),
    "config of the wrong shape": (_config_of_wrong_shape, "the files do not form a model"),
    # The config is checked against the weights before the model's tables exist.
    "config model a list": (
        _rewrite("config.json", lambda config: {**config, "model": [1]}),
        "'model' is list; expected an object of ['n_members'",
    ),
    "config size not an integer": (
        _model_sizes(n_drinks=12.5),
        "'model.n_drinks' is 12.5; expected an integer from 1 to 2147483647",
    ),
    "config claims 6 million members": (
        _model_sizes(n_members=6_000_000),
        "weights.pt: 'member.weight' is shape (4, 4); config.json describes shape (6000001, 4)",
    ),
    "vocab shorter than the config": (
        _rewrite("vocab.json", lambda vocab: {"member_ids": vocab["member_ids"][:-1]}),
        "vocab.json: 'member_ids' has shape (2,); config.json says (3,)",
    ),
    "popularity of another shape": (
        _rewrite("popularity.json", lambda table: {"store_drink_counts": [[1.0]]}),
        "popularity.json: 'store_drink_counts' has shape (1, 1); config.json says (2, 12)",
    ),
    "a category past the config": (
        _rewrite("catalogue.json", lambda c: {**c, "drink_category": [99] * 12}),
        "drink_category must lie in 0..2",
    ),
}


@pytest.fixture(scope="module")
def good_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_artifact(tmp_path_factory.mktemp("good-model") / "model")


def _hostile(good_model: Path, where: Path, case: str) -> Path:
    folder = where / "model"
    shutil.copytree(good_model, folder)
    CASES[case][0](folder)
    return folder


@pytest.mark.parametrize("case", sorted(CASES))
def test_load_artifact_refuses_a_hostile_folder_naming_the_key(
    good_model: Path, tmp_path: Path, case: str
) -> None:
    folder = _hostile(good_model, tmp_path, case)
    with pytest.raises(ArtifactError) as caught:
        load_artifact(folder)
    message = str(caught.value)
    assert CASES[case][1] in message and "\n" not in message


@pytest.mark.parametrize("case", ["missing sha256", "a list", "/dev/zero", "FIFO"])
def test_serve_main_refuses_a_hostile_folder_in_one_line_with_exit_2(
    good_model: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _hostile(good_model, tmp_path, case)
    assert serve_main(["--model_dir", str(folder), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: cannot load the model")
    assert CASES[case][1] in err


@pytest.mark.slow
def test_serve_cli_process_refuses_dev_zero_without_hanging(
    good_model: Path, tmp_path: Path
) -> None:
    folder = _hostile(good_model, tmp_path, "/dev/zero")
    result = subprocess.run(
        [sys.executable, "-m", "trainer.serve", "--model_dir", str(folder), "--port", "0"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert CASES["/dev/zero"][1] in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_local_deploy_of_a_hostile_folder_is_refused_naming_the_key(
    good_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    uri = "gs://models/recs/1"
    target = to_local_path(uri)
    target.parent.mkdir(parents=True)
    shutil.move(_hostile(good_model, tmp_path, "missing sha256"), target)
    ModelRegistry().upload_version(
        "recs",
        artifact_uri=uri,
        container_spec=TRAINER_SERVING_SPEC,
        sample_instances=[GOOD_INSTANCE],
        serving_package_uri=trainer_serving_package(tmp_path / "root"),
        serving_extras=TRAINER_SERVING_EXTRAS,
    )
    endpoints = LocalEndpoints()
    endpoints.get_or_create("ep")
    with pytest.raises(ServerStartError) as caught:
        endpoints.deploy("ep", "recs", "1")
    first_line = str(caught.value).splitlines()[0]
    assert "exited with code 2" in first_line and "missing key 'sha256'" in first_line
    assert endpoints.get("ep").deployed_models == ()


def test_load_artifact_allocates_no_model_for_a_config_the_weights_contradict(
    good_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A config claiming a member table of 6 million rows is refused from the shapes alone:
    # every model built meanwhile is on the meta device, without memory.
    import trainer.export
    from trainer.model import DrinkRecommender

    devices: list[str] = []

    class Spy(DrinkRecommender):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            devices.append(next(self.parameters()).device.type)

    monkeypatch.setattr(trainer.export, "DrinkRecommender", Spy)
    folder = tmp_path / "model"
    shutil.copytree(good_model, folder)
    _model_sizes(n_members=6_000_000)(folder)
    with pytest.raises(ArtifactError, match=r"config\.json describes shape \(6000001, 4\)"):
        load_artifact(folder)
    assert devices == ["meta"]
