"""Parsing a Dockerfile for what the builders need, and linting it (both backends).

Findings: a GPU job on a base image without CUDA (warning), no ENTRYPOINT or CMD (warning),
and COPY/ADD of credential-like files into the image (error: the build is refused).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from vertex_retrain.build.context import BuildError, context_files

_CREDENTIAL_NAMES = (
    ".env", ".env.*", "*.env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.pem", "*.p12",
    "*.pfx", "*.key", ".netrc", ".pypirc", ".git-credentials", ".dockercfg", "credentials",
    "credentials.json", "application_default_credentials.json", "*service-account*.json",
    "*service_account*.json", "*-key.json", "*_key.json", "*-sa.json",
)  # fmt: skip
_CUDA_MARKERS = ("cuda", "nvidia", "-gpu", "/gpu", "gpu.")
_MAX_SNIFF_BYTES = 1 << 20


@dataclass(frozen=True)
class LintFinding:
    """One problem found in a Dockerfile."""

    severity: str  # "error" refuses the build; "warning" is reported
    code: str
    line: int
    message: str


@dataclass
class DockerfileInfo:
    """What the final stage of a Dockerfile declares."""

    base_image: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    copies: list[tuple[int, list[str]]] = field(default_factory=list)
    context_copies: list[str] = field(default_factory=list)
    pip_targets: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def installed_context(self) -> tuple[str, ...] | None:
        """The extras with which a ``RUN pip install`` installs the whole build context (as
        ``COPY . /src`` then ``pip install "/src[extra]"``), or None when it does not."""
        for target, extras in self.pip_targets:
            if target in self.context_copies:
                return extras
        return None


# pip options that take a value: the token after them is no install target.
_PIP_VALUE_OPTIONS = frozenset(
    {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
     "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--platform",
     "--python-version", "--implementation", "--abi", "--trusted-host", "--cache-dir"}
)  # fmt: skip
_SHELL_BREAKS = frozenset({"&&", "||", ";", "|"})
_EXTRAS = re.compile(r"^(?P<path>[^\[]+)(?:\[(?P<extras>[^\]]*)\])?$")


def _pip_targets(command: str, workdir: str) -> list[tuple[str, tuple[str, ...]]]:
    """Local paths a shell command's ``pip install`` installs, absolute, with their extras."""
    try:
        tokens = shlex.split(command.replace(";", " ; "))
    except ValueError:
        return []
    found: list[tuple[str, tuple[str, ...]]] = []
    index = 0
    while index < len(tokens):
        word = posixpath.basename(tokens[index])
        if not (word.startswith("pip") and tokens[index + 1 : index + 2] == ["install"]):
            index += 1
            continue
        index += 2
        while index < len(tokens) and tokens[index] not in _SHELL_BREAKS:
            token = tokens[index]
            index += 2 if token in _PIP_VALUE_OPTIONS else 1
            if token.startswith("-"):
                continue
            match = _EXTRAS.match(token)
            if match and match["path"].startswith(("/", ".")):
                extras = tuple(e.strip() for e in (match["extras"] or "").split(",") if e.strip())
                found.append((posixpath.normpath(posixpath.join(workdir, match["path"])), extras))
    return found


