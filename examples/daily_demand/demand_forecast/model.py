"""The saved model: a scikit-learn regressor and the profile its features need.

A model folder (AIP_MODEL_DIR) holds::

    model.joblib    the fitted HistGradientBoostingRegressor (joblib, i.e. a pickle)
    model.json      format, scikit-learn version, features, hyperparameters, the training
                    days and data, the selection metrics, and the feature profile

Loading ``model.joblib`` unpickles it, which can run code: load models only from folders
your own jobs write. A pickle is bound to the scikit-learn release that wrote it, so
:func:`load_model` refuses a model written by another scikit-learn minor version rather
than predict with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from demand_forecast.dataset import Sales
from demand_forecast.features import FEATURES, History, Profile, sales_features
from demand_forecast.paths import atomic_write, atomic_write_json

MODEL_FORMAT = "demand-forecast-model/v1"
REGRESSOR_FILE = "model.joblib"
METADATA_FILE = "model.json"


@dataclass(frozen=True)
class DemandModel:
    """A fitted regressor with its feature profile and metadata."""

    regressor: Any
    profile: Profile
    metadata: dict[str, Any]

    def predict_matrix(self, features: np.ndarray) -> np.ndarray:
        """Units for each feature row; never negative."""
        if features.shape[0] == 0:
            return np.zeros(0)
        return np.clip(self.regressor.predict(features), 0.0, None)

    def predict_sales(self, sales: Sales, history: History) -> np.ndarray:
        """Units for each row of ``sales`` (lags from ``history``)."""
        return self.predict_matrix(sales_features(self.profile, sales, history))


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def save_model(model: DemandModel, folder: Path) -> None:
    """Writes ``model.joblib`` then ``model.json`` (each atomically) into ``folder``."""
    import joblib

    atomic_write(folder / REGRESSOR_FILE, lambda handle: joblib.dump(model.regressor, handle))
    atomic_write_json(
        folder / METADATA_FILE,
        {**model.metadata, "format": MODEL_FORMAT, "profile": model.profile.to_json()},
    )


def load_model(folder: Path) -> DemandModel:
    """Loads a model folder written by :func:`save_model`.

    Raises:
        FileNotFoundError: A file is missing.
        ValueError: Another format, or another scikit-learn minor version than this one.
    """
    import joblib
    import sklearn

    metadata_path = folder / METADATA_FILE
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder {folder} not found")
    if not metadata_path.is_file() or not (folder / REGRESSOR_FILE).is_file():
        found = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
        raise FileNotFoundError(
            f"{folder} is not a demand_forecast model folder: it needs {REGRESSOR_FILE} and "
            f"{METADATA_FILE} (found: {found})"
        )
    metadata: dict[str, Any] = json.loads(metadata_path.read_text(encoding="utf-8"))
    if metadata.get("format") != MODEL_FORMAT:
        raise ValueError(
            f"{metadata_path}: format {metadata.get('format')!r}; expected {MODEL_FORMAT!r}"
        )
    written_by = str(metadata.get("sklearn_version", "?"))
    if _minor(written_by) != _minor(sklearn.__version__):
        raise ValueError(
            f"{folder} was written by scikit-learn {written_by}; this is "
            f"{sklearn.__version__}. Load it with scikit-learn {_minor(written_by)}.x "
            "(a pickle may predict wrongly under another release)"
        )
    if list(metadata.get("features", [])) != list(FEATURES):
        raise ValueError(
            f"{metadata_path}: features {metadata.get('features')}; this code computes "
            f"{list(FEATURES)}"
        )
    regressor = joblib.load(folder / REGRESSOR_FILE)
    profile = Profile.from_json(metadata.pop("profile"))
    return DemandModel(regressor, profile, metadata)


def fit_regressor(
    features: np.ndarray, units: np.ndarray, hyperparameters: Mapping[str, Any]
) -> Any:
    """A HistGradientBoostingRegressor with a Poisson loss (units are counts), fitted.

    Args:
        features: Training rows (see :data:`demand_forecast.features.FEATURES`).
        units: Units sold per row.
        hyperparameters: ``learning_rate``, ``max_iter``, ``max_leaf_nodes``,
            ``min_samples_leaf``, ``l2_regularization`` and ``seed``.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor

    from demand_forecast.features import CATEGORICAL

    regressor = HistGradientBoostingRegressor(
        loss="poisson",
        learning_rate=float(hyperparameters["learning_rate"]),
        max_iter=int(hyperparameters["max_iter"]),
        max_leaf_nodes=int(hyperparameters["max_leaf_nodes"]),
        min_samples_leaf=int(hyperparameters["min_samples_leaf"]),
        l2_regularization=float(hyperparameters["l2_regularization"]),
        categorical_features=list(CATEGORICAL),
        # Early stopping would hold out a random part of the days: the selection days
        # are the held-out part, and the run must be repeatable.
        early_stopping=False,
        random_state=int(hyperparameters["seed"]),
    )
    return regressor.fit(features, units)
