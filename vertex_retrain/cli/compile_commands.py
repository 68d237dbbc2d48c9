"""``vertex-retrain compile`` and ``estimate``: YAML to dist/, steps, parameters, cost."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from vertex_retrain.invocation import command
from vertex_retrain.pipelines import catalog
from vertex_retrain.rules.numbers import whole_numbers


def _format_default(value: Any) -> str:
    text = str(whole_numbers(value))  # a dict parameter's 32 is stored as 32.0: shown as 32
    return text if len(text) <= 48 else text[:45] + "..."


def cli_compile(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Compiles the named pipelines (default: the library's templates and every component),
    checks each one's jobs with its defaults, and prints steps, parameters and cost."""
    out = out or sys.stdout  # read when called: a default would keep the stream of import time
    from vertex_retrain.cli.compiling import (
        compile_all,
        default_arguments,
        describe_pipeline,
        library_templates,
    )
    from vertex_retrain.cli.costing import NOT_INCLUDED, estimate_run, price_location
    from vertex_retrain.cli.params import ParameterError
    from vertex_retrain.cli.pipeline_source import resolve_pipeline
    from vertex_retrain.cli.task_names import display_names
    from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
    from vertex_retrain.specs import JobSpecError
    from vertex_retrain.specs.cost import format_money

    out_dir = Path(args.out)
    references = list(getattr(args, "pipelines", None) or [])
    try:
        sources = [resolve_pipeline(r) for r in references] if references else library_templates()
        written = compile_all(
            out_dir, component_image=args.component_image, pipelines=sources if references else None
        )
    except ParameterError as error:  # defaults --param would refuse: one line each
        for line in error.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    failures = 0
    for index, source in enumerate(sources):
        spec = written[source.name].spec
        description = describe_pipeline(spec)
        # The names a run shows (its progress, the failure line, preflight), not KFP's keys.
        shown = display_names(spec)
        if index:
            print(file=out)
        print(f"{source.name}  ->  {written[source.name].path}", file=out)
        print(f"  steps: {' -> '.join(shown.get(s, s) for s in description.steps)}", file=out)
        print("  parameters:", file=out)
        width = max((len(p.name) for p in description.parameters), default=0)
        for parameter in description.parameters:
            default = "(required)" if parameter.default is None else parameter.default
            print(
                f"    {parameter.name:<{width}}  {parameter.type:<14} {_format_default(default)}",
                file=out,
            )
        defaults = default_arguments(spec)
        try:
            estimate = estimate_run(spec, defaults)
        except JobSpecError as error:
            failures += 1
            print(f"  INVALID default training job:\n{error}", file=out)
            continue
        if not estimate.steps:
            print("  no training or tuning job to price", file=out)
            continue
        currency = estimate.steps[0].currency
        # Which region's prices: a pipeline that names none is priced in the price book's
        # default, which `estimate --location` (another figure) would otherwise contradict.
        region, origin = price_location(defaults)
        print(
            f"  one run on Vertex with these defaults: {estimate.gpu_hours:.1f} GPU-hours, "
            f"on-demand {format_money(estimate.on_demand_cost, currency)}, "
            f"Spot {format_money(estimate.spot_cost, currency)}, priced in {region} ({origin})",
            file=out,
        )
    if not references:
        components = [n for n in catalog.COMPONENTS if n in written]
        print(f"\ncomponents -> {out_dir / 'components'}: {', '.join(components)}", file=out)
    if not args.component_image:
        # Said here, not only by preflight: these files may go to another repository.
        print(
            f"component image: the placeholder {DEFAULT_COMPONENT_IMAGE} (runs locally; "
            f"for Vertex pass --component-image, see `{command('build-image --help')}`)",
            file=out,
        )
    print(
        f"(cost: training jobs only; {NOT_INCLUDED}; `{command('estimate PIPELINE')}` explains)",
        file=out,
    )
    return 1 if failures else 0


