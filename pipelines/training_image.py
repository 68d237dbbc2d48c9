"""The image both templates' jobs run: a custom container built from the team's Dockerfile.

The default training code is a container image (``training_code="container"``): the source's
Dockerfile, FROM a maintained base the team chooses, built into ``image_destination`` and run by
digest (``IMAGE@sha256:DIGEST``) as ``containerSpec`` of every training, tuning and evaluation
job. No prebuilt-image lifecycle ends it (every prebuilt PyTorch training image in
``specs/containers.yaml`` is past its end of availability). ``training_code="python_package"``
keeps Vertex's other path: the package runs on ``executor_image_uri``, a prebuilt training
image, which preflight refuses once Google no longer serves it.

Called while a pipeline body is being built, so its tasks join the calling pipeline, exactly
as if written there.
"""

from typing import Any

from kfp import dsl

from vertex_retrain.components.build_container import build_container
from vertex_retrain.components.no_image import no_image
from vertex_retrain.components.source_digest import source_digest
from vertex_retrain.specs.defaults import CONTAINER

from .branches import name_branches


def training_image(
    *,
    backend: Any,
    training_code: Any,
    source_uri: Any,
    image_destination: Any,
    dockerfile: Any,
    staging_uri: Any,
    project: Any,
    location: Any,
) -> Any:
    """Adds the image build (or, for the package path, no image); returns the image URI.

    Args:
        backend: The pipeline's ``backend`` parameter.
        training_code: ``"container"`` or ``"python_package"``.
        source_uri: The training code's folder, holding ``dockerfile``.
        image_destination: The Artifact Registry image, without tag or digest.
        dockerfile: The Dockerfile, relative to ``source_uri``.
        staging_uri: ``gs://`` folder for the Cloud Build context (Vertex).
        project: Google Cloud project.
        location: Google Cloud region.

    Returns:
        ``IMAGE@sha256:DIGEST`` for containers, ``""`` for the package path: the
        ``image_uri`` input of the job components.
    """
    with dsl.If(training_code == CONTAINER, name="container-image"):
        # Never cached: the Dockerfile and code, read afresh; the build is keyed on the digest.
        digest = source_digest(
            backend=backend, source_uri=source_uri, kind="container", dockerfile=dockerfile
        ).set_display_name("image-digest")
        digest.set_caching_options(False)
        image = build_container(
            backend=backend,
            source_uri=source_uri,
            destination=image_destination,
            kind="container",
            dockerfile=dockerfile,
            staging_uri=staging_uri,
            source_digest=digest.output,
            project=project,
            location=location,
        ).set_display_name("build-image")
    with dsl.Else(name="python-package") as package_path_group:
        # The package path's jobs run the prebuilt executor image: no image of the source's.
        package_path = no_image().set_display_name("prebuilt-executor-image")
        package_path.set_caching_options(False)  # a constant: nothing to save
    name_branches(package_path_group, "container-or-package")
    return dsl.OneOf(image.outputs["reference"], package_path.output)
