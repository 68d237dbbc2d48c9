"""Local hyperparameter tuning: a Vertex ``StudySpec`` read for Optuna, trials run as local jobs."""
