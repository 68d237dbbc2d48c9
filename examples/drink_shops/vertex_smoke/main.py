"""``make smoke-vertex``: one real, small run on Vertex AI, and everything it made deleted.

Opt-in and never run by the tests or CI. The plan is :mod:`vertex_smoke.plan` (pure, tested
offline), the apply step :mod:`vertex_smoke.apply` (injected clients); this module builds the
images, compiles the example's weekly pipeline, runs the preflight and ties them together.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
from collections.abc import Sequence
from typing import TextIO

from vertex_smoke.plan import (
    SmokeClients,
    SmokePlan,
    format_plan,
    plan_smoke,
    smallest_cpu_machine,
)

__all__ = [
    "SmokeClients",
    "SmokePlan",
    "format_plan",
    "main",
    "plan_smoke",
    "smallest_cpu_machine",
]


def _images(plan: SmokePlan, out: TextIO) -> tuple[str, str]:
    """The component and serving images: given, or built with Cloud Build (skipped when
    their sources were built before)."""
    import tempfile
    from pathlib import Path

    from vertex_retrain.backends.vertex.cloud_build import build_image_with_cloud_build
    from vertex_retrain.cli.build_image import COMPONENT_DOCKERFILE, REPO_ROOT, stage_context
    from vertex_smoke.plan import EXAMPLE

    host = f"{plan.location}-docker.pkg.dev/{plan.project}/{plan.repository}"
    # Both build with the repository as the context: the component image is the library's,
    # the serving image the example's (its trainer and packages/guarded-asgi, its HTTP server).
    serving_dockerfile = f"{EXAMPLE.relative_to(REPO_ROOT).as_posix()}/trainer/Dockerfile.serve"
    wanted = [
        (plan.component_image, REPO_ROOT, COMPONENT_DOCKERFILE, f"{host}/vertex-retrain"),
        (plan.serving_image, REPO_ROOT, serving_dockerfile, f"{host}/drink-shops-serve"),
    ]
    images = []
    for given, context, dockerfile, image in wanted:
        if given:
            images.append(given)
            continue
        with tempfile.TemporaryDirectory(prefix="vertex-retrain-smoke-image-") as scratch:
            built = build_image_with_cloud_build(
                stage_context(context, Path(scratch), dockerfile),
                project=plan.project,
                location=plan.location,
                image=image,
                staging_uri=f"{plan.prefix}/build",
                dockerfile=dockerfile,
                gpu=False,
            )
        print(f"{'reused' if built.skipped else 'built'} {built.image_uri}", file=out)
        images.append(built.image_uri)
    return images[0], images[1]


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="make smoke-vertex",
        description="One small real run on Vertex AI (train, register, deploy, predict), then "
        "everything it made is deleted. It costs money; nothing runs it automatically.",
    )
    parser.add_argument("--project", required=True)
    parser.add_argument("--location", required=True)
    parser.add_argument("--bucket", required=True, help="bucket for the run's files and root")
    parser.add_argument(
        "--service-account",
        help="pipeline runtime account (default vertex-retrain@PROJECT.iam.gserviceaccount.com)",
    )
    parser.add_argument("--repository", default="vertex-retrain", help="Docker repository")
    parser.add_argument("--component-image", help="an existing component image (skip build)")
    parser.add_argument("--serving-image", help="an existing serving image (skip build)")
    parser.add_argument("--run-id", help="names the run's resources (default: UTC time)")
    parser.add_argument("--plan", action="store_true", help="print the plan; do nothing")
    parser.add_argument(
        "--email",
        action="append",
        default=[],
        help="e-mail this address when the run ends (the run nests under the failure notice)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``make smoke-vertex``: prints the plan, then (without ``--plan``) carries it out.

    Returns:
        0 when the run succeeded and was cleaned up, 1 when a step failed, 2 when the
        preflight refused it.
    """
    out = out or sys.stdout
    args = _arguments(argv)
    run_id = args.run_id or dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    account = args.service_account or f"vertex-retrain@{args.project}.iam.gserviceaccount.com"
    plan = plan_smoke(
        args.project,
        args.location,
        args.bucket,
        service_account=account,
        run_id=run_id,
        repository=args.repository,
        component_image=args.component_image,
        serving_image=args.serving_image,
        notification_emails=tuple(args.email),
    )
    out.write(format_plan(plan))
    if args.plan:
        return 0
    from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
    from vertex_retrain.cli.preflight import refusal
    from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
    from vertex_smoke.apply import apply_smoke, default_clients
    from vertex_smoke.plan import smoke_pipeline

    component_image, serving_image = _images(plan, out)
    pipeline = smoke_pipeline(plan.notification_emails)
    spec = compile_to_dict(pipeline, component_image=component_image)
    parameters = {**plan.parameters, "serving_image_uri": serving_image}
    plan = dataclasses.replace(plan, parameters=parameters)
    settings = Settings(
        project=plan.project,
        location=plan.location,
        pipeline_root=plan.pipeline_root,
        service_account=plan.service_account,
        submission=True,
    )
    problems = pipeline_problems(spec, {**default_arguments(spec), **parameters}, settings)
    refused = refusal("smoke-vertex", problems)
    if refused is not None:
        return refused
    try:
        apply_smoke(plan, default_clients(plan), spec, out)
    except Exception as error:  # one line: the clean-up and the cost were printed already
        print(f"smoke-vertex: failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
