"""``vertex-retrain validate``: lint hand-written CustomJob / HyperparameterTuningJob files."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from vertex_retrain.cli.console import printable
from vertex_retrain.specs.lint_file import lint_file
from vertex_retrain.specs.problems import errors_of, warnings_of


def run_validate(files: list[str], as_json: bool, out: TextIO) -> int:
    """Lints ``files`` and writes the report to ``out``; returns 1 on any error, else 0."""
    report: list[dict[str, Any]] = []
    failed = False
    for name in files:
        problems = lint_file(name)
        failed = failed or bool(errors_of(problems))
        if as_json:
            report += [{**p.to_dict(), "file": name} for p in problems]
            continue
        for problem in problems:
            # A file-level problem's message names the file, which starts the line already.
            line = f"{name}: {problem.describe(show_field=problem.code != 'file')}"
            out.write(printable(line) + "\n")  # names and messages are data: no controls
        n_err, n_warn = len(errors_of(problems)), len(warnings_of(problems))
        verdict = "INVALID" if n_err else "OK"
        out.write(printable(f"{name}: {verdict} ({n_err} error(s), {n_warn} warning(s))") + "\n")
    if as_json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 1 if failed else 0


def cli_validate(args: argparse.Namespace) -> int:
    """Entry point of ``vertex-retrain validate`` (``args.files``, ``args.json``)."""
    return run_validate(list(args.files), bool(getattr(args, "json", False)), sys.stdout)
