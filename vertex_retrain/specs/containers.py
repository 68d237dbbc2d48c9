"""The container catalog: Vertex's prebuilt training and prediction images.

The facts (Python, framework, CUDA, support dates, included packages) live in
``containers.yaml`` next to this module, with their sources and the date they were read. This
module loads them into immutable lookups and reads what an image URI says of itself; it has no
rules of its own (those are :mod:`vertex_retrain.specs.package_compat`). Loading is cached per
path, like the machine catalog.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from vertex_retrain.specs.yaml_file import load_yaml_table

DEFAULT_CONTAINERS_PATH = Path(__file__).with_name("containers.yaml")

Kind = Literal["training", "prediction"]

_NAME = re.compile(
    r"(?P<framework>pytorch|tf2?|sklearn|xgboost)-(?P<accel>cpu|gpu|xla|tpu)"
    r"\.(?P<major>\d+)-(?P<minor>\d+)(?:\.(?:py|cp)(?P<py>\d{2,3}))?"
)
_DISTRIBUTIONS = {
    "pytorch": "torch",
    "tf": "tensorflow",
    "tf2": "tensorflow",
    "sklearn": "scikit-learn",
    "xgboost": "xgboost",
}


@dataclass(frozen=True)
class ImageName:
    """What a prebuilt image's name says, whether or not the catalog knows the image.

    Attributes:
        name: The last path part without tag or digest, e.g. ``pytorch-gpu.2-4.py310``.
        distribution: The framework's PyPI name (``torch``, ``tensorflow``...).
        accelerator: ``cpu``, ``gpu``, ``xla`` or ``tpu`` as written in the name.
        version: Framework ``major.minor``.
        python: ``3.10`` from ``py310`` / ``cp310``, or None when the name has no suffix.
    """

    name: str
    distribution: str
    accelerator: str
    version: str
    python: str | None


@dataclass(frozen=True)
class PrebuiltImage:
    """One catalog entry.

    Attributes:
        name: e.g. ``pytorch-gpu.2-4.py310``.
        kind: ``training`` or ``prediction``.
        framework: The framework's PyPI distribution name (``torch``...).
        version: Framework ``major.minor`` (the image carries the latest patch of it).
        python: ``major.minor`` of the image's Python, or None where the sources are silent.
        accelerator: ``cpu``, ``gpu`` or ``tpu``.
        cuda: CUDA version as the sources state it (``12.x``), or None.
        end_of_patch: End of patch and support, or None.
        end_of_availability: End of availability, or None.
        includes: PyPI name -> version the sources state (None: listed without a version).
        sources: Source ids of ``containers.yaml``.
    """

    name: str
    kind: Kind
    framework: str
    version: str
    python: str | None
    accelerator: str
    cuda: str | None
    end_of_patch: _dt.date | None
    end_of_availability: _dt.date | None
    includes: Mapping[str, str | None]
    sources: tuple[str, ...]

    def cited(self, catalog: ContainerCatalog) -> str:
        """``name (containers.yaml sources T1, T2, retrieved 2026-12-01)``: the entry with
        where it comes from, so a reader can look the source up."""
        return (
            f"{self.name} ({catalog.path.name} sources {', '.join(self.sources)}, retrieved "
            f"{catalog.retrieved})"
        )


@dataclass(frozen=True)
class ContainerCatalog:
    """Immutable view of ``containers.yaml``. Build it with :func:`load_containers`."""

    version: int
    retrieved: str
    path: Path
    sources: Mapping[str, str]
    registries: Mapping[str, tuple[str, ...]]
    training: Mapping[str, PrebuiltImage]
    prediction: Mapping[str, PrebuiltImage]

    def is_prebuilt(self, uri: str, kind: Kind = "training") -> bool:
        """Whether ``uri`` lives in one of Google's registries of prebuilt ``kind`` images."""
        base = _without_name(uri)
        return base in self.registries[kind] or base in self.registries.get("legacy", ())

    def lookup(self, uri: str, kind: Kind = "training") -> PrebuiltImage | None:
        """The entry of a prebuilt image URI, or None (another registry or an unknown name)."""
        if not self.is_prebuilt(uri, kind):
            return None
        table = self.training if kind == "training" else self.prediction
        return table.get(image_name(uri))

    def training_images(self, *, framework: str) -> list[PrebuiltImage]:
        """Training images of one framework (``torch``...), newest first, GPU before CPU."""
        found = [i for i in self.training.values() if i.framework == framework]
        return sorted(
            found,
            key=lambda i: (tuple(int(p) for p in i.version.split(".")), i.accelerator == "gpu"),
            reverse=True,
        )


