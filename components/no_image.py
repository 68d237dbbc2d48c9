"""no_image: the container image of the Python-package path: none."""

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def no_image() -> str:
    """Returns ``""``: the jobs run the Python package on its executor image.

    A pipeline that builds a container image only sometimes needs one image input fed by
    either branch: ``dsl.OneOf(build_container(kind="container", ...).outputs["reference"],
    no_image().output)``; ``image_uri=""`` makes the job components run ``package_uri``.

    Returns:
        An empty image URI.
    """
    return ""
