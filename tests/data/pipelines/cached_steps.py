"""A small pipeline for the local task cache: each task appends a line to a tally file.

No `from __future__ import annotations` here: KFP reads the signature's annotations as
objects. The tally file (a parameter) lets a test count how often each task really ran.
"""

from kfp import dsl
from kfp.dsl import Dataset, Input, Output

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def make_rows(tally: str, rows: int, dataset: Output[Dataset]) -> None:
    """Writes ``rows`` lines to ``dataset``."""
    with open(tally, "a", encoding="utf-8") as handle:
        handle.write("make-rows\n")
    with open(dataset.path, "w", encoding="utf-8") as handle:
        handle.write("".join(f"row {i}\n" for i in range(rows)))
    dataset.metadata["rows"] = rows


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def count_rows(tally: str, dataset: Input[Dataset]) -> int:
    """The number of lines in ``dataset``."""
    with open(tally, "a", encoding="utf-8") as handle:
        handle.write("count-rows\n")
    with open(dataset.path, encoding="utf-8") as handle:
        return len(handle.readlines())


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def stamp(tally: str, run: str) -> str:
    """Takes the run's name: Vertex never serves such a task from another run."""
    with open(tally, "a", encoding="utf-8") as handle:
        handle.write("stamp\n")
    return run


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def uncached(tally: str, rows: int) -> int:
    """Runs every time: the pipeline turns its caching off."""
    with open(tally, "a", encoding="utf-8") as handle:
        handle.write("uncached\n")
    return rows


@dsl.pipeline(name="cached-steps")
def cached_steps(tally: str, rows: int = 3) -> None:
    """make-rows -> count-rows; stamp (run name); uncached (caching off)."""
    made = make_rows(tally=tally, rows=rows)
    count_rows(tally=tally, dataset=made.outputs["dataset"])
    stamp(tally=tally, run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER)
    uncached(tally=tally, rows=rows).set_caching_options(False)
