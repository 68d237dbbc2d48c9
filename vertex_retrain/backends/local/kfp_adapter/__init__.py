"""Everything that reaches into kfp.local: task runs with Vertex's caching and Vertex-only steps,
the run's times, and reading each task's outputs. Nothing else in the backend touches kfp's
internals, so a kfp upgrade is checked here."""
