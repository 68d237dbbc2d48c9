"""The request key that makes a re-run find what its first attempt made.

A pipeline task can run twice (a retry, a restarted launcher). Both backends store the key
with what they create (a local registry column; a hashed Vertex label), and look for it
before creating anything, so the second attempt returns the first attempt's result.
"""

from __future__ import annotations


def registration_key(
    *, pipeline_run: str, role_alias: str, display_name: str, artifact_uri: str
) -> str:
    """The key a model version is registered under.

    With a pipeline run, the key is the run plus the alias the decision gave
    (``run:champion``): a re-run of the same task finds its version, and the same run never
    registers one version per decision. Without one (a call outside a pipeline), the key is
    the model and the artifact, so registering the same model directory twice gives one
    version.

    Args:
        pipeline_run: The pipeline run's name, or ``""``.
        role_alias: The alias the version takes (champion or challenger).
        display_name: The registry model's display name.
        artifact_uri: The model directory.

    Returns:
        A non-empty key.
    """
    if pipeline_run:
        return f"{pipeline_run}:{role_alias}"
    return f"{display_name}:{artifact_uri}"


def task_key(pipeline_run: str, pipeline_task: str) -> str:
    """The key of one pipeline task's job (``run-task``), or ``""`` outside a pipeline.

    A job launcher that finds a live job carrying this key adopts it instead of starting a
    second one.
    """
    return f"{pipeline_run}-{pipeline_task}" if pipeline_run else ""
