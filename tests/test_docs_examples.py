"""Every ```python block in README.md and docs/*.md runs, so the docs cannot drift from the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _examples() -> list[tuple[str, str]]:
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if not doc.exists():
            continue
        for index, match in enumerate(_BLOCK.finditer(doc.read_text(encoding="utf-8"))):
            found.append((f"{doc.relative_to(ROOT)}#{index}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "code"), _examples() or [("none", "")])
def test_docs_example_runs(where: str, code: str, tmp_path: Path) -> None:
    if where == "none":
        pytest.fail("no ```python examples found in README.md or docs/")
    env = {**os.environ, "VERTEX_LOCAL_ROOT": str(tmp_path / "local-root")}
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{where} failed:\n{result.stdout}\n{result.stderr}"
