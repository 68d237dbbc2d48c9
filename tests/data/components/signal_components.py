"""Lightweight components for tests/test_compiled_signals.py (no postponed annotations: KFP
reads the signature's types)."""

from kfp import dsl


@dsl.component(base_image="python:3.11-slim", install_kfp_package=False)
def wait_for_sigterm(marker: str) -> None:
    """Writes its pid to ``marker.ready``, then waits; SIGTERM writes ``marker`` and exits."""
    import os
    import pathlib
    import signal
    import time

    def on_term(signum, frame):
        pathlib.Path(marker).write_text(f"SIGTERM in {os.getpid()}")
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    pathlib.Path(marker + ".ready").write_text(str(os.getpid()))
    time.sleep(120)


@dsl.component(base_image="python:3.11-slim", install_kfp_package=False)
def write_marker(marker: str) -> None:
    """Writes ``ran`` to ``marker``."""
    import pathlib

    pathlib.Path(marker).write_text("ran")
