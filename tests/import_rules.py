"""The layering rules of docs/architecture.md as code, read from the source with ``ast``.

Nothing is imported: every module of the library (``vertex_retrain/``, ``components/`` as
``vertex_retrain.components``, ``pipelines/`` as ``vertex_retrain.pipelines``) and of the
reference trainer (``trainer/``) is parsed, and every import statement is read, including
those inside functions (the components import their step there, and a lazy import is still a
dependency). tests/test_architecture.py applies the rules to the repository and to synthetic
modules.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE_ROOTS: dict[str, Path] = {
    "vertex_retrain": REPO / "vertex_retrain",
    "vertex_retrain.components": REPO / "components",
    "vertex_retrain.pipelines": REPO / "pipelines",
    "trainer": REPO / "examples" / "drink_shops" / "trainer",
    "demand_forecast": REPO / "examples" / "daily_demand" / "demand_forecast",
    "guarded_asgi": REPO / "packages" / "guarded-asgi" / "guarded_asgi",
}
"""Import name -> folder holding it (pyproject.toml's package-dir mapping, the examples'
packages and the repository's other distributions)."""

EXAMPLE_PACKAGES = ("trainer", "demand_forecast", "guarded_asgi")
"""The examples' training packages and the HTTP server the trainer shares with the library:
distributions of their own, outside the library."""

LAYERS: tuple[tuple[str, int], ...] = (
    ("vertex_retrain.cli", 5),
    ("vertex_retrain.pipelines", 4),
    ("vertex_retrain.components", 3),
    ("vertex_retrain.steps", 2),
    ("vertex_retrain.backends", 1),
    ("vertex_retrain.specs", 0),
)
"""Package prefix -> rank; a module may import its own rank and lower ones only. Any other
module of ``vertex_retrain`` (contracts, neutral shared modules) sits at rank 0 beside specs."""

NEVER_IMPORTED = {
    "trainer": "the library reaches the trainer only through its contracts (a job's command "
    "line and the files it writes), never by import",
    "demand_forecast": "the library reaches an example's package only through its contracts, "
    "never by import",
    "torch": "the component image ships no torch; model code lives in the training package",
    "tests": "test doubles are passed in by tests, the product never imports them",
    "bench": "benchmarks are scripts of the repository, not part of the product",
    "compile": "compile.py is an entry-point shim; import vertex_retrain.cli instead",
    "components": "the folder is installed as vertex_retrain.components; `components` is not "
    "an installed name",
    "pipelines": "the folder is installed as vertex_retrain.pipelines; `pipelines` is not an "
    "installed name",
}
"""Top-level names the library must never import, with the rule's reason."""

LIGHT_PACKAGES: dict[str, frozenset[str]] = {
    "vertex_retrain.specs": frozenset({"yaml"}),
    "vertex_retrain.contracts": frozenset(),
    "vertex_retrain.rules": frozenset(),
    "vertex_retrain.build": frozenset(),
    "vertex_retrain.schedules": frozenset(),
}
"""Packages that load only the standard library (plus the names given) and vertex_retrain
when imported; a third-party import goes inside the function that needs it."""

PUBLIC_FACADE = "vertex_retrain"
"""The package itself: its public names (``vertex_retrain.run_local``) are loaded lazily, inside
its module ``__getattr__``, from whichever layer defines them; nothing else is exempt."""

BACKEND_IMPLEMENTATIONS = ("vertex_retrain.backends.local", "vertex_retrain.backends.vertex")
BACKEND_FACTORY = "vertex_retrain.backends"
"""``backend_for`` lives here: the one place that picks an implementation by name."""

KFP_ADAPTER = "vertex_retrain.backends.local.kfp_adapter"
"""The one room that may reach into kfp.local's modules (its internals change between kfp
versions); it checks the installed kfp first. ``from kfp import local`` (its public ``init``
and runners) is allowed anywhere."""

TRAINER_NEVER_IMPORTS = ("vertex_retrain", "components", "pipelines", "tests", "bench", "compile")
"""An example's package is its own distribution, installed alone on the training image."""


@dataclass(frozen=True)
class Import:
    """One import statement's target, as seen in the source."""

    importer: str
    imported: str
    line: int
    module_level: bool
    """False inside a function body or under ``if TYPE_CHECKING:`` (does not run at import)."""


@dataclass(frozen=True)
class Violation:
    """A forbidden import, or an import cycle."""

    importer: str
    imported: str
    line: int
    rule: str

    def __str__(self) -> str:
        return f"{self.importer} (line {self.line}) imports {self.imported}: {self.rule}"


def library_sources() -> dict[str, tuple[str, bool]]:
    """Module name -> (source text, is a package ``__init__``) for every module in the repo."""
    found: dict[str, tuple[str, bool]] = {}
    for package, folder in SOURCE_ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if any(part.endswith(".egg-info") or part == "__pycache__" for part in parts):
                continue
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join([package, *parts])
            found[name] = (path.read_text(encoding="utf-8"), is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, module_level: bool) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under `node`, with whether it runs when the module is imported."""
    for child in ast.iter_child_nodes(node):
        runs = module_level and not isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        )
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            runs = False
        yield child, runs
        yield from _walk(child, runs)


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    base = importer.split(".")
    if not is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(importer: str, source: str, is_package: bool, known: Iterable[str]) -> list[Import]:
    """The imports in one module's source; ``from a import b`` targets ``a.b`` when that is a
    module in `known`, else ``a``."""
    modules = set(known)
    found = []
    for node, module_level in _walk(ast.parse(source, filename=importer), True):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(importer, is_package, node.level, node.module)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        elif _is_import_module_call(node):
            assert isinstance(node, ast.Call)
            argument = node.args[0]
            assert isinstance(argument, ast.Constant)
            targets = [str(argument.value)]
        for target in dict.fromkeys(targets):
            line = getattr(node, "lineno", 0)
            found.append(Import(importer, target, line, module_level))
    return found


def _is_import_module_call(node: ast.AST) -> bool:
    """``importlib.import_module("literal")`` or ``__import__("literal")``."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    if not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in {"import_module", "__import__"}
    )


