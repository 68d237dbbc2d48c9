"""Another repository reuses the components, with only the library installed from a wheel.

The other repository lives in a temporary folder outside this one and has its own
``components/`` package. The library is built as a wheel (``pip wheel``), installed with
``pip install --target`` (not editable), and the processes of the other repository see that
install only: a ``sitecustomize`` there removes this checkout's editable finders, so neither
``vertex_retrain`` from the checkout nor ``trainer`` can be imported by accident.

(a) it compiles our component YAMLs with ``vertex_retrain.cli.compiling`` and runs a pipeline of
    its own component and two of ours, loaded from those YAMLs, with ``vertex_retrain.run_local``;
    then its own compiled YAML with the command line (``run their-pipeline.yaml --local``);
(b) it imports our components from Python under the namespaced name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WHEEL_SOURCES = ("pyproject.toml", "README.md", "vertex_retrain", "components", "pipelines")

SITECUSTOMIZE = '''
"""Only the wheel: drop the editable finders of the checkout this test runs from."""
import sys

sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in repr(f)]
sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in repr(h)]
sys.path_importer_cache.clear()
'''

THEIR_COMPONENTS = '''
"""The other repository's own components package (the generic name is theirs)."""
'''

THEIR_STEP = """
from kfp import dsl


@dsl.component(base_image="python:3.11")
def learning_rate_of(values: dict) -> float:
    return float(values["learning_rate"])
"""

THEIR_PIPELINE = '''
"""Their pipeline: their component and two of ours, loaded from the compiled YAML."""
import json
import sys
from pathlib import Path

import components
from components.steps import learning_rate_of
from kfp import compiler, dsl
from kfp import components as kfp_components

dist = Path(sys.argv[1])
fixed = kfp_components.load_component_from_file(str(dist / "fixed_hyperparameters.yaml"))
register = kfp_components.load_component_from_file(str(dist / "register_model.yaml"))


@dsl.pipeline(name="their-pipeline")
def their_pipeline(model_uri: str) -> None:
    chosen = fixed(values={"learning_rate": 0.25})
    learning_rate_of(values=chosen.output)
    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    register(
        backend="local",
        model=model.output,
        display_name="their-model",
        serving_image_uri="example.com/their-serving:1",
    )


# The documented route: no project or location to pass, kfp.local's placeholders resolved.
import vertex_retrain
from vertex_retrain import run_local

outcome = run_local(their_pipeline, {"model_uri": "gs://their-bucket/model"})
assert outcome.succeeded, outcome.log_path.read_text()
compiler.Compiler().compile(their_pipeline, "their-pipeline.yaml")
print(json.dumps({"library": vertex_retrain.__file__, "components": components.__file__}))
'''

THEIR_IMPORT = '''
"""Importing our components under the namespaced name, next to their own `components`."""
import json
import sys

import components
from kfp import compiler, dsl

from vertex_retrain.components.fixed_hyperparameters import fixed_hyperparameters
from vertex_retrain.components.train_custom_job import train_custom_job


@dsl.pipeline(name="their-training")
def their_training() -> None:
    fixed_hyperparameters(values={"epochs": 1})


compiler.Compiler().compile(their_training, sys.argv[1])
try:
    import trainer  # noqa: F401
    trainer_importable = True
except ImportError:
    trainer_importable = False
print(json.dumps({
    "ours": fixed_hyperparameters.component_spec.name,
    "train_inputs": sorted(train_custom_job.component_spec.inputs)[:3],
    "theirs": components.__file__,
    "trainer_importable": trainer_importable,
}))
'''


def _copy_sources(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    target.mkdir(parents=True)
    for name in WHEEL_SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)


def _pip(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "--quiet"],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The library's wheel installed into a plain folder (not editable); returns the folder."""
    base = tmp_path_factory.mktemp("wheel-install")
    _copy_sources(base / "src")  # pip builds in-tree: never in this checkout
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(base / "wheels"),
         str(base / "src"), cwd=base)  # fmt: skip
    (wheel,) = (base / "wheels").glob("vertex_retrain-*.whl")
    _pip("install", "--no-deps", "--target", str(base / "site"), str(wheel), cwd=base)
    (base / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return base / "site"


@pytest.fixture
def other_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "other-repo"
    (repo / "components").mkdir(parents=True)
    (repo / "components" / "__init__.py").write_text(THEIR_COMPONENTS, encoding="utf-8")
    (repo / "components" / "steps.py").write_text(THEIR_STEP, encoding="utf-8")
    (repo / "pipeline.py").write_text(THEIR_PIPELINE, encoding="utf-8")
    (repo / "import_ours.py").write_text(THEIR_IMPORT, encoding="utf-8")
    return repo


def _python(repo: Path, site: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "GCS_FUSE_ROOT", "PYTHONSAFEPATH")
    }
    env.update(PYTHONPATH=f"{repo}{os.pathsep}{site}", VERTEX_LOCAL_ROOT=str(root))
    return subprocess.run(
        [sys.executable, *args], cwd=repo, env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_reuse_other_repo_runs_our_compiled_yamls_locally_from_a_wheel_install(
    installed: Path, other_repo: Path, tmp_path: Path
) -> None:
    root = tmp_path / "local-root"
    model = root / "gcs" / "their-bucket" / "model"
    model.mkdir(parents=True)
    (model / "model.json").write_text("{}", encoding="utf-8")
    compiled = _python(
        other_repo, installed, root, "-c",
        "from pathlib import Path; from vertex_retrain.cli.compiling import compile_all; "
        "import vertex_retrain; print(vertex_retrain.__file__); compile_all(Path('dist'))",
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    assert compiled.stdout.strip().startswith(str(installed))
    dist = other_repo / "dist" / "components"
    run = _python(other_repo, installed, root, "pipeline.py", str(dist))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    where = json.loads(run.stdout.strip().splitlines()[-1])
    assert where["library"].startswith(str(installed))
    assert where["components"] == str(other_repo / "components" / "__init__.py")
    log = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout)
    assert "Pipeline 'their-pipeline' finished with status SUCCESS" in log
    assert "✓ step learning-rate-of" in log
    # Their compiled pipeline, by the command line: `vertex-retrain run their-pipeline.yaml`.
    cli = _python(
        other_repo, installed, root, "-m", "vertex_retrain.cli.main", "run",
        "their-pipeline.yaml", "--local", "--param", "model_uri=gs://their-bucket/model",
    )  # fmt: skip
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    assert "run their-pipeline succeeded" in cli.stdout
    # Same component, same inputs: the local task cache serves the registration, as Vertex would.
    assert "↺ step register-model: cached from run their-pipeline-" in cli.stdout
    registry = _python(
        other_repo, installed, root, "-c",
        "from vertex_retrain.backends.local.model_registry.registry import ModelRegistry; "
        "print([v.version_id for v in ModelRegistry().list_versions('their-model')])",
    )  # fmt: skip
    assert registry.stdout.strip() == "['1']", registry.stderr


@pytest.mark.slow
def test_reuse_other_repo_imports_our_components_under_the_namespaced_name(
    installed: Path, other_repo: Path, tmp_path: Path
) -> None:
    result = _python(
        other_repo, installed, tmp_path / "root", "import_ours.py", str(tmp_path / "p.yaml")
    )
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout.strip().splitlines()[-1])
    assert facts["ours"] == "fixed-hyperparameters"
    assert facts["theirs"] == str(other_repo / "components" / "__init__.py")
    assert facts["trainer_importable"] is False  # only the library is installed
    assert (tmp_path / "p.yaml").is_file()
