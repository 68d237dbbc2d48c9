"""How a value is written on a training program's command line."""

from __future__ import annotations

from typing import Any

from vertex_retrain.rules.numbers import whole_numbers


def format_flag_value(value: Any) -> str:
    """Renders a flag value the way argparse expects it.

    KFP hands integer pipeline parameters to components as floats (``5.0``), and a tuning
    study's discrete values are doubles; an integral float is written as an integer so
    ``type=int`` flags accept it, and ``type=float`` flags read it back unchanged. Every
    flag either backend writes (a job's args, its hyperparameters, each tuning trial's
    parameters) goes through here.

    Args:
        value: The value.

    Returns:
        ``"true"``/``"false"`` for booleans, ``"16"`` for ``16.0``, else ``str(value)``.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(whole_numbers(value))


def parameter_flags(parameters: dict[str, Any]) -> list[str]:
    """``--name=value`` for each parameter, in order (a tuning trial's extra arguments)."""
    return [f"--{name}={format_flag_value(value)}" for name, value in parameters.items()]
