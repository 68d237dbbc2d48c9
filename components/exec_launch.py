"""The compiled command of a lightweight component, made to pass signals to Python.

KFP compiles a lightweight component to ``sh -ec '... python3 -m kfp.dsl.executor_main ...'``.
The shell stays the container's first process and Python runs as its child. dash, the
``/bin/sh`` of Debian-based images, does not pass SIGTERM on to a running child: when Vertex
cancels a pipeline it signals the first process, the shell, and the launcher never hears it.
GCPC's cancellation handler (which cancels the CustomJob or tuning job) then never runs, and
the job keeps running and billing.

:func:`with_exec_launcher` rewrites the compiled spec so the shell ``exec``s Python instead:
Python replaces the shell as the container's first process and receives the signal itself. It
is a pure transformation of the compiled spec (as
:func:`vertex_retrain.components.image.with_component_image`), so the Python definitions stay
KFP's own and kfp.local, which runs components from those definitions (and, given this
command, still finds ``kfp.dsl.executor_main`` and ``python3`` in it), is unaffected.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from kfp import dsl

from .image import current_image, register

EXECUTOR_MODULE = "kfp.dsl.executor_main"
"""The module KFP's lightweight components run."""

# `[VAR=value ...] python3 -m kfp.dsl.executor_main`, not yet exec'd.
_LAUNCH = re.compile(
    r"(?P<indent>^|\n)(?P<assign>(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)"
    r"(?P<python>python3?\s+-m\s+kfp\.dsl\.executor_main\b)"
)
# kfp's optional `pip install ... && "$0" "$@"`: the shell that installs hands over too.
_HAND_OVER = re.compile(r'&&\s+"\$0"\s+"\$@"')


def exec_script(script: str) -> str:
    """Returns a component's shell script with the executor (and any hand-over) ``exec``'d.

    Args:
        script: The ``sh -c`` / ``sh -ec`` program text.

    Returns:
        The script, unchanged when it already execs or launches no executor.
    """
    script = _LAUNCH.sub(r"\g<indent>\g<assign>exec \g<python>", script)
    return _HAND_OVER.sub('&& exec "$0" "$@"', script)


def with_exec_launcher(pipeline_spec: dict[str, Any]) -> dict[str, Any]:
    """Returns a copy of a compiled spec whose lightweight components ``exec`` their executor.

    Only ``sh -c`` / ``sh -ec`` commands are rewritten; container components (GCPC's ops,
    ``python3 -u -m ...`` commands) already run their program as the first process.

    Args:
        pipeline_spec: The compiled pipeline or component spec as a dict.

    Returns:
        The updated copy.
    """
    updated = copy.deepcopy(pipeline_spec)
    for executor in updated.get("deploymentSpec", {}).get("executors", {}).values():
        command = executor.get("container", {}).get("command")
        if not isinstance(command, list):
            continue
        for index, part in enumerate(command[:-1]):
            is_shell = part in ("sh", "/bin/sh", "bash", "/bin/bash")
            if is_shell and command[index + 1] in ("-c", "-ec") and index + 2 < len(command):
                program = command[index + 2]
                if isinstance(program, str):
                    command[index + 2] = exec_script(program)
    return updated


def exec_launched(component: Any) -> Any:
    """Rewrites one component's own command so its shell ``exec``s the executor.

    Done on the component itself, not only on our compiled YAML, so a pipeline another team
    compiles from our Python components with plain ``kfp.compiler`` can be cancelled too.

    Args:
        component: A ``@dsl.component`` (a KFP ``PythonComponent``).

    Returns:
        The same component, its container command rewritten in place.
    """
    container = component.component_spec.implementation.container
    command = list(container.command or [])
    for index, part in enumerate(command[:-2]):
        if part in ("sh", "/bin/sh", "bash", "/bin/bash") and command[index + 1] in ("-c", "-ec"):
            program = command[index + 2]
            if isinstance(program, str):
                command[index + 2] = exec_script(program)
    container.command = command
    return component


def lightweight_component(func: Callable[..., Any]) -> Any:
    """``@dsl.component`` as every vertex-retrain component is declared.

    The component image is the placeholder until ``vertex-retrain compile
    --component-image`` or :func:`vertex_retrain.components.set_component_image` sets it,
    the image already carries kfp (nothing is pip-installed at run time), and the shell
    ``exec``s the executor so a cancelled task's SIGTERM reaches Python.
    """
    return register(
        exec_launched(dsl.component(func, base_image=current_image(), install_kfp_package=False))
    )
