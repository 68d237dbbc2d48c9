"""What another team imports: every component from the package, and the image they run in
for plain ``kfp.compiler`` compiles."""

# No `from __future__ import annotations`: KFP reads the pipeline's annotations as types.
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kfp import compiler, dsl

import vertex_retrain.components as components
from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE, set_component_image

IMAGE = "europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:0.1.0"


def test_components_package_exports_each_component_not_its_module() -> None:
    import vertex_retrain.components.hp_tune  # noqa: F401 - the submodule first, as pipelines do

    for name in components.__all__:
        exported = getattr(components, name)
        assert callable(exported) and not isinstance(exported, type(sys)), name
    assert type(components.hp_tune).__name__ == "PythonComponent"
    assert sorted(dir(components)) == sorted(components.__all__)
    with pytest.raises(AttributeError, match="no attribute 'train'"):
        _ = components.train  # type: ignore[attr-defined]


def test_components_package_import_loads_neither_kfp_nor_gcpc() -> None:
    code = (
        "import sys, vertex_retrain.components; "
        "loaded = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(loaded & {'kfp', 'google_cloud_pipeline_components'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _images(tmp_path: Path) -> set[str]:
    @dsl.pipeline(name="mine")
    def mine() -> None:
        components.stop_run(reason="x")

    path = tmp_path / "mine.yaml"
    compiler.Compiler().compile(mine, str(path))
    spec = yaml.safe_load(path.read_text())
    return {e["container"]["image"] for e in spec["deploymentSpec"]["executors"].values()}


def test_set_component_image_reaches_a_plain_kfp_compile_and_returns_the_previous(
    tmp_path: Path,
) -> None:
    assert _images(tmp_path) == {DEFAULT_COMPONENT_IMAGE}
    previous = set_component_image(IMAGE)
    try:
        assert previous == DEFAULT_COMPONENT_IMAGE
        assert _images(tmp_path) == {IMAGE}
    finally:
        set_component_image(previous)
    assert _images(tmp_path) == {DEFAULT_COMPONENT_IMAGE}


def test_set_component_image_applies_to_components_imported_afterwards() -> None:
    code = f"""
from vertex_retrain.components.image import set_component_image
set_component_image({IMAGE!r})
from vertex_retrain.components import train_custom_job
print(train_custom_job.component_spec.implementation.container.image)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == IMAGE


@pytest.mark.parametrize("bad", ["", "my image:1"])
def test_set_component_image_refuses_what_names_no_image_and_changes_nothing(bad: str) -> None:
    with pytest.raises(ValueError, match="must be a container image URI"):
        set_component_image(bad)
    assert components.stop_run.component_spec.implementation.container.image == (
        DEFAULT_COMPONENT_IMAGE
    )


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("build_container", {"destination": "gs://b/p"}),
        ("source_digest", {}),
    ],
)
def test_build_components_need_the_kind_they_build(name: str, arguments: dict) -> None:
    component = getattr(components, name)
    with pytest.raises(TypeError, match="missing 1 required argument: kind"):

        @dsl.pipeline(name="no-kind")
        def no_kind() -> None:
            component(backend="local", source_uri="gs://b/src", **arguments)
