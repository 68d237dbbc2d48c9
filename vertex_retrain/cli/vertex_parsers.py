"""Arguments of the commands that prepare or send work to Vertex: ``preflight``,
``build-image``, ``upload`` and ``schedule``.

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


def add_upload(subparsers: argparse._SubParsersAction) -> None:
    """``upload [PIPELINE...]``."""
    parser = subparsers.add_parser(
        "upload",
        help="upload compiled pipeline templates to Artifact Registry or a local directory",
        description=(
            "Upload compiled templates, tagged v<package version> and with the git revision "
            "(short sha, '-dirty' for uncommitted changes, 'nogit' without git), to an "
            "Artifact Registry KFP repository or to a local directory registry. Prints each "
            "version digest and the URI to pin in `schedule --template-version`."
        ),
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="PIPELINE",
        help=(
            "compiled pipeline files, or pipelines to compile first (a template name, "
            "MODULE:ATTR, path/to/file.py:ATTR); default: dist/pipelines/*.yaml"
        ),
    )
    parser.add_argument(
        "--component-image",
        default=argparse.SUPPRESS,
        metavar="URI",
        help="component image of the pipelines compiled here (as compile --component-image)",
    )
    parser.add_argument("--project", help="Google Cloud project of the repository")
    parser.add_argument("--location", help="region of the repository, e.g. asia-east1")
    parser.add_argument("--repository", help="Artifact Registry repository (format KFP)")
    parser.add_argument(
        "--registry-dir", metavar="DIR", help="upload to a local directory registry instead"
    )
    parser.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="extra tag (repeatable)"
    )


def add_schedule(subparsers: argparse._SubParsersAction) -> None:
    """``schedule --schedules FILE_OR_REF``."""
    parser = subparsers.add_parser(
        "schedule",
        help="reconcile the schedules your repository declares with Vertex AI",
        description=(
            "Create, update, pause or resume the Vertex AI pipeline schedules declared in "
            "--schedules, matched by display name, pinned to an uploaded template version. "
            "--dry-run changes nothing and needs no other flag nor credentials: it prints the "
            "declared schedules, their next five run times and the template each pins, and, "
            "given every flag and credentials, the diff against Vertex."
        ),
    )
    parser.add_argument(
        "--schedules",
        metavar="FILE_OR_REF",
        help=(
            "the schedules: a YAML file with a list of declarations (display_name, "
            "pipeline_name, pipeline, cron, time_zone, parameter_values, "
            "max_concurrent_run_count, paused), or MODULE:ATTR / path/to/file.py:ATTR naming "
            "a tuple of vertex_retrain.schedules.ScheduleDeclaration"
        ),
    )
    parser.add_argument("--project", help="Google Cloud project")
    parser.add_argument("--location", help="Vertex AI region, e.g. asia-east1")
    parser.add_argument("--service-account", help="runtime service account of the scheduled runs")
    parser.add_argument("--pipeline-root", metavar="GS_URI", help="gs:// root for run artifacts")
    parser.add_argument(
        "--template-version",
        action="append",
        default=[],
        metavar="URI_OR_DIGEST",
        help=(
            "pinned template version: the URI printed by `upload` "
            "(https://LOCATION-kfp.pkg.dev/PROJECT/REPO/PIPELINE/sha256:...) or a digest "
            "with --repository; repeat once per scheduled pipeline"
        ),
    )
    parser.add_argument("--repository", help="Artifact Registry repository of a bare digest")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the plan and next runs; change nothing"
    )
