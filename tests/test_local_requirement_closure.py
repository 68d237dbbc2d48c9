"""The requirement closure of a job's package among installed distributions, and the view
that shows exactly those distributions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.package_files import write_installed
from vertex_retrain.backends.local.environments.dist_view import build_view
from vertex_retrain.backends.local.environments.requirement_closure import (
    InstalledDistributions,
    resolve_closure,
)
from vertex_retrain.specs.package_compat import PackageMetadata


def _package(*requires: str) -> list[PackageMetadata]:
    return [PackageMetadata("job-pkg", "1.0", None, tuple(requires), "job-pkg.whl")]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    write_installed(
        site,
        "a",
        "1.0",
        {"a.py": ""},
        requires=["b>=2", 'c; extra == "x"', 'd; python_version < "3"'],
        extras=["x"],
    )
    write_installed(site, "b", "2.0", {"b.py": ""}, requires=["e[fast]"])
    write_installed(site, "c", "1.0", {"c.py": ""})
    write_installed(site, "d", "1.0", {"d.py": ""})
    write_installed(
        site,
        "e",
        "1.0",
        {"e.py": ""},
        requires=['f; extra == "fast"', 'g; extra == "slow"'],
        extras=["fast", "slow"],
    )
    write_installed(site, "f", "1.0", {"f.py": ""})
    write_installed(site, "g", "1.0", {"g.py": ""})
    write_installed(site, "h", "1.0", {"h.py": ""})
    return site  # fmt: skip


@pytest.mark.parametrize(
    ("requires", "extras", "linked"),
    [
        # markers false for this Python and extras nobody asked for stay out
        (["a"], [], ["a", "b", "e", "f"]),
        # an extra named in a requirement brings its dependencies
        (["a[x]"], [], ["a", "b", "c", "e", "f"]),
        # the package's own extras, when asked for
        (["a", 'h; extra == "serve"'], [], ["a", "b", "e", "f"]),
        (["a", 'h; extra == "serve"'], ["serve"], ["a", "b", "e", "f", "h"]),
    ],
)
def test_closure_follows_requirements_with_markers_and_extras(
    site: Path, requires: list[str], extras: list[str], linked: list[str]
) -> None:
    closure = resolve_closure(_package(*requires), InstalledDistributions([site]), extras=extras)
    assert list(closure.linked) == linked
    assert closure.unsatisfied == ()


@pytest.mark.parametrize(("specifier", "satisfied"), [(">=2", True), (">2", False)])
def test_closure_reports_a_requirement_no_installed_version_satisfies(
    site: Path, specifier: str, satisfied: bool
) -> None:
    closure = resolve_closure(_package(f"b{specifier}"), InstalledDistributions([site]))
    if satisfied:
        assert "b" in closure.linked and closure.unsatisfied == ()
    else:
        (need,) = closure.unsatisfied
        assert "b" not in closure.linked
        assert need.describe() == "b>2 (needed by job-pkg 1.0; installed here: 2.0)"


def test_closure_of_a_self_extra_and_of_what_the_image_provides(site: Path) -> None:
    package = PackageMetadata(
        "job-pkg", "1.0", None, ('c; extra == "base"', 'job-pkg[base]; extra == "serve"'), "w"
    )
    installed = InstalledDistributions([site])
    closure = resolve_closure(
        [package], installed, extras=["serve"], provided={"h": "image", "torch": "image"}
    )
    # `serve` pulls the package's own `base` extra; the image's h is linked, and its torch,
    # not installed here, is left out without complaint.
    assert list(closure.linked) == ["c", "h"] and closure.unsatisfied == ()
    missing = resolve_closure([package], installed, extras=["serve"], provided={})
    assert list(missing.linked) == ["c"]


def test_closure_never_takes_the_packages_own_name_from_the_caller(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_installed(site, "job-pkg", "1.0", {"job_pkg.py": ""})
    write_installed(site, "b", "2.0", {"b.py": ""}, requires=["job-pkg"])
    closure = resolve_closure(_package("b"), InstalledDistributions([site]))
    assert list(closure.linked) == ["b"]


def _entries(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): "link" if p.is_symlink() else "dir"
        for p in sorted(folder.rglob("*"))
        if p.is_symlink() or p.is_dir()
    }


def test_view_links_owned_folders_whole_and_merges_shared_ones_per_distribution(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write_installed(
        site,
        "wanted",
        "1.0",
        {
            "solo/__init__.py": "",
            "solo/deep/x.py": "",
            "ns/wanted/__init__.py": "",
            "single.py": "",
            "__pycache__/single.cpython-311.pyc": "",
        },
    )
    write_installed(site, "also-wanted", "1.0", {"ns/also/__init__.py": ""})
    write_installed(site, "sibling", "1.0", {
        "ns/sibling/__init__.py": "", "__pycache__/other.cpython-311.pyc": "",
    })  # fmt: skip
    installed = InstalledDistributions([site])
    linked = [installed.get("wanted"), installed.get("also-wanted")]
    view = tmp_path / "view"
    view.mkdir()
    build_view(view, [d for d in linked if d is not None], installed)
    assert _entries(view) == {
        "__pycache__": "dir",  # shared with sibling: merged
        "__pycache__/single.cpython-311.pyc": "link",
        "also_wanted-1.0.dist-info": "link",
        "ns": "dir",  # a namespace folder three distributions share
        "ns/also": "link",
        "ns/wanted": "link",
        "single.py": "link",
        "solo": "link",  # owned by one distribution: one link for the whole folder
        "wanted-1.0.dist-info": "link",
    }
    assert (view / "solo" / "deep" / "x.py").exists()
    assert not (view / "ns" / "sibling").exists()
