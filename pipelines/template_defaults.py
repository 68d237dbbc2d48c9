"""configure: a template under another name, with a team's own parameter defaults.

The templates (``weekly_retraining``, ``train_only``) leave the team's trainer, data and
metrics without defaults. A team that always runs the same ones configures the template once::

    from vertex_retrain.pipelines import configure, weekly_retraining

    my_weekly = configure(
        weekly_retraining,
        name="demand-weekly",
        data_uri="gs://my-bucket/sales",
        dataset_declaration=load_dataset_declaration("dataset.yaml"),
        ...
    )

The result is an ordinary ``@dsl.pipeline``: it compiles to a template whose parameter
defaults are those values (so a schedule or a run needs to pass nothing), every parameter can
still be overridden per run, and the graph is the template's own.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from kfp import dsl

from .declarations import declaration_parser

__all__ = ["configure"]

_TYPES: dict[Any, tuple[type, ...]] = {
    str: (str,),
    int: (int,),
    float: (int, float),
    bool: (bool,),
    dict: (dict,),
    list: (list,),
}


def _check(name: str, parameter: inspect.Parameter, value: Any) -> None:
    allowed = _TYPES.get(parameter.annotation)
    # bool is an int subclass: True is no integer parameter's value.
    wrong_bool = isinstance(value, bool) and parameter.annotation in (int, float)
    if allowed is not None and (not isinstance(value, allowed) or wrong_bool):
        raise TypeError(
            f"configure: parameter {name!r} takes values of type "
            f"{parameter.annotation.__name__}; got {value!r} ({type(value).__name__})"
        )
    if isinstance(value, float) and not math.isfinite(value):
        # The compiled spec is JSON: KFP's compiler would stop on it, naming no parameter.
        raise ValueError(f"configure: parameter {name!r} takes a finite number; got {value!r}")
    parser = declaration_parser(name)
    if parser is not None:
        parser(value)


def configure(pipeline: Any, *, name: str, description: str | None = None, **defaults: Any) -> Any:
    """Returns ``pipeline`` under ``name`` with ``defaults`` as its parameters' defaults.

    A pipeline under the failure notice (:mod:`.failure_notice`) is configured inside the
    notice: the run gets the defaults, and the e-mail task exists when the configured
    recipients are not empty.

    Args:
        pipeline: A ``@dsl.pipeline`` (a template of this library, or any other).
        name: The configured pipeline's name (lower case, digits and hyphens, as KFP wants).
        description: Its description; the template's by default.
        **defaults: Parameter name -> default value. A parameter without a default in the
            template gets one; declarations (``dataset_declaration``,
            ``evaluation_declaration``) are validated now; a number outside its parameter's
            range is refused by each command that would use it, as a ``--param`` of it is
            (``vertex_retrain.cli.param_defaults``).

    Returns:
        A ``@dsl.pipeline`` with the template's graph and the new defaults.

    Raises:
        ValueError: A name that is not a parameter of ``pipeline`` (the message lists them),
            a declaration that is malformed (it names the field), or a number that is not
            finite (NaN, infinity: no pipeline spec holds it).
        TypeError: A default of another type than its parameter.
    """
    from .failure_notice import NOTICE_ATTRIBUTE, with_failure_notice

    notice = getattr(pipeline, NOTICE_ATTRIBUTE, None)
    described = description or pipeline.description
    if notice is None:
        return _configured(pipeline, name=name, description=described, defaults=defaults)
    run = _configured(notice.run, name=f"{name}-run", description=described, defaults=defaults)
    return with_failure_notice(run, name=name, description=described, recipients=notice.recipients)


def _configured(pipeline: Any, *, name: str, description: str, defaults: dict[str, Any]) -> Any:
    """The pipeline itself with new defaults (see :func:`configure`)."""
    function = pipeline.pipeline_func
    signature = inspect.signature(function)
    unknown = sorted(set(defaults) - set(signature.parameters))
    if unknown:
        raise ValueError(
            f"configure: {pipeline.name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are {', '.join(signature.parameters)}"
        )
    parameters = []
    for parameter in signature.parameters.values():
        if parameter.name in defaults:
            _check(parameter.name, parameter, defaults[parameter.name])
            parameter = parameter.replace(default=defaults[parameter.name])
        parameters.append(parameter)
    # Python wants parameters without a default first; KFP reads them by name.
    ordered = [p for p in parameters if p.default is p.empty] + [
        p for p in parameters if p.default is not p.empty
    ]
    original = list(signature.parameters)
    names = [p.name for p in ordered]

    def configured(*channels: Any) -> Any:
        by_name = dict(zip(names, channels, strict=True))
        # KFP calls a pipeline function positionally, in its signature's order.
        return function(*(by_name[n] for n in original))

    configured.__signature__ = signature.replace(parameters=ordered)  # type: ignore[attr-defined]
    configured.__doc__ = function.__doc__
    configured.__name__ = function.__name__
    return dsl.pipeline(name=name, description=description)(configured)
