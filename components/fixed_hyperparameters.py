"""fixed_hyperparameters: pass hyperparameters through, for the branch that skips tuning."""

from kfp import dsl

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def fixed_hyperparameters(values: dict) -> dict:
    """Returns ``values`` unchanged.

    A pipeline that tunes only sometimes needs one training task fed by either branch:
    ``dsl.OneOf(hp_tune(...).outputs["best_parameters"], fixed_hyperparameters(...).output)``.

    Args:
        values: The hyperparameters to use when not tuning.

    Returns:
        The same values.
    """
    return dict(values)
