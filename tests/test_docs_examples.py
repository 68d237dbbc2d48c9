"""Every snippet of README.md (and every ```python block of docs/*.md) works from a fresh clone.

- ```python blocks run, each in a fresh folder that holds what `python compile.py compile`
  writes (`dist/`). A block after `<!-- runs without vertex_retrain -->` runs with the
  library made unimportable: it is what another repository would run.
- ```bash blocks of README.md: each command is checked the way it can be here. `python
  compile.py ...` always parses with the real parser; the commands that need no Google Cloud
  account and take seconds run for real (`compile`, `models`, `endpoints`, `schedule
  --dry-run`); `run NAME --local` is run by tests/test_cli_fresh_clone.py. `make TARGET` runs
  as `make -n TARGET` (the target exists and expands); `docker build -f FILE` names a file
  that exists, and `docker push` pushes what the block built; `pip wheel -w DIR .` builds
  this project's wheel for real, and `pip install -c FILE WHEEL[extra]` must name a
  constraints file that exists and a wheel the block built. Anything else fails the test.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(
    r"^(?P<marker><!-- [^>]* -->\n)?```(?P<lang>python|bash)\n(?P<code>.*?)^```",
    re.DOTALL | re.MULTILINE,
)
_WITHOUT_LIBRARY = "<!-- runs without vertex_retrain -->"
_OFFLINE_COMMANDS = {"compile", "models", "endpoints"}
_BLOCKER = '''
"""A repository that has not installed vertex_retrain (nor the reference trainer)."""
import importlib.abc
import sys


class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("vertex_retrain", "trainer"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: another repository)")
        return None


sys.meta_path.insert(0, _Absent())
'''


_GUIDE = re.compile(r"^## Bring your own model\n.*?(?=^## )", re.DOTALL | re.MULTILINE)
"""The README's guide: its blocks are a repository's files and commands, which
tests/test_docs_byom.py writes and runs as written."""


def _examples(lang: str, docs: bool = True) -> list[tuple[str, str, bool]]:
    found = []
    sources = [ROOT / "README.md", *(sorted((ROOT / "docs").glob("*.md")) if docs else [])]
    for doc in sources:
        if not doc.exists():
            continue
        text = _GUIDE.sub("", doc.read_text(encoding="utf-8"))
        blocks = [m for m in _BLOCK.finditer(text)]
        for index, match in enumerate(m for m in blocks if m["lang"] == lang):
            without = (match["marker"] or "").strip() == _WITHOUT_LIBRARY
            found.append((f"{doc.relative_to(ROOT)}#{lang}{index}", match["code"], without))
    return found


@pytest.fixture(scope="module")
def compiled_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `python compile.py compile` writes, compiled once for the module."""
    from vertex_retrain.cli.compiling import compile_all

    dist = tmp_path_factory.mktemp("compiled") / "dist"
    compile_all(dist)
    return dist


def _sandbox(tmp_path: Path, dist: Path) -> Path:
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copytree(dist, work / "dist")
    shutil.copy2(ROOT / "compile.py", work / "compile.py")
    # The examples' declarations (schedules.yaml), as a clone has them.
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.pyc")
    shutil.copytree(ROOT / "examples", work / "examples", ignore=ignore)
    return work


def _env(tmp_path: Path, *, without_library: bool = False) -> dict[str, str]:
    env = {**os.environ, "VERTEX_LOCAL_ROOT": str(tmp_path / "local-root"), "NO_GCE_CHECK": "True"}
    env.pop("GCS_FUSE_ROOT", None)
    if without_library:
        blocker = tmp_path / "blocker"
        blocker.mkdir()
        (blocker / "sitecustomize.py").write_text(_BLOCKER, encoding="utf-8")
        env["PYTHONPATH"] = str(blocker)
    else:
        env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.mark.parametrize(("where", "code", "without_library"), _examples("python"))
