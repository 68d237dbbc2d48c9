"""``vertex-retrain upload``: compiled templates, or pipelines compiled on the way, to a registry.

The registries and the upload itself are :mod:`vertex_retrain.cli.template_upload`; this is the
command: which files, which registry, the offline preflight before anything is sent to
Artifact Registry, and the report.
"""

from __future__ import annotations

import argparse
import glob
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from vertex_retrain.cli.params import load_pipeline_spec
from vertex_retrain.cli.template_ref import TemplateRefError, registry_host
from vertex_retrain.cli.template_upload import (
    DEFAULT_TEMPLATES,
    LocalDirectoryRegistry,
    TemplateRegistry,
    UploadError,
    default_tags,
    read_template,
    upload_templates,
)

__all__ = ["cli_upload", "template_files"]


def template_files(
    references: Sequence[str], scratch: Path, component_image: str | None = None
) -> list[Path]:
    """The files to upload: a compiled file as it is, any other pipeline compiled into
    ``scratch`` (see :func:`vertex_retrain.cli.pipeline_source.resolve_pipeline`).

    Args:
        references: Compiled files or pipeline references.
        scratch: Where pipelines compiled here are written (``NAME.yaml``).
        component_image: The image our components run in; a compiled file given with it is
            written again with its executors' images replaced.

    Raises:
        UploadError: A reference that names no pipeline.
    """
    from vertex_retrain.cli.compiling import write_spec
    from vertex_retrain.cli.pipeline_source import PipelineReferenceError, resolve_pipeline

    files = []
    for reference in references:
        if Path(reference).is_file() and not component_image:
            files.append(Path(reference))  # uploaded byte for byte
            continue
        try:
            source = resolve_pipeline(reference)
        except PipelineReferenceError as error:
            raise UploadError(str(error)) from None
        path = scratch / f"{source.name}.yaml"
        write_spec(source.spec(component_image), path)
        files.append(path)
    return files


def cli_upload(
    args: argparse.Namespace,
    *,
    client_factory: Callable[[str], TemplateRegistry] | None = None,
) -> int:
    """``upload``: uploads templates and prints each version digest.

    Args:
        args: Parsed arguments (files: compiled files or pipeline references, project,
            location, repository, registry_dir, tag, component_image).
        client_factory: ``host -> registry`` for Artifact Registry; default
            ``kfp.registry.RegistryClient`` (tests pass a fake).

    Returns:
        0 on success, 2 on invalid input (message on stderr, nothing uploaded).
    """
    with tempfile.TemporaryDirectory() as scratch:
        try:
            files = template_files(
                list(args.files), Path(scratch), getattr(args, "component_image", None)
            ) or [Path(name) for name in sorted(glob.glob(DEFAULT_TEMPLATES))]
        except UploadError as error:
            print(f"upload: {error}", file=sys.stderr)
            return 2
        return _upload(args, files, client_factory)


def _upload(
    args: argparse.Namespace,
    files: Sequence[Path],
    client_factory: Callable[[str], TemplateRegistry] | None,
) -> int:
    try:
        tags = default_tags(args.tag or [])
        wrong = _default_problems(files)
        if wrong:  # every later run without --param would use them: refused, nothing sent
            for line in wrong:
                print(f"upload: {line}", file=sys.stderr)
            return 2
        registry: TemplateRegistry
        if args.registry_dir:
            if args.project or args.repository:
                raise UploadError("give either --registry-dir or --project/--repository")
            local = LocalDirectoryRegistry(args.registry_dir)
            registry = local
            results = upload_templates(files, registry, tags, lambda n, v: str(local.path_of(n, v)))
        else:
            missing = [
                flag
                for flag, value in (
                    ("--project", args.project),
                    ("--location", args.location),
                    ("--repository", args.repository),
                )
                if not value
            ]
            if missing:
                raise UploadError(
                    f"missing {', '.join(missing)}: Artifact Registry needs --project, "
                    "--location and --repository (or use --registry-dir DIR)"
                )
            host = registry_host(args.project, args.location, args.repository)
            refused = _preflight(files, args.location)
            if refused is not None:
                return refused
            if client_factory is None:
                from kfp.registry import RegistryClient

                client_factory = RegistryClient
            registry = client_factory(host)
            results = upload_templates(files, registry, tags, lambda n, v: f"{host}/{n}/{v}")
    except (UploadError, TemplateRefError) as error:
        print(f"upload: {error}", file=sys.stderr)
        return 2
    for result in results:
        print(f"{result.pipeline_name}  {result.version}  tags: {', '.join(result.tags)}")
        print(f"  {result.location}")
    return 0


def _default_problems(files: Sequence[Path]) -> list[str]:
    """The templates' defaults that ``--param`` would refuse, one line each
    (:mod:`vertex_retrain.cli.param_defaults`)."""
    from vertex_retrain.cli.param_defaults import default_problems
    from vertex_retrain.cli.params import TemplateError

    problems = []
    for path in files:
        _name, content = read_template(path)
        try:
            spec = load_pipeline_spec(content, source=str(path))
            problems += default_problems(spec, override=None)
        except TemplateError as error:
            raise UploadError(f"{path}: {error}") from None
    return problems


def _preflight(files: Sequence[str | Path], location: str) -> int | None:
    """The offline preflight of each template before anything is sent (the ``preflight``
    command): 2, with one line per problem, when a template would fail on Vertex."""
    from vertex_retrain.cli.compiling import default_arguments
    from vertex_retrain.cli.preflight import refusal
    from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems

    problems = []
    for path in files:
        _name, content = read_template(path)
        spec = load_pipeline_spec(content, source=str(path))
        problems += pipeline_problems(spec, default_arguments(spec), Settings(location=location))
    return refusal("upload", problems)
