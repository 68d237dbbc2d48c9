"""A local job's environment: exactly its package, its requirements' closure and what the
executor image provides, linked from the caller's environment; nothing else of the caller's."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import tarfile
import venv
from pathlib import Path

import pytest

from tests.package_files import write_installed, write_wheel
from vertex_retrain.backends.local.environments.python_env import (
    PackageEnvError,
    prepare_package_env,
)
from vertex_retrain.backends.local.environments.wheel_install import site_packages
from vertex_retrain.backends.local.jobs.executor import SUCCEEDED, run_custom_job

IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
# What the package path does on an image that is served: the shipped catalog's have all ended.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")
REPORT = """
import importlib.metadata, importlib.util, json, os, sys
from pathlib import Path
names = sys.argv[1:]
out = Path(os.environ["GCS_FUSE_ROOT"]) / os.environ["AIP_MODEL_DIR"][len("gs://"):]
out.mkdir(parents=True, exist_ok=True)
(out / "report.json").write_text(json.dumps({
    "module": __file__,
    "prefix": sys.prefix,
    "found": {name: importlib.util.find_spec(name) is not None for name in names},
    "distributions": sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions()),
}))
"""


def _job(package_uri: str, module: str, args: list[str] | None = None) -> dict:
    return {
        "displayName": "env probe",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "pythonPackageSpec": {
                        "executorImageUri": IMAGE,
                        "packageUris": [package_uri],
                        "pythonModule": module,
                        "args": args or [],
                    },
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/run"},
        },
    }


def _report(root: Path) -> dict:
    return json.loads((root / "gcs" / "bkt" / "run" / "model" / "report.json").read_text())


def _probe_wheel(root: Path, requires: list[str], name: str = "probe") -> str:
    write_wheel(
        root / "gcs" / "bkt" / "packages",
        name,
        "1.0",
        {f"{name}/__init__.py": "", f"{name}/task.py": REPORT},
        requires=requires,
    )
    return f"gs://bkt/packages/{name}-1.0-py3-none-any.whl"


@pytest.mark.slow
@pytest.mark.parametrize("install", ["regular", "editable"])
def test_job_env_runs_the_given_wheel_although_the_caller_has_the_same_name_and_version(
    tmp_path: Path, install: str, catalog_still_serving: Path
) -> None:
    # The caller: a venv that sees this library (and its packages) and has mytrainer 1.0
    # installed, without evaluate.py. The job's wheel, also mytrainer 1.0, holds evaluate.py.
    caller = tmp_path / "caller"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(caller)
    caller_site = site_packages(caller)
    library_site = sysconfig.get_paths()["purelib"]
    (caller_site / "_library.pth").write_text(f"import site; site.addsitedir({library_site!r})\n")
    write_installed(
        caller_site,
        "mytrainer",
        "1.0",
        {"mytrainer/__init__.py": "OLD = True\n"},
        editable_source=tmp_path / "src" if install == "editable" else None,
    )
    root = tmp_path / "root"
    write_wheel(
        root / "gcs" / "bkt" / "packages",
        "mytrainer",
        "1.0",
        {"mytrainer/__init__.py": "", "mytrainer/evaluate.py": REPORT},
    )
    payload = _job("gs://bkt/packages/mytrainer-1.0-py3-none-any.whl", "mytrainer.evaluate")
    script = (
        "import importlib.metadata, importlib.util, json, sys\n"
        "from pathlib import Path\n"
        "from vertex_retrain.backends.local.jobs.executor import run_custom_job\n"
        "from vertex_retrain.specs import containers\n"
        "containers.DEFAULT_CONTAINERS_PATH = Path(sys.argv[3])  # the served images' copy\n"
        "seen = (importlib.metadata.version('mytrainer'),"
        " importlib.util.find_spec('mytrainer.evaluate') is not None)\n"
        "result = run_custom_job(json.loads(sys.argv[1]), root=Path(sys.argv[2]),"
        " on_log=lambda line: None)\n"
        "print(json.dumps({'seen': seen, 'state': result.state, 'error': result.error,"
        " 'tail': result.failure.log_tail if result.failure else ''}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"VERTEX_LOCAL_ROOT", "PYTHONPATH"}}
    done = subprocess.run(
        [str(caller / "bin" / "python"), "-c", script, json.dumps(payload), str(root),
         str(catalog_still_serving)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["seen"] == ["1.0", False]  # the caller has 1.0 without evaluate.py
    assert outcome["state"] == SUCCEEDED, outcome
    report = _report(root)
    assert Path(report["module"]).is_relative_to(root / "envs")
    assert Path(report["prefix"]).is_relative_to(root / "envs")


@pytest.mark.slow
def test_job_env_holds_the_closure_and_nothing_else_of_the_callers(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leaked = tmp_path / "leaked"
    leaked.mkdir()
    (leaked / "leakmod.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(leaked))  # the caller's own path must not leak in
    uri = _probe_wheel(root, ["numpy>=1.26"])
    names = ["numpy", "torch", "hypertune", "yaml", "kfp", "vertex_retrain", "pytest", "leakmod"]
    result = run_custom_job(_job(uri, "probe.task", names), on_log=lambda _: None)
    assert result.state == SUCCEEDED, (result.error, result.failure)
    report = _report(root)
    assert report["found"] == {
        "numpy": True,  # the package's requirement
        "torch": True,  # the executor image's framework
        "hypertune": True,  # listed for the image in containers.yaml
        "yaml": False,
        "kfp": False,
        "vertex_retrain": False,
        "pytest": False,
        "leakmod": False,
    }
    assert "kfp" not in report["distributions"] and "numpy" in report["distributions"]


def test_job_env_installs_an_unsatisfied_requirement_from_the_index(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    write_wheel(index, "tinydep", "2.0", {"tinydep.py": "VERSION = '2.0'\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    caller = tmp_path / "caller-site"
    write_installed(caller, "tinydep", "1.0", {"tinydep.py": "VERSION = '1.0'\n"})
    monkeypatch.syspath_prepend(str(caller))
    env = prepare_package_env([_probe_wheel(root, ["tinydep>=2"])], root=root)
    line = next(w for w in env.warnings if "package index" in w)
    assert "tinydep>=2 (needed by probe 1.0; installed here: 1.0)" in line
    version = subprocess.run(
        [str(env.python), "-c", "import tinydep; print(tinydep.VERSION)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert version == "2.0"


def test_job_env_links_a_satisfying_installed_version_without_the_index(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "empty"))
    caller = tmp_path / "caller-site"
    write_installed(caller, "tinydep", "2.0", {"tinydep.py": "VERSION = '2.0'\n"})
    monkeypatch.syspath_prepend(str(caller))
    env = prepare_package_env([_probe_wheel(root, ["tinydep>=2"])], root=root)
    assert not any("package index" in w for w in env.warnings)
    found = subprocess.run(
        [str(env.python), "-c", "import tinydep; print(tinydep.__file__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(found).resolve() == (caller / "tinydep.py").resolve()


def test_job_with_a_requirement_nobody_has_fails_before_it_starts(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    write_wheel(index, "tinydep", "2.0", {"tinydep.py": ""})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    caller = tmp_path / "caller-site"
    write_installed(caller, "tinydep", "1.0", {"tinydep.py": ""})
    monkeypatch.syspath_prepend(str(caller))
    uri = _probe_wheel(root, ["tinydep>=99"])
    with pytest.raises(PackageEnvError) as refused:
        run_custom_job(_job(uri, "probe.task"), on_log=lambda _: None)
    message = str(refused.value)
    assert "tinydep>=99 (needed by probe 1.0; installed here: 1.0)" in message
    assert "pip could not install it from the package index" in message
    assert "tinydep" in message.rsplit(":", 1)[-1]  # pip's own error line names it
    assert not (root / "jobs").exists()  # nothing started


def test_job_env_is_reused_until_what_it_holds_changes(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = tmp_path / "caller-site"
    write_installed(caller, "tinydep", "2.0", {"tinydep.py": ""})
    monkeypatch.syspath_prepend(str(caller))
    write_wheel(
        root / "gcs" / "b",
        "probe",
        "1.0",
        {"probe/__init__.py": ""},
        requires=["tinydep", 'missingdep; extra == "never"'],
        extras=["x"],
    )
    uri = ["gs://b/probe-1.0-py3-none-any.whl"]
    first = prepare_package_env(uri, root=root)
    again = prepare_package_env(uri, root=root)
    assert (first.reused, again.reused) == (False, True) and again.python == first.python
    with_extra = prepare_package_env(uri, root=root, extras=["x"])
    assert not with_extra.reused and with_extra.python != first.python
    write_installed(tmp_path / "newer-site", "tinydep", "3.0", {"tinydep.py": ""})
    monkeypatch.syspath_prepend(str(tmp_path / "newer-site"))  # the caller upgraded tinydep
    upgraded = prepare_package_env(uri, root=root)
    assert not upgraded.reused and upgraded.python != first.python


def test_job_env_installs_the_given_sdist(root: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "sdistpkg").mkdir(parents=True)
    (project / "sdistpkg" / "__init__.py").write_text("WHERE = 'sdist'\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70.1"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "sdistpkg"\nversion = "1.0"\n'
    )
    out = root / "gcs" / "b"
    out.mkdir(parents=True)
    with tarfile.open(out / "sdistpkg-1.0.tar.gz", "w:gz") as archive:
        archive.add(project, arcname="sdistpkg-1.0")
    env = prepare_package_env(["gs://b/sdistpkg-1.0.tar.gz"], root=root)
    where = subprocess.run(
        [str(env.python), "-c", "import sdistpkg; print(sdistpkg.WHERE, sdistpkg.__file__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert where[0] == "sdist" and Path(where[1]).is_relative_to(root / "envs")


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("an entry leaving the venv", "outside the venv"),
        ("a tag for another Python", "does not fit"),
        ("no WHEEL file", "no single .dist-info/WHEEL"),
    ],
)
def test_job_env_refuses_a_wheel_it_cannot_install_before_anything_starts(
    root: Path, case: str, fragment: str
) -> None:
    import zipfile

    folder = root / "gcs" / "b"
    files = {"bad/__init__.py": ""}
    if case == "an entry leaving the venv":
        files["../../../../evil.py"] = ""
    wheel = write_wheel(folder, "bad", "1.0", files)
    if case == "a tag for another Python":
        wheel = wheel.rename(folder / "bad-1.0-cp27-cp27mu-linux_x86_64.whl")
    if case == "no WHEEL file":
        with zipfile.ZipFile(wheel) as source:
            kept = {n: source.read(n) for n in source.namelist() if not n.endswith("/WHEEL")}
        with zipfile.ZipFile(wheel, "w") as archive:
            for name, data in kept.items():
                archive.writestr(name, data)
    with pytest.raises(PackageEnvError, match=fragment):
        prepare_package_env([f"gs://b/{wheel.name}"], root=root)
    assert not list(root.parent.glob("**/evil.py"))
