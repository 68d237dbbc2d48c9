"""Dependencies with known holes: every place that installs torch asks for 2.6 or later.

Before 2.6, `torch.load(weights_only=True)`, which the trainer and the prediction server use
on files anyone with bucket access can write, can be made to run code (CVE-2025-32434).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
VULNERABLE = ["2.1.0", "2.4.1", "2.5.1"]
_PIN = re.compile(r"\btorch(?:\[[^\]]*\])?\s*([<>=!~][^\s\\;]*)")


def _torch_specifiers() -> dict[str, str]:
    found: dict[str, str] = {}
    project = tomllib.loads(
        (REPO / "examples" / "drink_shops" / "trainer" / "pyproject.toml").read_text()
    )["project"]
    groups = {"dependencies": project.get("dependencies", [])}
    groups.update(project.get("optional-dependencies", {}))
    for group, items in groups.items():
        for item in items:
            requirement = Requirement(item)
            if requirement.name == "torch":
                found[f"trainer/pyproject.toml [{group}]"] = str(requirement.specifier)
    for name in ["examples/drink_shops/trainer/requirements.txt", "constraints.txt",
                 "examples/drink_shops/trainer/Dockerfile",
                 "examples/drink_shops/trainer/Dockerfile.serve"]:  # fmt: skip
        for number, line in enumerate((REPO / name).read_text().splitlines(), start=1):
            if not line.lstrip().startswith("#"):
                for match in _PIN.finditer(line):
                    found[f"{name}:{number}"] = match.group(1)
    return found


def test_every_torch_requirement_excludes_versions_before_2_6() -> None:
    found = _torch_specifiers()
    assert "trainer/pyproject.toml [framework]" in found and len(found) >= 5, found
    for where, specifier in found.items():
        allowed = Requirement(f"torch{specifier}").specifier
        admitted = [v for v in VULNERABLE if allowed.contains(v)]
        assert admitted == [], f"{where}: torch{specifier} admits {admitted}"
