"""Options that several commands share, declared once so their spelling and defaults agree.

Standard library only, like :mod:`vertex_retrain.cli.main`, so ``--help`` stays cheap.
"""

from __future__ import annotations

import argparse

PIPELINE_HELP = (
    "A PIPELINE is a library template (weekly-retraining, train-only), a compiled pipeline "
    "file (.yaml, .yml, .json), or a @dsl.pipeline in your code: MODULE:ATTR or "
    "path/to/file.py:ATTR."
)
"""How every command that takes a pipeline says what it takes."""


def add_pipeline_argument(parser: argparse.ArgumentParser) -> None:
    """The one ``PIPELINE`` positional argument of ``run`` and ``estimate``."""
    parser.add_argument(
        "name",
        metavar="PIPELINE",
        help="template name, compiled file, MODULE:ATTR or path/to/file.py:ATTR",
    )


def add_param_option(parser: argparse.ArgumentParser) -> None:
    """``--param NAME=VALUE`` (repeatable): a pipeline parameter override."""
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=(
            "set a pipeline parameter (repeatable); a LIST or STRUCT value may be @FILE, "
            "a JSON or YAML file"
        ),
    )


def add_submission_options(
    parser: argparse.ArgumentParser,
    *,
    project_help: str,
    location_help: str,
    service_account_help: str,
) -> None:
    """``--project``, ``--location``, ``--pipeline-root`` and ``--service-account`` of a
    Vertex AI Pipelines submission.

    Args:
        parser: The command's parser.
        project_help: Help of ``--project`` (what the command uses it for).
        location_help: Help of ``--location``.
        service_account_help: Help of ``--service-account``.
    """
    parser.add_argument("--project", help=project_help)
    parser.add_argument("--location", help=location_help)
    parser.add_argument("--pipeline-root", metavar="GS_URI", help="gs:// root for run artifacts")
    parser.add_argument("--service-account", help=service_account_help)
