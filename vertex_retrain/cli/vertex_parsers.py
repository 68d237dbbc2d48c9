"""Arguments of ``preflight`` and ``build-image``, the commands that prepare a Vertex run.

Standard library only, like :mod:`vertex_retrain.cli.main`, so ``--help`` stays cheap.
"""

from __future__ import annotations

import argparse

from vertex_retrain.cli.options import PIPELINE_HELP, add_param_option, add_submission_options


def add_preflight(subparsers: argparse._SubParsersAction) -> None:
    """``preflight [PIPELINE...]``."""
    parser = subparsers.add_parser(
        "preflight",
        help="check pipelines before submitting them to Vertex AI (offline; more with credentials)",
        description=(
            "Run every check that can be done before a submission: the component image is "
            "not the placeholder and its registry serves the region; every CustomJob and "
            "tuning job the pipeline's tasks would submit is valid, its machine and "
            "accelerator are offered in the region and its package installs on its executor "
            "image (container catalog: Python, framework); in a pipeline with a data window, "
            "no cached task can serve another week's output; a service account and a gs:// "
            "pipeline root are set. With --project and --location, and credentials, also that the "
            "images and the service account exist and where the bucket is. Exit 1 on an "
            f"error, 2 on bad input. {PIPELINE_HELP}"
        ),
    )
    parser.add_argument(
        "pipelines",
        nargs="*",
        metavar="PIPELINE",
        help="pipelines to check (default: the library's templates)",
    )
    parser.add_argument(
        "--component-image",
        default=argparse.SUPPRESS,
        metavar="URI",
        help="component image the run would use (as compile --component-image)",
    )
    add_param_option(parser)
    add_submission_options(
        parser,
        project_help="Google Cloud project (a submission's checks)",
        location_help="Vertex AI region, e.g. europe-west4",
        service_account_help="runtime service account",
    )
    parser.add_argument("--json", action="store_true", help="print the problems as JSON")


def add_build_image(subparsers: argparse._SubParsersAction) -> None:
    """``build-image --project P --location L [--repository R]``."""
    parser = subparsers.add_parser(
        "build-image",
        help="build and push the component image with Cloud Build, then print the compile command",
        description=(
            "Build components/Dockerfile with Cloud Build and push it to Artifact Registry "
            "as LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/vertex-retrain, tagged with the "
            "digest of its sources; skipped when an image of the same sources was pushed. "
            "Prints the `compile --component-image ...` command that uses it."
        ),
    )
    parser.add_argument("--project", required=True, help="Google Cloud project")
    parser.add_argument("--location", required=True, help="region of the repository and build")
    parser.add_argument(
        "--repository",
        default="vertex-retrain",
        help="Artifact Registry Docker repository (default vertex-retrain)",
    )
    parser.add_argument(
        "--staging-bucket",
        metavar="GS_URI",
        help="gs:// folder for the build context (default gs://PROJECT-vertex-retrain-staging)",
    )
    parser.add_argument(
        "--force", action="store_true", help="build even when the same sources were built"
    )