def _instructions(text: str) -> list[tuple[int, str, str]]:
    out: list[tuple[int, str, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continuation are dropped by Docker too
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        keyword, _, args = " ".join(pending).strip().partition(" ")
        out.append((start, keyword.upper(), args.strip()))
        pending = []
    return out


def _exec_form(args: str) -> list[str]:
    if args.startswith("["):
        try:
            value = json.loads(args)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    return ["/bin/sh", "-c", args]


def _env_pairs(args: str) -> dict[str, str]:
    tokens = shlex.split(args)
    if tokens and "=" not in tokens[0]:
        return {tokens[0]: " ".join(tokens[1:])}  # legacy `ENV KEY value`
    return dict(token.split("=", 1) for token in tokens if "=" in token)


def parse_dockerfile(text: str) -> DockerfileInfo:
    """Read the final build stage's base, ENTRYPOINT, CMD, WORKDIR, ENV, COPY sources and what
    its ``RUN pip install`` commands install from the context."""
    aliases: dict[str, str | None] = {}
    info = DockerfileInfo()
    for line, keyword, args in _instructions(text):
        if keyword == "FROM":
            words = [w for w in args.split() if not w.startswith("--")]
            base = words[0] if words else None
            parent = aliases.get(base.lower()) if base and base.lower() in aliases else base
            info = DockerfileInfo(base_image=parent)
            if len(words) >= 3 and words[1].lower() == "as":
                aliases[words[2].lower()] = parent
        elif keyword == "ENTRYPOINT":
            info.entrypoint = _exec_form(args)
            info.cmd = None  # Docker resets an inherited CMD when ENTRYPOINT is set
        elif keyword == "CMD":
            info.cmd = _exec_form(args)
        elif keyword == "WORKDIR":
            info.workdir = posixpath.normpath(posixpath.join(info.workdir, args.strip("\"'")))
        elif keyword == "ENV":
            info.env.update(_env_pairs(args))
        elif keyword in {"COPY", "ADD"}:
            words = args.split() if not args.startswith("[") else _exec_form(args)
            if any(w.startswith("--from") for w in words):
                continue  # copies from another stage, not from the context
            paths = [w for w in words if not w.startswith("--")]
            sources = paths[:-1]
            info.copies.append((line, sources))
            if sources and all(posixpath.normpath(s) == "." for s in sources):
                info.context_copies.append(
                    posixpath.normpath(posixpath.join(info.workdir, paths[-1]))
                )
        elif keyword == "RUN":
            form = _exec_form(args)
            shell = form[:2] == ["/bin/sh", "-c"] and len(form) == 3
            command = form[2] if shell else " ".join(shlex.quote(a) for a in form)
            info.pip_targets += _pip_targets(command, info.workdir)
    return info


def _credential_like(path: Path, relative: str) -> bool:
    name = posixpath.basename(relative)
    if any(fnmatch.fnmatch(name, pattern) for pattern in _CREDENTIAL_NAMES):
        return True
    if name.endswith(".json") and path.is_file() and path.stat().st_size < _MAX_SNIFF_BYTES:
        text = path.read_text(errors="replace")
        return '"private_key"' in text or '"refresh_token"' in text
    return False


def _copied(sources: list[str], files: list[str]) -> list[str]:
    out = []
    for source in sources:
        pattern = posixpath.normpath(source.lstrip("/")) if source not in {".", "./"} else "."
        for relative in files:
            inside = pattern == "." or relative == pattern or relative.startswith(pattern + "/")
            if inside or fnmatch.fnmatch(relative, pattern):
                out.append(relative)
    return out


def lint_dockerfile(
    info: DockerfileInfo, *, context: Path, files: list[str], gpu: bool
) -> list[LintFinding]:
    """Lint a parsed Dockerfile against its context.

    Args:
        info: Result of `parse_dockerfile`.
        context: Build context folder.
        files: Context files after `.dockerignore` (see `context.context_files`).
        gpu: Whether the image is meant for a GPU job.

    Returns:
        Findings, errors first.
    """
    findings: list[LintFinding] = []
    if info.base_image is None:
        findings.append(LintFinding("error", "no-from", 0, "the Dockerfile has no FROM line"))
    elif gpu and not any(m in info.base_image.lower() for m in _CUDA_MARKERS):
        findings.append(
            LintFinding(
                "warning",
                "gpu-without-cuda",
                0,
                f"GPU job but the base image {info.base_image!r} has no CUDA; start from "
                "nvidia/cuda (e.g. nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04)",
            )
        )
    if info.entrypoint is None and info.cmd is None:
        findings.append(
            LintFinding(
                "warning",
                "no-entrypoint",
                0,
                "no ENTRYPOINT or CMD: the job must then set containerSpec.command, and the "
                "image inherits whatever its base runs; add e.g. "
                'ENTRYPOINT ["python", "-m", "mypackage.task"]',
            )
        )
    for line, sources in info.copies:
        for relative in _copied(sources, files):
            if _credential_like(context / relative, relative):
                findings.append(
                    LintFinding(
                        "error",
                        "credential-copied",
                        line,
                        f"line {line} copies {relative!r}, which looks like a credential, "
                        "into the image; add it to .dockerignore and use Workload Identity or "
                        "Secret Manager instead",
                    )
                )
    return sorted(findings, key=lambda f: (f.severity != "error", f.line))


@dataclass(frozen=True)
class CheckedDockerfile:
    """A Dockerfile that passed lint, with what a builder needs next."""

    text: str
    info: DockerfileInfo
    files: list[str]
    findings: list[LintFinding]


def check_build_context(context: Path, dockerfile: str, *, gpu: bool) -> CheckedDockerfile:
    """Reads and lints a build context's Dockerfile; refuses the build on any lint error.

    Both builders (local and Cloud Build) call this first, so a Dockerfile that copies a
    credential never reaches either.

    Args:
        context: Build context folder.
        dockerfile: Dockerfile path relative to the context.
        gpu: Whether the image is meant for a GPU job.

    Raises:
        BuildError: No Dockerfile inside the context, or a lint error; nothing was built.
    """
    path = (context / dockerfile).resolve()
    if context.resolve() not in path.parents or not path.is_file():
        raise BuildError(f"no Dockerfile at {dockerfile!r} inside the build context {context}")
    text = path.read_text(encoding="utf-8")
    files = context_files(context)
    info = parse_dockerfile(text)
    findings = lint_dockerfile(info, context=context, files=files, gpu=gpu)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise BuildError(
            "the Dockerfile failed lint; nothing was built:\n"
            + "\n".join(f"  [{f.code}] {f.message}" for f in errors)
        )
    return CheckedDockerfile(text, info, files, findings)
