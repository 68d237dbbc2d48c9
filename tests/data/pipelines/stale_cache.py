"""Pipelines the cache-key check must refuse: a cached task that ignores the run's week.

No `from __future__ import annotations` here: KFP reads the signature's annotations as
objects.
"""

from kfp import dsl

from vertex_retrain.components.build_container import build_container
from vertex_retrain.components.data_window import data_window
from vertex_retrain.components.fixed_hyperparameters import fixed_hyperparameters
from vertex_retrain.components.prepare_dataset import prepare_dataset
from vertex_retrain.components.source_digest import source_digest


def _week() -> None:
    """The run's week (it makes these weekly pipelines, which the check applies to)."""
    window = data_window(as_of="", created_time=dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER)
    window.set_caching_options(False)


@dsl.pipeline(name="stale-dataset")
def stale_dataset(data_uri: str = "gs://b/t", as_of: str = "") -> None:
    """prepare_dataset takes the as_of parameter itself: "" every week, so last week's split."""
    _week()
    prepare_dataset(backend="local", data_uri=data_uri, dataset_declaration={}, as_of=as_of)


@dsl.pipeline(name="stale-build")
def stale_build(source_uri: str = "gs://b/src") -> None:
    """The digest is read, but the build is not given it; and a cached digest is no key."""
    _week()
    digest = source_digest(backend="local", source_uri=source_uri, kind="python_package")
    build_container(
        backend="local", source_uri=source_uri, destination="gs://b/p", kind="python_package"
    )
    build_container(
        backend="local",
        source_uri=source_uri,
        destination="gs://b/q",
        kind="python_package",
        source_digest=digest.output,
    )


@dsl.pipeline(name="keyed")
def keyed(data_uri: str = "gs://b/t", source_uri: str = "gs://b/src") -> None:
    """Every cached task is keyed on the week or the digest; a pass-through opts out."""
    window = data_window(as_of="", created_time=dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER)
    window.set_caching_options(False)
    prepare_dataset(
        backend="local", data_uri=data_uri, dataset_declaration={}, as_of=window.outputs["as_of"]
    )
    digest = source_digest(
        backend="local", source_uri=source_uri, kind="python_package"
    ).set_caching_options(False)
    build_container(
        backend="local",
        source_uri=source_uri,
        destination="gs://b/p",
        kind="python_package",
        source_digest=digest.output,
    )
    fixed_hyperparameters(values={"lr": 0.1}).set_caching_options(False)


@dsl.pipeline(name="half-keyed-oneof")
def half_keyed_oneof(tune: bool = False, data_uri: str = "gs://b/t") -> None:
    """A task whose only key comes through dsl.OneOf is keyed only if every branch is."""
    window = data_window(as_of="").set_caching_options(False)
    with dsl.If(tune == True):  # noqa: E712 - KFP builds a condition from ==
        keyed_branch = fixed_hyperparameters(values={"week": window.outputs["as_of"]})
    with dsl.Else():
        plain_branch = fixed_hyperparameters(values={"lr": 0.1}).set_caching_options(False)
    fixed_hyperparameters(values=dsl.OneOf(keyed_branch.output, plain_branch.output))


@dsl.pipeline(name="per-run-key")
def per_run_key(data_uri: str = "gs://b/t", run: str = dsl.PIPELINE_JOB_NAME_PLACEHOLDER) -> None:
    """Keyed on the week, but a cached task also takes the run's name (directly, and through
    a nested group's parameter): its key never matches an earlier run."""
    window = data_window(as_of="", created_time=dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER)
    window.set_caching_options(False)
    prepare_dataset(
        backend="local",
        data_uri=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
        dataset_declaration={},
        as_of=window.outputs["as_of"],
    )
    with dsl.If(window.outputs["as_of"] != ""):
        fixed_hyperparameters(values={"week": window.outputs["as_of"], "run": "x"})
