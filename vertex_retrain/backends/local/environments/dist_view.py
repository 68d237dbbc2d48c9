"""A folder that shows some installed distributions and nothing else, made of symlinks.

A job's environment must not see the caller's packages, but copying torch into every
environment would cost seconds and gigabytes. A view links each wanted distribution's files
(its `RECORD`) from where they are installed: a top-level folder that no other installed
distribution shares is linked whole (`torch/`, one link); a folder that several share
(`google/`, a namespace package; `__pycache__/` of single-file modules) becomes a real folder
in the view and is merged level by level, so the view holds the wanted distributions' files
and never a sibling's. Each `*.dist-info` folder is linked too, so `importlib.metadata` in the
job sees exactly these distributions. The job's venv reads the view with `site.addsitedir`,
which also runs the `.pth` files the linked distributions installed (editable installs).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from vertex_retrain.backends.local.environments.requirement_closure import (
    Installed,
    InstalledDistributions,
)

Parts = tuple[str, ...]


def _shared_prefixes(
    linked: Sequence[Installed], installed: InstalledDistributions
) -> set[tuple[Path, Parts]]:
    """`(site, folder)` pairs that a distribution other than the linked owner also fills."""
    folders: dict[tuple[Path, Parts], set[str]] = defaultdict(set)
    for dist in linked:
        for parts in dist.files():
            for depth in range(1, len(parts)):
                folders[dist.site, parts[:depth]].add(dist.name)
    shared = {key for key, owners in folders.items() if len(owners) > 1}
    wanted = {dist.metadata_dir for dist in linked}
    for site in {dist.site for dist in linked}:
        for other in installed.in_site(site):
            if other.metadata_dir in wanted:
                continue
            for parts in other.files() if other.linkable else ():
                # Walk down only while the folder is one a linked distribution also fills.
                for depth in range(1, len(parts)):
                    if (site, parts[:depth]) not in folders:
                        break
                    shared.add((site, parts[:depth]))
    return shared


def _materialise(
    folder: Path,
    depth: int,
    entries: Iterable[tuple[Parts, Installed]],
    shared: set[tuple[Path, Parts]],
) -> int:
    groups: dict[str, list[tuple[Parts, Installed]]] = defaultdict(list)
    for parts, dist in entries:
        groups[parts[depth]].append((parts, dist))
    links = 0
    for name, group in sorted(groups.items()):
        target = folder / name
        parts, dist = group[0]
        prefix = parts[: depth + 1]
        is_file = any(len(p) == depth + 1 for p, _ in group)
        owners = {(d.site, d.name) for _, d in group}
        if is_file or (len(owners) == 1 and (dist.site, prefix) not in shared):
            # A file (the first distribution listing it wins), or a folder one owns alone.
            os.symlink(dist.site.joinpath(*prefix), target)
            links += 1
            continue
        target.mkdir()
        links += _materialise(target, depth + 1, group, shared)
    return links


def build_view(view: Path, linked: Sequence[Installed], installed: InstalledDistributions) -> int:
    """Fills the empty folder `view` with links to the files of `linked`.

    Args:
        view: A new, empty folder.
        linked: The distributions to show (each with a `RECORD`).
        installed: Every installed distribution, to tell shared folders from owned ones.

    Returns:
        How many links were made.
    """
    entries = [(parts, dist) for dist in linked for parts in dist.files()]
    return _materialise(view, 0, entries, _shared_prefixes(linked, installed))
