"""Whether a Python-package pool's executor image exists and what it runs.

The container catalog (:mod:`vertex_retrain.specs.containers`) says which prebuilt training
images Google serves until when. Past an image's end of availability Vertex no longer
promises it: ``preflight``, ``validate`` and a local run refuse it (the templates' default is a
custom container built from the team's Dockerfile, which no prebuilt lifecycle ends); within
:data:`RETIRING_WITHIN` of it, they warn that the date is near. A prebuilt
image the catalog does not list is read by Google's tag convention (``pytorch-gpu.1-13.py38``:
torch 1.13, Python 3.8), so the package is still checked against its Python
(:mod:`vertex_retrain.specs.package_compat`); its availability stays unknown. No message
recommends an image past its end of availability.
"""

from __future__ import annotations

import datetime as dt

from vertex_retrain.specs.containers import (
    ContainerCatalog,
    PrebuiltImage,
    load_containers,
    parse_image_name,
)
from vertex_retrain.specs.problems import Problem, error, warning

__all__ = [
    "COMPATIBILITY_UNKNOWN",
    "RETIRING_WITHIN",
    "availability_problems",
    "available_training_images",
    "described_image",
    "executor_image_problems",
    "training_image",
]

RETIRING_WITHIN = dt.timedelta(days=90)
"""An image whose end of availability is this close is a warning: plan the move now."""

COMPATIBILITY_UNKNOWN = frozenset({"executor-image-unknown", "package-python-unknown"})
"""Problem codes that leave a package's fit to its image unknown: preflight does not call such
a run "ready to submit"."""

RETIRED_IMAGE = "executor-image-retired"
"""The problem code of an image past its end of availability: an error."""

TAG_SOURCE = "its tag"
"""The source of an image read from Google's tag convention instead of the catalog."""


def training_image(uri: str, catalog: ContainerCatalog) -> PrebuiltImage | None:
    """The catalog's entry of a training image URI, else what the tag of a prebuilt image
    says (framework, version, Python; no dates); None for other images."""
    known = catalog.lookup(uri, "training")
    if known is not None or not catalog.is_prebuilt(uri, "training"):
        return known
    named = parse_image_name(uri)
    if named is None or named.python is None:
        return None
    return PrebuiltImage(
        name=named.name,
        kind="training",
        framework=named.distribution,
        version=named.version,
        python=named.python,
        accelerator=named.accelerator,
        cuda=None,
        end_of_patch=None,
        end_of_availability=None,
        includes={},
        sources=(TAG_SOURCE,),
    )


def described_image(image: PrebuiltImage, catalog: ContainerCatalog) -> str:
    """The image with where its facts come from (the catalog's sources, or its tag)."""
    if image.sources == (TAG_SOURCE,):
        return (
            f"{image.name} (not in {catalog.path.name}; {image.framework} {image.version} and "
            f"Python {image.python} read from its tag)"
        )
    return image.cited(catalog)


def available_training_images(
    catalog: ContainerCatalog, *, framework: str, today: dt.date
) -> list[PrebuiltImage]:
    """Training images of ``framework`` the catalog says are available on ``today``, newest
    first: the only ones a message may recommend."""
    return [
        image
        for image in catalog.training_images(framework=framework)
        if image.end_of_availability is not None and today <= image.end_of_availability
    ]