def test_docs_python_example_runs(
    where: str, code: str, without_library: bool, tmp_path: Path, compiled_dist: Path
) -> None:
    work = _sandbox(tmp_path, compiled_dist)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=work, env=_env(tmp_path, without_library=without_library),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"{where} failed:\n{result.stdout}\n{result.stderr}"


def test_docs_another_repository_snippet_imports_nothing_from_this_project() -> None:
    marked = [code for _, code, without in _examples("python") if without]
    assert marked, f"README.md has no block marked {_WITHOUT_LIBRARY}"
    for code in marked:
        assert "vertex_retrain" not in code and "import trainer" not in code


def _commands(code: str) -> list[list[str]]:
    joined = re.sub(r"\\\n\s*", " ", code)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(words)
    return commands


def _check_compile_py(arguments: list[str], work: Path, tmp_path: Path) -> None:
    from vertex_retrain.cli.main import build_parser

    parsed = build_parser().parse_args(arguments)  # SystemExit on a flag that does not exist
    command = parsed.command or "compile"
    offline = command in _OFFLINE_COMMANDS or (
        command == "schedule" and parsed.dry_run and not parsed.project
    )
    if not offline:
        return  # needs Google Cloud, or minutes (run --local: tests/test_cli_fresh_clone.py)
    result = subprocess.run(
        [sys.executable, "compile.py", *arguments],
        cwd=work, env=_env(tmp_path), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"compile.py {' '.join(arguments)}:\n{result.stderr}"


def _pip_wheel(words: list[str], work: Path, where: str) -> set[str]:
    """Builds the wheel for real, `.` being this checkout, into the sandbox's folder."""
    out = work / words[words.index("-w") + 1]
    assert words[-1] == ".", f"{where}: builds {words[-1]!r}, not this project"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"{where}: pip wheel failed:\n{result.stderr}"
    return {f"{out.name}/{wheel.name}" for wheel in out.glob("*.whl")}


def _check_pip_install(words: list[str], work: Path, built: set[str], where: str) -> None:
    """The constraints file exists, and every wheel named is one the block built, by name."""
    assert (ROOT / words[words.index("-c") + 1]).is_file(), f"{where}: no constraints file"
    wheels = [w.split("[")[0] for w in words if ".whl" in w]
    assert wheels, f"{where}: pip install names no wheel"
    for wheel in wheels:
        assert wheel in built, f"{where}: installs {wheel}, but the block built {sorted(built)}"
        assert (work / wheel).is_file()


@pytest.mark.parametrize(("where", "code", "_"), _examples("bash", docs=False))
def test_readme_shell_snippet_works(
    where: str, code: str, _: bool, tmp_path: Path, compiled_dist: Path
) -> None:
    work = _sandbox(tmp_path, compiled_dist)
    built: set[str] = set()
    for words in _commands(code):
        if words[:2] == ["python", "compile.py"]:
            _check_compile_py(words[2:], work, tmp_path)
        elif words[0] == "vertex-retrain":  # the console script: the same command line
            _check_compile_py(words[1:], work, tmp_path)
        elif words[0] == "make" and len(words) == 2:
            dry = subprocess.run(
                ["make", "-n", words[1]], cwd=ROOT, capture_output=True, text=True, check=False
            )
            assert dry.returncode == 0, f"{where}: make {words[1]}: {dry.stderr}"
        elif words[:2] == ["docker", "build"]:
            assert (ROOT / words[words.index("-f") + 1]).is_file(), where
            built.add(words[words.index("-t") + 1])
        elif words[:2] == ["docker", "push"]:
            assert words[2] in built, f"{where}: pushes {words[2]}, which the block did not build"
        elif words[:2] == ["pip", "wheel"]:
            built |= _pip_wheel(words, work, where)
        elif words[:2] == ["pip", "install"]:
            _check_pip_install(words, work, built, where)
        else:
            pytest.fail(f"{where}: no check for {' '.join(words)!r}; add one to this test")
