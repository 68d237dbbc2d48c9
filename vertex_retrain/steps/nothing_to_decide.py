"""The decision on a candidate that is the current champion itself: nothing to decide.

A re-run of the week that made the champion gets its training from the cache: the candidate
is the champion's own model folder. Judging it against itself would only say it "did not
improve (+0.0000)" and file the week as a challenger's; instead the decision says what
happened, promotes nothing and leaves the champion's aliases and traffic as they are (when a
candidate is the champion: :mod:`vertex_retrain.rules.same_model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from vertex_retrain.contracts.evaluation_declaration import EvaluationDeclaration
from vertex_retrain.rules.same_model import same_model_comparison
from vertex_retrain.steps.decision import Decision, decide
from vertex_retrain.steps.paired_bootstrap import Interval

__all__ = ["nothing_to_decide"]


def nothing_to_decide(
    candidate: Mapping[str, float],
    declaration: EvaluationDeclaration,
    *,
    version_id: str,
    references: Mapping[str, Mapping[str, float]] | None = None,
    intervals: Mapping[str, Interval] | None = None,
    force: str = "",
) -> Decision:
    """The decision on a candidate that is the champion (version ``version_id``).

    Nothing is promoted (``is_better`` is false, so the pipeline registers nothing new: the
    registry finds the folder's version again, and it keeps its aliases), and the reason says
    why. The metrics are the candidate's, in both roles (one model). The rule is still
    checked as every run checks it: a metric it names must be there and finite.

    Args:
        candidate: The candidate's metrics.
        declaration: The evaluation declaration.
        version_id: The champion's version.
        references: Each reference's metrics on the same rows, by name.
        intervals: Bootstrap intervals of candidate minus ``reference:<name>``.
        force: A ``force_decision`` given anyway: there is no outcome to override, and the
            reason says so.

    Raises:
        ValueError: As :func:`vertex_retrain.steps.decision.decide` for the candidate.
    """
    checked = decide(candidate, None, declaration, references=references, intervals=intervals)
    moot = f" (force_decision={force!r} has no outcome to override)" if force else ""
    return replace(
        checked,
        is_better=False,
        champion_score=checked.candidate_score,
        reason=(
            f"the candidate is the current champion (version {version_id}): nothing to decide; "
            f"it keeps its aliases and its traffic{moot}"
        ),
        champion_metrics=dict(candidate),
        champion_comparison=same_model_comparison(version_id),
    )
