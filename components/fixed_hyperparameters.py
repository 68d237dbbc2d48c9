"""fixed_hyperparameters: pass hyperparameters through, for the branch that skips tuning."""

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
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
