"""`make install` keeps quiet about setuptools' notice on each editable install, and only that.

pip (25 and later) shows the warnings a build backend emits even under ``--quiet``; setuptools
emits one "Editable installation." notice per editable package. The Makefile's Python warning
filter drops it and nothing else.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_FILTER = re.compile(r"^EDITABLE_NOTICE_FILTER := (?P<value>.+)$", re.M)

EMIT = """
from setuptools.warnings import InformationOnly, SetuptoolsDeprecationWarning
InformationOnly.emit("Editable installation.", "Please be careful with folders ...")
InformationOnly.emit("Another notice.", "kept")
SetuptoolsDeprecationWarning.emit("A deprecation.", "kept too")
"""


def _filter() -> str:
    found = _FILTER.search((REPO / "Makefile").read_text(encoding="utf-8"))
    assert found, "Makefile defines no EDITABLE_NOTICE_FILTER"
    return found["value"]


def test_makefile_editable_notice_filter_drops_setuptools_notice_and_nothing_else() -> None:
    done = subprocess.run(
        [sys.executable, "-W", _filter(), "-c", EMIT],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "Editable installation" not in done.stderr
    assert "Another notice." in done.stderr and "A deprecation." in done.stderr


def test_makefile_install_runs_the_editable_installs_under_the_filter(tmp_path: Path) -> None:
    # -n prints the recipe without running it; a fresh VENV makes the install due.
    done = subprocess.run(
        ["make", "-n", "install", f"VENV={tmp_path / 'venv'}"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    recipe = done.stdout.replace("\\\n", " ")
    (editable,) = [line for line in recipe.splitlines() if " -e " in line]
    assert editable.startswith(f'PYTHONWARNINGS="${{PYTHONWARNINGS:+$PYTHONWARNINGS,}}{_filter()}"')
