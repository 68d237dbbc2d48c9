"""stop_run: fail the run on purpose, with the reason as the error (e.g. the data gate's)."""

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def stop_run(reason: str) -> None:
    """Raises ``DataGateBreachError(reason)``, so the run fails with the reason as its error.

    Put it in the branch a gate's verdict leads to, e.g.
    ``with dsl.Else(): stop_run(reason=gate.outputs["verdict"])``: the steps in the other
    branch (training) never start, and the run's error is the gate's one-line report.

    Args:
        reason: The one line the run fails with.
    """
    from vertex_retrain.steps.data_gate import DataGateBreachError

    raise DataGateBreachError(reason)
