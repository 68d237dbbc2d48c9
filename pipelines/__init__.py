"""The pipelines (``weekly_retraining``, ``train_only``), the start they share (``data_week``),
their defaults, the pipeline registry (``catalog``) and the declared schedules. Command-line
code lives in :mod:`vertex_retrain.cli`.
"""
