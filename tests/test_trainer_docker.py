"""What can be checked of the Dockerfiles without building them (no Docker daemon here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "drink_shops"


def _instructions(name: str) -> list[tuple[str, str]]:
    text = (EXAMPLE / "trainer" / name).read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _single(instructions: list[tuple[str, str]], keyword: str) -> str:
    (value,) = [arg for key, arg in instructions if key == keyword]
    return value


def test_serving_dockerfile_base_entrypoint_and_copies() -> None:
    steps = _instructions("Dockerfile.serve")
    assert steps[0][0] == "FROM" and re.match(r"^python:3\.1[1-9]-slim$", steps[0][1])
    assert json.loads(_single(steps, "ENTRYPOINT")) == ["python", "-m", "trainer.serve"]
    copies = [arg.split() for key, arg in steps if key == "COPY"]
    # The repository is the context: the image copies packages/guarded-asgi, the HTTP server.
    for source, _target in copies:
        assert (ROOT / source).exists(), f"copies {source}, which is not in the repository"
    assert ["examples/drink_shops/trainer/", "/app/trainer/"] in copies
    assert _single(steps, "WORKDIR") == "/app"  # so `python -m trainer.*` finds the package
    assert "-r /app/trainer/requirements.txt" in " ".join(a for k, a in steps if k == "RUN")
    _requirements_copied_first(steps)


def test_training_dockerfile_builds_from_the_trainer_folder_and_installs_the_trainer() -> None:
    # The weekly pipeline builds it with trainer/ as the context (build_container).
    steps = _instructions("Dockerfile")
    assert steps[0][0] == "FROM"
    assert re.match(r"^nvidia/cuda:\d+\.\d+\.\d+-cudnn-runtime-ubuntu", steps[0][1])
    assert json.loads(_single(steps, "ENTRYPOINT")) == ["python", "-m", "trainer.task"]
    copies = [arg.split() for key, arg in steps if key == "COPY"]
    for source, _target in copies:
        assert (EXAMPLE / "trainer" / source).exists(), f"copies {source}, not in trainer/"
    assert [".", "/src/trainer"] in copies
    runs = " ".join(arg for key, arg in steps if key == "RUN")
    assert "-r /app/requirements.txt" in runs and '"/src/trainer[framework]"' in runs
    _requirements_copied_first(steps)


def _requirements_copied_first(steps: list[tuple[str, str]]) -> None:
    order = [
        key
        for key, arg in steps
        if (key == "RUN" and "requirements" in arg) or (key == "COPY" and "requirements" in arg)
    ]
    assert order[0] == "COPY"


def test_serving_dockerfile_holds_the_http_server_beside_the_trainer() -> None:
    copies = [arg.split() for key, arg in _instructions("Dockerfile.serve") if key == "COPY"]
    assert ["packages/guarded-asgi/guarded_asgi/", "/app/guarded_asgi/"] in copies


def test_serving_dockerfile_binds_all_interfaces_on_the_aip_port() -> None:
    env = " ".join(arg for key, arg in _instructions("Dockerfile.serve") if key == "ENV")
    assert "TRAINER_SERVE_HOST=0.0.0.0" in env and "AIP_HTTP_PORT=8080" in env
    assert _single(_instructions("Dockerfile.serve"), "EXPOSE") == "8080"


def test_requirements_pin_exactly_the_runtime_dependencies() -> None:
    lines = [
        line
        for line in (ROOT / "examples" / "drink_shops" / "trainer" / "requirements.txt")
        .read_text()
        .splitlines()
        if line and not line.startswith("#")
    ]
    names = {line.split("==")[0] for line in lines}
    assert names == {
        "torch",
        "numpy",
        "pyarrow",
        "cloudml-hypertune",
        "google-cloud-storage",
        *("uvicorn", "starlette", "httptools", "uvloop"),  # the prediction server
    }
    constraints = (ROOT / "constraints.txt").read_text().splitlines()
    for line in lines:
        assert line in constraints, f"{line} disagrees with constraints.txt"


def test_trainer_package_does_not_import_components() -> None:
    for path in (ROOT / "examples" / "drink_shops" / "trainer").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+components\b", source, re.MULTILINE), path.name
