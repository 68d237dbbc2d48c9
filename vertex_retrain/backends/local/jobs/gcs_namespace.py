"""Vertex's `/gcs/` mount for local jobs, inside the local root and nowhere else.

Vertex mounts Cloud Storage at `/gcs/` in every training replica, and its documentation tells
trainers to turn `gs://B/P` into `/gcs/B/P`. A trainer that does so locally would write into
this machine's real `/gcs/`, outside the local root. On Linux each replica therefore runs in
a user and mount namespace of its own, in which `<root>/gcs` is bound at `/gcs`:

- when this machine has a `/gcs` folder, `<root>/gcs` is bound over it (in the replica's
  namespace only);
- when it has none, nothing is created on the host: the replica gets a new root, a tmpfs
  holding every top-level entry of the host's `/` (folders bound recursively, symlinks
  copied) plus `gcs`, and `chroot`s into it.

The setup is a few lines of Python (`python -I -S`, no site import) that `exec` the replica's
program afterwards, so the replica keeps its pid: the executor's supervision, signals,
parent-death signal and cancellation work as before. The replica keeps its user and group
ids (the namespace maps them to themselves) and sees the host's files as before.

Where namespaces are not available (not Linux, or a kernel or container that refuses them:
`namespaces_unavailable` says why), replicas run as before; the executor warns once and
fails a job that created or changed the host's `/gcs` (`HostGcsGuard`).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HOST_GCS = Path("/gcs")
"""Where Vertex mounts Cloud Storage, and where a trainer following its documentation writes."""
_NEW_ROOT = "namespace-root"
"""Folder under the local root where a replica's tmpfs root is mounted (its own namespace)."""
_GUARD_LIMIT = 20_000
"""Entries of an existing host `/gcs` compared before and after a job, at most."""

# Run as `python -I -S -c SCRIPT GCS MOUNTPOINT TARGET ARGV...`. TARGET is an absolute
# top-level path (`/gcs`). With ARGV empty it only sets up (the availability probe).
_SETUP = r"""
import ctypes, os, sys
gcs, mountpoint, target, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
NEWNS, NEWUSER, BIND, REC, PRIVATE = 0x20000, 0x10000000, 4096, 16384, 1 << 18
def check(result, what):
    if result != 0:
        number = ctypes.get_errno()
        sys.stderr.write(f"gcs namespace: {what}: {os.strerror(number)}\n")
        os._exit(126)
def mount(source, path, kind, flags, data=None):
    encode = lambda text: None if text is None else text.encode()
    check(libc.mount(encode(source), encode(path), encode(kind), flags, encode(data)),
          f"mount {source} on {path}")
uid, gid, cwd = os.getuid(), os.getgid(), os.getcwd()
check(libc.unshare(NEWUSER | NEWNS), "unshare")
for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                   ("gid_map", f"{gid} {gid} 1")):
    with open(f"/proc/self/{name}", "w") as handle:
        handle.write(text)
mount(None, "/", None, REC | PRIVATE)
if os.path.isdir(target):
    mount(gcs, target, None, BIND | REC)
else:
    mount("tmpfs", mountpoint, "tmpfs", 0, "mode=0755")
    for entry in os.scandir("/"):
        inside = os.path.join(mountpoint, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), inside)
        elif entry.is_dir():
            os.mkdir(inside)
            mount(entry.path, inside, None, BIND | REC)
        elif entry.is_file():
            open(inside, "w").close()
            mount(entry.path, inside, None, BIND)
    os.mkdir(mountpoint + target)
    mount(gcs, mountpoint + target, None, BIND | REC)
    os.chroot(mountpoint)
    os.chdir(cwd)
if argv:
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        sys.stderr.write(f"cannot execute {argv[0]!r}: {error}\n")
        os._exit(127)
"""


def _setup_argv(root: Path, target: Path) -> list[str]:
    gcs = root / "gcs"
    gcs.mkdir(parents=True, exist_ok=True)
    mountpoint = root / _NEW_ROOT
    mountpoint.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-I", "-S", "-c", _SETUP, str(gcs), str(mountpoint), str(target)]


@functools.lru_cache(maxsize=8)
def _probe(root: Path, target: Path) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"{sys.platform} has no Linux user namespaces"
    try:
        done = subprocess.run(
            _setup_argv(root, target), capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "setup failed"
    return None


def namespaces_unavailable(root: Path, target: Path = HOST_GCS) -> str | None:
    """Why replicas cannot get their own `/gcs` here, or None when they can (checked once)."""
    return _probe(root.resolve(), target)


def in_gcs_namespace(argv: list[str], root: Path, target: Path = HOST_GCS) -> list[str]:
    """The command that runs `argv` with `<root>/gcs` at `target` (same pid, see module).

    Call only when `namespaces_unavailable(root, target)` is None.
    """
    return [*_setup_argv(root.resolve(), target), *argv]


_WARNED: set[str] = set()


def warn_once(reason: str) -> list[str]:
    """The warning for a machine without namespaces, the first time this process asks."""
    if reason in _WARNED:
        return []
    _WARNED.add(reason)
    return [
        f"user namespaces are not available here ({reason}): local jobs see this machine's "
        f"{HOST_GCS} instead of <root>/gcs, and a job that creates or writes {HOST_GCS} fails; "
        "map gs:// URIs with GCS_FUSE_ROOT (set for every job) to stay inside the local root"
    ]


@dataclass(frozen=True)
class HostGcsGuard:
    """What the host's `/gcs` held before a job, to tell whether the job wrote there."""

    path: Path
    before: frozenset[tuple[str, int, int]] | None

    @classmethod
    def take(cls, path: Path | None = None) -> HostGcsGuard:
        """Records `path` (default `HOST_GCS`) now."""
        path = path or HOST_GCS
        return cls(path, _snapshot(path))

    def violation(self) -> str | None:
        """What the job did to the host's `/gcs`, or None when it left it alone."""
        after = _snapshot(self.path)
        if after == self.before:
            return None
        if self.before is None:
            return (
                f"the job created {self.path} on this machine, outside the local root; map "
                "gs://B/P to $GCS_FUSE_ROOT/B/P (set for every local job) instead of /gcs/B/P, "
                f"and remove {self.path}"
            )
        return (
            f"the job wrote into this machine's {self.path}, outside the local root; map "
            "gs://B/P to $GCS_FUSE_ROOT/B/P (set for every local job) instead of /gcs/B/P"
        )


def _snapshot(path: Path) -> frozenset[tuple[str, int, int]] | None:
    if not os.path.lexists(path):
        return None
    entries = []
    for folder, names, files in os.walk(path):
        for name in [*names, *files]:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            entries.append((os.path.join(folder, name), stat.st_mtime_ns, stat.st_size))
            if len(entries) >= _GUARD_LIMIT:
                return frozenset(entries)
    top = os.lstat(path)
    entries.append((str(path), top.st_mtime_ns, top.st_size))
    return frozenset(entries)