def image_name(uri: str) -> str:
    """The last path part of an image URI without its tag or digest."""
    return uri.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]


def _without_name(uri: str) -> str:
    return uri.split("@", 1)[0].rsplit("/", 1)[0]


def parse_image_name(uri: str) -> ImageName | None:
    """Reads framework, version and Python from a prebuilt image's name.

    Args:
        uri: e.g. ``us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest``.

    Returns:
        What the name says, or None for names of another form (custom images).
    """
    name = image_name(uri)
    match = _NAME.fullmatch(name) or _NAME.match(name)
    if not match:
        return None
    py = match.group("py")
    return ImageName(
        name=name,
        distribution=_DISTRIBUTIONS[match.group("framework")],
        accelerator=match.group("accel"),
        version=f"{match.group('major')}.{match.group('minor')}",
        python=f"{py[0]}.{py[1:]}" if py else None,
    )


def _date(value: Any) -> _dt.date | None:
    return None if value is None else _dt.date.fromisoformat(str(value))


def _images(
    kind: Kind, raw: Mapping[str, Any], package_sets: Mapping[str, Any], known: set[str]
) -> Mapping[str, PrebuiltImage]:
    images = {}
    for name, entry in raw.items():
        includes = entry.get("includes")
        included = package_sets[includes] if isinstance(includes, str) else includes or {}
        sources = tuple(entry["sources"])
        unknown = set(sources) - known
        if unknown:
            raise ValueError(f"{name}: unknown source id(s) {', '.join(sorted(unknown))}")
        images[name] = PrebuiltImage(
            name=name,
            kind=kind,
            framework=str(entry["framework"]),
            version=str(entry["version"]),
            python=None if entry.get("python") is None else str(entry["python"]),
            accelerator=str(entry["accelerator"]),
            cuda=None if entry.get("cuda") is None else str(entry["cuda"]),
            end_of_patch=_date(entry.get("end_of_patch")),
            end_of_availability=_date(entry.get("end_of_availability")),
            includes=MappingProxyType(
                {str(k): None if v is None else str(v) for k, v in included.items()}
            ),
            sources=sources,
        )
    return MappingProxyType(images)


def _parse(raw: Any, path: Path) -> ContainerCatalog:
    sources = {str(k): " ".join(str(v["what"]).split()) for k, v in raw["sources"].items()}
    sets = raw.get("package_sets", {})
    return ContainerCatalog(
        version=int(raw["version"]),
        retrieved=str(raw["retrieved"]),
        path=path,
        sources=MappingProxyType(sources),
        registries=MappingProxyType(
            {str(k): tuple(str(r) for r in v) for k, v in raw["registries"].items()}
        ),
        training=_images("training", raw["training"], sets, set(sources)),
        prediction=_images("prediction", raw["prediction"], sets, set(sources)),
    )


@functools.lru_cache(maxsize=8)
def _load_cached(path: Path) -> ContainerCatalog:
    return load_yaml_table(
        path,
        what="container catalog",
        default=DEFAULT_CONTAINERS_PATH,
        parse=lambda raw: _parse(raw, path),
    )


def load_containers(path: str | Path | None = None) -> ContainerCatalog:
    """Loads the container catalog (cached per path).

    Args:
        path: A catalog YAML file; defaults to the ``containers.yaml`` shipped with the package.

    Returns:
        The immutable catalog.

    Raises:
        ValueError: The file cannot be read or does not have the expected structure.
    """
    return _load_cached(Path(path or DEFAULT_CONTAINERS_PATH).resolve())


__all__ = [
    "DEFAULT_CONTAINERS_PATH",
    "ContainerCatalog",
    "ImageName",
    "PrebuiltImage",
    "image_name",
    "load_containers",
    "parse_image_name",
]
