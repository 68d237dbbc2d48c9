"""The layering of docs/architecture.md, enforced on the source (rules: tests/import_rules.py).

A forbidden import fails with the importer, the imported module and the rule it breaks; an
import cycle fails with the modules on it. The checker is also run on synthetic modules, to
prove it flags what it should.
"""

from __future__ import annotations

import pytest

from tests.import_rules import (
    LAYERS,
    Violation,
    import_cycles,
    layering_violations,
    library_sources,
    within,
)

# --- the repository ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sources() -> dict[str, tuple[str, bool]]:
    return library_sources()


def test_architecture_sources_cover_every_layer(sources: dict[str, tuple[str, bool]]) -> None:
    # Guards the checker itself: an empty or mis-rooted scan would pass every rule.
    for package, _ in LAYERS:
        assert any(within(name, package) for name in sources), package
    assert "vertex_retrain.components.train_custom_job" in sources
    assert "vertex_retrain.pipelines.weekly" in sources
    assert "trainer.task" in sources
    assert "demand_forecast.task" in sources


def test_architecture_no_module_breaks_a_layering_rule(
    sources: dict[str, tuple[str, bool]],
) -> None:
    violations = layering_violations(sources)
    assert not violations, "forbidden imports (see docs/architecture.md):\n" + "\n".join(
        str(v) for v in violations
    )


def test_architecture_module_level_import_graph_has_no_cycle(
    sources: dict[str, tuple[str, bool]],
) -> None:
    cycles = import_cycles(sources)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_architecture_import_graph_has_no_cycle_through_lazy_imports_either(
    sources: dict[str, tuple[str, bool]],
) -> None:
    # A function-local import only hides a circle until the function runs; two modules that
    # need each other belong together, or their shared types in a third module. The examples'
    # packages (the trainers) are held to the same rule as the library.
    cycles = import_cycles(sources, lazy=True)
    assert not cycles, "import cycles (counting imports inside functions):\n" + "\n".join(
        " -> ".join(c) for c in cycles
    )


# --- the checker, on synthetic sources ----------------------------------------------------


def _check(modules: dict[str, str]) -> list[Violation]:
    return layering_violations({name: (text, False) for name, text in modules.items()})


def test_architecture_checker_flags_a_lower_layer_importing_a_higher_one() -> None:
    (violation,) = _check(
        {
            "vertex_retrain.backends.local.bad": "from vertex_retrain.steps.train import train\n",
            "vertex_retrain.steps.train": "",
        }
    )
    assert violation.importer == "vertex_retrain.backends.local.bad"
    assert violation.imported == "vertex_retrain.steps.train"
    assert "lower layer never imports a higher one" in violation.rule
    assert "vertex_retrain.backends.local.bad (line 1) imports vertex_retrain.steps.train" in str(
        violation
    )


def test_architecture_checker_flags_forbidden_names_even_inside_functions() -> None:
    source = "def f():\n    import torch\n    from trainer.split import x\n    import tests.fakes\n"
    found = _check({"vertex_retrain.steps.bad": source})
    assert [(v.imported, v.line) for v in found] == [
        ("torch", 2),
        ("trainer.split", 3),
        ("tests.fakes", 4),
    ]
    assert all("nothing in the library imports" in v.rule for v in found)


def test_architecture_checker_flags_bare_component_names_and_backend_crossings() -> None:
    found = _check(
        {
            "vertex_retrain.pipelines.bad": "from components.image import X\n",
            "vertex_retrain.backends.vertex.bad": "from ..local import storage\n",
            "vertex_retrain.backends.local.storage": "",
            "vertex_retrain.specs.bad": "from vertex_retrain.contracts import x\n",
        }
    )
    rules = {v.importer: v.rule for v in found}
    assert "`components`" in rules["vertex_retrain.pipelines.bad"]
    assert (
        "backends.vertex never imports backends.local"
        in rules["vertex_retrain.backends.vertex.bad"]
    )
    assert "specs is the pure core" in rules["vertex_retrain.specs.bad"]


