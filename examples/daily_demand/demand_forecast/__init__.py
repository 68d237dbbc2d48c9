"""demand_forecast: a daily demand forecaster, the second example of vertex-retrain.

Units sold per store, item and day, forecast by a scikit-learn gradient-boosted regressor on
calendar, price and promotion features and on lags from the training days. The modules are
the four entry points a team writes for the library's weekly template, and their helpers:

- ``demand_forecast.data``: a seeded synthetic sales generator (``generate``, ``append``);
- ``demand_forecast.task``: training (``--data=<prepared dataset>``, writes AIP_MODEL_DIR);
- ``demand_forecast.evaluate``: scores candidate, champion and the seasonal naive reference;
- ``demand_forecast.serve``: a prediction server on Vertex's custom-container contract.

The package never imports vertex_retrain: the contracts it honours (flags, files, environment
variables) are written down in the library's docs/components.md and repeated here.
"""

__version__ = "0.1.0"