def executor_image_problems(
    uri: str,
    field: str,
    *,
    catalog: ContainerCatalog | None = None,
    today: dt.date | None = None,
) -> list[Problem]:
    """Checks a pool's ``executorImageUri`` against the container catalog.

    Args:
        uri: The executor image URI.
        field: Field path of ``executorImageUri`` for the problems.
        catalog: The container catalog (default: the shipped one).
        today: The date support dates are compared with (default: today).

    Returns:
        An error when the image is not a prebuilt training image (Vertex runs packages on
        those only) or when it is past its end of availability; a warning when the catalog does
        not know it (what its tag says is checked by :func:`package_problems`), when its end of
        availability is within :data:`RETIRING_WITHIN`, or when it gets no more patches. No
        alternative named is past its end of availability.
    """
    catalog = catalog or load_containers()
    today = today or dt.date.today()
    named = parse_image_name(uri)
    framework = named.distribution if named else "torch"
    available = available_training_images(catalog, framework=framework, today=today)
    newest = [f"{catalog.registries['training'][0]}/{i.name}:latest" for i in available[:2]]
    custom = "a custom container (containerSpec) built from your own Dockerfile (build_container)"
    if not catalog.is_prebuilt(uri, "training"):
        return [
            error(
                field,
                uri,
                "A Python-package pool runs on one of Vertex's prebuilt training images only "
                "(aiplatform_v1 PythonPackageSpec: 'You must use an image from this list'); "
                "a custom image goes in containerSpec.imageUri.",
                [*newest, "containerSpec {imageUri: YOUR_IMAGE} for a custom container"],
                code="executor-image",
            )
        ]
    image = catalog.lookup(uri, "training")
    if image is None:
        inferred = training_image(uri, catalog)
        said = (
            f"its tag says {inferred.framework} {inferred.version} on Python {inferred.python} "
            "(the package is checked against that), but its availability is unknown"
            if inferred is not None
            else "its tag names no Python, so the package's compatibility is unknown"
        )
        return [
            warning(
                field,
                uri,
                f"This prebuilt image is not in the container catalog (retrieved "
                f"{catalog.retrieved}): {said}.",
                [f"add it to {catalog.path.name} with its sources", *newest, custom],
                code="executor-image-unknown",
            )
        ]
    available_problems = availability_problems(uri, field, catalog=catalog, today=today)
    if available_problems:
        return available_problems
    if image.end_of_patch and today > image.end_of_patch:
        return [
            warning(
                field,
                uri,
                f"{image.cited(catalog)} no longer receives patches (since "
                f"{image.end_of_patch}); it is available until {image.end_of_availability}.",
                [custom],
                code="executor-image-unpatched",
            )
        ]
    return []


def availability_problems(
    uri: str,
    field: str,
    *,
    catalog: ContainerCatalog | None = None,
    today: dt.date | None = None,
) -> list[Problem]:
    """Whether Google still serves a prebuilt training image the catalog lists.

    Args:
        uri: The executor image URI.
        field: Its field path, for the problems.
        catalog: The container catalog (default: the shipped one).
        today: The date the end of availability is compared with (default: today).

    Returns:
        An error past the image's end of availability; a warning within
        :data:`RETIRING_WITHIN` of it; nothing for other images (or no date). The alternatives
        named are available that day, or a custom container.
    """
    catalog = catalog or load_containers()
    today = today or dt.date.today()
    image = catalog.lookup(uri, "training")
    if image is None or image.end_of_availability is None:
        return []
    if today <= image.end_of_availability - RETIRING_WITHIN:
        return []
    named = parse_image_name(uri)
    framework = named.distribution if named else "torch"
    available = available_training_images(catalog, framework=framework, today=today)
    newest = [
        f"{catalog.registries['training'][0]}/{i.name}:latest"
        for i in available[:2]
        if i.name != image.name
    ]
    custom = "a custom container (containerSpec) built from your own Dockerfile (build_container)"
    if today > image.end_of_availability:
        return [
            error(
                field,
                uri,
                f"{image.cited(catalog)} is past its end of availability "
                f"({image.end_of_availability}); Vertex no longer promises to serve it.",
                [*newest, custom],
                code=RETIRED_IMAGE,
            )
        ]
    return [
        warning(
            field,
            uri,
            f"{image.cited(catalog)} reaches its end of availability on "
            f"{image.end_of_availability} ({(image.end_of_availability - today).days} "
            "days): move to another image before then.",
            [*newest, custom],
            code="executor-image-retiring",
        )
    ]