def test_architecture_checker_keeps_steps_on_the_backend_interface() -> None:
    found = _check(
        {
            "vertex_retrain.steps.bad": "def f():\n"
            "    from vertex_retrain.backends.local.storage import atomic_write_json\n",
            "vertex_retrain.backends.local.storage": "",
            "vertex_retrain.steps.good": "from vertex_retrain.backends import backend_for\n"
            "from vertex_retrain.backends.base import Backend\n",
            "vertex_retrain.backends.base": "import vertex_retrain.backends.vertex.client\n",
            "vertex_retrain.backends.vertex.client": "",
            "vertex_retrain.backends": "def backend_for(name):\n"
            "    from vertex_retrain.backends.local.storage import x\n",
        }
    )
    rules = {v.importer: v.rule for v in found}
    assert set(rules) == {"vertex_retrain.steps.bad", "vertex_retrain.backends.base"}
    assert "only through the Backend interface" in rules["vertex_retrain.steps.bad"]
    assert "import neither implementation" in rules["vertex_retrain.backends.base"]


def test_architecture_checker_keeps_light_packages_free_of_third_party_imports() -> None:
    found = _check(
        {
            "vertex_retrain.rules.bad": "import numpy\n",
            "vertex_retrain.specs.ok": "import json\nimport yaml\n"
            "def check():\n    from google.cloud import aiplatform_v1\n",
            "vertex_retrain.contracts.bad": "from kfp import dsl\n",
        }
    )
    assert [(v.importer, v.imported) for v in found] == [
        ("vertex_retrain.contracts.bad", "kfp"),
        ("vertex_retrain.rules.bad", "numpy"),
    ]
    assert "import `numpy` inside the function that needs it" in found[1].rule


def test_architecture_checker_allows_downward_and_relative_sibling_imports() -> None:
    found = _check(
        {
            "vertex_retrain.pipelines.weekly": "from . import defaults\n"
            "from vertex_retrain.components.x import x\n",
            "vertex_retrain.pipelines.defaults": "",
            "vertex_retrain.components.x": "def x():\n    from vertex_retrain.steps import s\n",
            "vertex_retrain.cli.main": "from vertex_retrain.backends.local import storage\n",
        }
    )
    assert found == []


def test_architecture_checker_keeps_the_examples_out_of_the_library_and_back() -> None:
    found = _check(
        {
            "trainer.task": "from vertex_retrain.specs import x\nimport torch\n",
            "vertex_retrain.cli.demo": "def f():\n    from trainer.data import generate\n",
            "demand_forecast.task": "import sklearn\nfrom vertex_retrain import contracts\n",
            "vertex_retrain.steps.x": "def f():\n    import demand_forecast.data\n",
        }
    )
    assert [(v.importer, v.imported) for v in found] == [
        ("demand_forecast.task", "vertex_retrain"),
        ("trainer.task", "vertex_retrain.specs"),
        ("vertex_retrain.cli.demo", "trainer.data"),
        ("vertex_retrain.steps.x", "demand_forecast.data"),
    ]


def test_architecture_cycles_lazy_imports_count_only_when_asked() -> None:
    sources = {
        "vertex_retrain.cli.a": ("from vertex_retrain.cli import b\n", False),
        "vertex_retrain.cli.b": ("import vertex_retrain.cli.c\n", False),
        "vertex_retrain.cli.c": ("from vertex_retrain.cli.a import thing\n", False),
        "vertex_retrain.cli.lazy": ("def f():\n    from vertex_retrain.cli import d\n", False),
        "vertex_retrain.cli.d": ("from vertex_retrain.cli import lazy\n", False),
    }
    circle = ["vertex_retrain.cli.a", "vertex_retrain.cli.b", "vertex_retrain.cli.c"]
    assert import_cycles(sources) == [[*circle, "vertex_retrain.cli.a"]]
    assert import_cycles(sources, lazy=True) == [
        [*circle, "vertex_retrain.cli.a"],
        ["vertex_retrain.cli.d", "vertex_retrain.cli.lazy", "vertex_retrain.cli.d"],
    ]


def test_architecture_checker_keeps_kfp_local_internals_inside_the_adapter() -> None:
    found = _check(
        {
            "vertex_retrain.cli.bad": "from kfp.local import placeholder_utils\n",
            "vertex_retrain.cli.fine": "from kfp import local\n",
            "vertex_retrain.backends.local.kfp_adapter.fine": (
                "from kfp.local.orchestrator import task_executor\n"
            ),
        }
    )
    assert [(v.importer, v.imported) for v in found] == [("vertex_retrain.cli.bad", "kfp.local")]
    assert "kfp_adapter" in found[0].rule
