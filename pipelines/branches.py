"""Names for the group KFP wraps each ``dsl.If``/``dsl.Else`` pair in.

When a ``dsl.Else`` opens, KFP puts the pair under a group of its own whose name is the
compiler's (``condition-branches-6``) and which ``dsl.Else`` offers no argument to name. That
name is what the Vertex AI console and a local run's output show for the group: templates
name it here, after the decision it holds.
"""

from typing import Any

from kfp.dsl import tasks_group


def name_branches(otherwise: Any, name: str) -> None:
    """Shows the If/Else pair that ``otherwise`` closes as ``name``.

    Args:
        otherwise: The ``dsl.Else`` group (``with dsl.Else(...) as otherwise:``).
        name: The display name of the pair, saying what it decides.

    Raises:
        TypeError: ``otherwise`` is not an Else group inside KFP's If/Else wrapper.
    """
    wrapper = getattr(otherwise, "parent_task_group", None)
    if not isinstance(otherwise, tasks_group.Else) or not isinstance(
        wrapper, tasks_group.ConditionBranches
    ):
        raise TypeError(
            f"name_branches takes the group of a `with dsl.Else(...) as group:` block, got "
            f"{type(otherwise).__name__}"
        )
    wrapper.display_name = name
