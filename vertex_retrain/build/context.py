"""A build context: which files Docker would send, and their digest.

Both builders (the local one and Cloud Build) hash a context with `context_digest`, so the two
backends agree on when a context changed and give the same image digest for it.

`.dockerignore` is honoured with Docker's rules (moby/patternmatcher): patterns use Go's
`filepath.Match` syntax plus `**`, a pattern also excludes everything below a matching
folder, `!pattern` re-includes, and the last matching pattern wins.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DOCKERIGNORE = ".dockerignore"


class BuildError(ValueError):
    """A build that cannot proceed; nothing was written."""


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    exclusion: bool


def _to_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1
                if i + 1 < len(pattern) and pattern[i + 1] == "/":
                    i += 1  # "**/" behaves like "**"
                out.append(".*" if i + 1 >= len(pattern) else "(.*/)?")
            else:
                out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise BuildError(f".dockerignore pattern {pattern!r} has an unclosed '['")
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("^" + "".join(out) + "$")


def parse_dockerignore(text: str) -> list[_Pattern]:
    """Parse `.dockerignore` content into ordered patterns."""
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exclusion = line.startswith("!")
        if exclusion:
            line = line[1:].strip()
        cleaned = os.path.normpath(line).replace(os.sep, "/").lstrip("/")
        if cleaned.startswith("./"):
            cleaned = cleaned[2:]
        if cleaned in {"", "."}:
            continue
        patterns.append(_Pattern(_to_regex(cleaned), exclusion))
    return patterns


def is_ignored(relative: str, patterns: list[_Pattern]) -> bool:
    """Apply Docker's rule: the last pattern matching the path or a parent folder wins."""
    parts = PurePosixPath(relative).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for pattern in patterns:
        if pattern.exclusion and not ignored:
            continue
        if any(pattern.regex.match(candidate) for candidate in candidates):
            ignored = not pattern.exclusion
    return ignored


def context_files(context: Path) -> list[str]:
    """List the context's files Docker would send (posix paths relative to the context)."""
    ignore_file = context / DOCKERIGNORE
    patterns = parse_dockerignore(ignore_file.read_text()) if ignore_file.exists() else []
    found = []
    for folder, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files):
            relative = (Path(folder) / name).relative_to(context).as_posix()
            if not is_ignored(relative, patterns):
                found.append(relative)
    return sorted(found)


def context_digest(context: Path, files: list[str], extra: bytes = b"") -> str:
    """Digest of the context: every file's path, executable bit and content (or link target).

    Args:
        context: Build context folder.
        files: Files to include (from `context_files`).
        extra: Other inputs of the build (e.g. the Dockerfile's text), hashed first.

    Returns:
        A sha256 hex digest.
    """
    digest = hashlib.sha256(b"vertex-retrain-context-v1\0" + extra + b"\0")
    for relative in files:
        path = context / relative
        info = path.lstat()
        digest.update(relative.encode() + b"\0")
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link\0" + os.readlink(path).encode())
        else:
            digest.update(b"x" if info.st_mode & 0o111 else b"-")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