def cli_estimate(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Prints one pipeline's cost breakdown per step, on-demand against Spot.

    The jobs are those the compiled pipeline's tasks would submit with its defaults
    (``root.inputDefinitions``) and the ``--param`` overrides on top: exactly what
    ``vertex-retrain run`` would submit.
    """
    out = out or sys.stdout
    from vertex_retrain.cli.compiling import default_arguments
    from vertex_retrain.cli.costing import (
        NOT_INCLUDED,
        estimate_kinds,
        estimate_run,
        price_location,
        training_hours,
        warehouse_budget,
    )
    from vertex_retrain.cli.param_defaults import check_defaults
    from vertex_retrain.cli.params import ParameterError, parameter_definitions, parse_overrides
    from vertex_retrain.cli.pipeline_source import PipelineReferenceError, resolve_pipeline
    from vertex_retrain.specs import JobSpecError
    from vertex_retrain.specs.prices import load_prices

    try:
        source = resolve_pipeline(args.name)
        spec = source.spec()
        overrides = parse_overrides(args.param, parameter_definitions(spec))
        check_defaults(spec, given=overrides)
        arguments = {**default_arguments(spec), **overrides}
        hours = training_hours(arguments, args.training_hours)
        location, origin = price_location(arguments, getattr(args, "location", None))
        known = load_prices().locations()
        if location not in known:
            raise ParameterError(
                [
                    f"no prices recorded for location {location!r} ({origin}); known: "
                    f"{', '.join(known)}; pass --location with one of them"
                ]
            )
        estimate = estimate_run(spec, arguments, hours=hours, location=location)
        currency = estimate.steps[0].currency if estimate.steps else ""
        kinds = estimate_kinds(spec, arguments, hours=hours, location=location, currency=currency)
    except ParameterError as error:
        for line in error.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except (PipelineReferenceError, JobSpecError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    warehouse = warehouse_budget(arguments)
    if getattr(args, "json", False):
        document = {
            "pipeline": source.name,
            "location": location,
            "location_origin": origin,
            "assumed_training_hours": hours,
            **estimate.to_dict(),
            "not_included": NOT_INCLUDED,
        }
        if kinds is not None:
            document["week_kinds"] = kinds.to_dict()
        if warehouse is not None:
            document["warehouse"] = warehouse
        print(json.dumps(document, indent=2, sort_keys=True), file=out)
        return 0
    print(f"prices: {location} ({origin})", file=out)
    if warehouse is not None:
        from vertex_retrain.specs.bigquery_cost import warehouse_line

        print(warehouse_line(warehouse), file=out)
    if not estimate.steps:
        print(f"{source.name} submits no training or tuning job: nothing to price", file=out)
        return 0
    _print_step_table(estimate, out, wide=bool(getattr(args, "wide", False)))
    print(estimate.describe(), file=out)
    print(hours_assumption(hours, [step.gpus for step in estimate.steps]), file=out)
    if kinds is not None:
        _print_week_kinds(kinds, out)
    print(NOT_INCLUDED, file=out)
    return 0


def hours_assumption(hours: float, gpus: list[int]) -> str:
    """The estimate's assumption line, worded for the machines the jobs hold.

    Args:
        hours: Expected run time of one training job.
        gpus: GPUs each priced job holds (0 for a CPU-only job).

    Returns:
        One line; it names a GPU only when a job holds one.
    """
    origin = "(--training-hours, else the pipeline's expected_training_hours)"
    if not any(gpus):
        return f"assumption: one training job takes {hours:g} h on its machine (no GPU) {origin}"
    cpu_too = " (a job without a GPU: on its machine)" if not all(gpus) else ""
    return (
        f"assumption: one training job takes {hours:g} h on one GPU{cpu_too} {origin}; "
        "multi-GPU jobs scale by the stated efficiency"
    )


def _print_week_kinds(kinds: Any, out: TextIO) -> None:
    """Each kind of week and a typical month (``vertex_retrain.cli.week_costs``)."""
    from vertex_retrain.cli.week_costs import WEEKS_PER_MONTH
    from vertex_retrain.specs.cost import format_money

    # A month without warm weeks (warm starts off, or a trainer that declares none) runs no
    # warm or refused week, and its month is the month of full retrains: those lines would
    # price weeks that never happen (``--json`` keeps every kind).
    warm = kinds.full_weeks_per_month < round(WEEKS_PER_MONTH, 3)
    shown = (kinds.full, kinds.warm, kinds.refused, kinds.month, kinds.all_full_month)
    print("by kind of week (training jobs only):", file=out)
    for week in shown if warm else (kinds.full, kinds.month):
        print(
            f"  {week.kind}: {week.hours:.2f} h of training, on-demand "
            f"{format_money(week.on_demand, kinds.currency)}, "
            f"Spot {format_money(week.spot, kinds.currency)}",
            file=out,
        )
    # Hours of a warm start matter only to a month that has warm weeks.
    print(
        f"  month: {kinds.full_weeks_per_month:g} full retrain(s) in "
        f"{WEEKS_PER_MONTH:.2f} weeks; {kinds.assumption}"
        + (" (expected_warm_training_hours for a warm start)" if warm else ""),
        file=out,
    )


def _print_step_table(estimate: Any, out: TextIO, *, wide: bool) -> None:
    """The run's cost per step as a table; the details and their sources follow it."""
    from vertex_retrain.cli.console import Column, render_table
    from vertex_retrain.specs.cost import format_money

    currency = estimate.steps[0].currency if estimate.steps else ""
    records = [
        {
            "step": step.label,
            "gpus": step.gpus,
            "wall_hours": f"{step.wall_hours:.2f}",
            "gpu_hours": f"{step.gpu_hours:.2f}",
            "on_demand": format_money(step.on_demand_cost, currency),
            "spot": format_money(step.spot_cost, currency),
        }
        for step in estimate.steps
    ]
    records.append(
        {
            "step": "total",
            "gpus": "",
            "wall_hours": f"{estimate.wall_hours:.2f}",
            "gpu_hours": f"{estimate.gpu_hours:.2f}",
            "on_demand": format_money(estimate.on_demand_cost, currency),
            "spot": format_money(estimate.spot_cost, currency),
        }
    )
    columns = [
        Column("step", "STEP", max_width=24),
        Column("gpus", "GPUS"),
        Column("wall_hours", "WALL H"),
        Column("gpu_hours", "GPU-H"),
        Column("on_demand", "ON-DEMAND"),
        Column("spot", "SPOT"),
    ]
    render_table(out, columns, records, wide=wide)