def within(module: str, package: str) -> bool:
    """Whether `module` is `package` or inside it."""
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> tuple[str, int]:
    """The layer (package prefix and rank) of a ``vertex_retrain`` module."""
    for package, rank in LAYERS:
        if within(module, package):
            return package, rank
    return "vertex_retrain (contracts and shared modules)", 0


def rule_broken(edge: Import) -> str | None:
    """The rule `edge` breaks, or None when the import is allowed."""
    importer, imported = edge.importer, edge.imported
    top = imported.split(".")[0]
    if any(within(importer, package) for package in EXAMPLE_PACKAGES):
        if top in TRAINER_NEVER_IMPORTS:
            return (
                f"{importer.split('.')[0]} is its own distribution and imports nothing of the "
                "library"
            )
        return None
    if top in NEVER_IMPORTED:
        return f"nothing in the library imports `{top}`: {NEVER_IMPORTED[top]}"
    for package, extras in LIGHT_PACKAGES.items():
        if (
            within(importer, package)
            and edge.module_level
            and top not in sys.stdlib_module_names | extras | {"vertex_retrain", "__future__"}
        ):
            return (
                f"{package} is light: importing it loads only the standard library"
                f"{''.join(f', {name}' for name in sorted(extras))} and vertex_retrain; import "
                f"`{top}` inside the function that needs it"
            )
    if within(imported, "kfp.local") and not within(importer, KFP_ADAPTER):
        return (
            f"kfp.local's modules are kfp internals that change between versions; every use "
            f"sits in {KFP_ADAPTER}, behind its check of the installed kfp"
        )
    if top != "vertex_retrain" or imported == "vertex_retrain":
        return None
    if importer == PUBLIC_FACADE and not edge.module_level:
        return None  # a public name of the package loads its layer on first use (PEP 562)
    for one, other in (("local", "vertex"), ("vertex", "local")):
        if within(importer, f"vertex_retrain.backends.{one}") and within(
            imported, f"vertex_retrain.backends.{other}"
        ):
            return (
                f"backends.{one} never imports backends.{other}; shared pure logic goes in a "
                "neutral module both may import"
            )
    into_backend = any(within(imported, b) for b in BACKEND_IMPLEMENTATIONS)
    if (
        into_backend
        and within(importer, "vertex_retrain.backends")
        and importer != BACKEND_FACTORY
        and not any(within(importer, b) for b in BACKEND_IMPLEMENTATIONS)
    ):
        return (
            "the Backend interface and modules shared by the backends import neither "
            f"implementation; only {BACKEND_FACTORY}.backend_for picks one"
        )
    if into_backend and layer_of(importer)[0] in {
        "vertex_retrain.steps",
        "vertex_retrain.components",
        "vertex_retrain.pipelines",
    }:
        return (
            f"{layer_of(importer)[0]} reach a backend only through the Backend interface "
            f"({BACKEND_FACTORY}.backend_for, vertex_retrain.backends.base), never an "
            "implementation's module"
        )
    if within(importer, "vertex_retrain.specs") and not within(imported, "vertex_retrain.specs"):
        return "specs is the pure core and imports no other vertex_retrain layer"
    (importer_layer, importer_rank), (imported_layer, imported_rank) = (
        layer_of(importer),
        layer_of(imported),
    )
    if imported_rank > importer_rank:
        return (
            f"a lower layer never imports a higher one: {importer_layer} (rank "
            f"{importer_rank}) may not import {imported_layer} (rank {imported_rank})"
        )
    return None


def layering_violations(sources: dict[str, tuple[str, bool]]) -> list[Violation]:
    """Every import in `sources` that breaks a rule of :func:`rule_broken`."""
    found = []
    for name, (source, is_package) in sorted(sources.items()):
        for edge in imports_of(name, source, is_package, sources):
            rule = rule_broken(edge)
            if rule is not None:
                found.append(Violation(name, edge.imported, edge.line, rule))
    return found


def import_cycles(sources: dict[str, tuple[str, bool]], *, lazy: bool = False) -> list[list[str]]:
    """Cycles in the graph of imports between the modules of `sources`, one cycle (as a closed
    path) per strongly connected component. Only module-level imports count unless `lazy`."""
    graph: dict[str, set[str]] = {name: set() for name in sources}
    for name, (source, is_package) in sources.items():
        for edge in imports_of(name, source, is_package, sources):
            if (edge.module_level or lazy) and edge.imported in graph and edge.imported != name:
                graph[name].add(edge.imported)
    return [_cycle_in(component, graph) for component in _components(graph) if len(component) > 1]


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), iteratively so deep graphs need no recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return result


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A closed path through the first module of a strongly connected component."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    return component  # unreachable for a real component
