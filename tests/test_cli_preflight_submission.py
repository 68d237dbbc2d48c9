"""``preflight`` never calls a pipeline ready to submit without what ``run`` refuses to submit
it without: a runtime service account and a pipeline root, with or without ``--project``."""

from __future__ import annotations

import pytest

from tests.examples import DRINK_SHOPS
from tests.preflight_flags import SUBMISSION_FLAGS
from vertex_retrain.cli.main import main

EXPERIMENT = f"{DRINK_SHOPS / 'pipelines.py'}:experiment"
IMAGE = "europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:1"
ACCOUNT, ROOT = SUBMISSION_FLAGS[:2], SUBMISSION_FLAGS[2:]


def _preflight(*flags: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    argv = ["preflight", EXPERIMENT, "--component-image", IMAGE, "--location", "europe-west4"]
    code = main([*argv, *flags])
    return code, capsys.readouterr().out.splitlines()


def test_preflight_without_account_and_root_is_not_ready_naming_each_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines = _preflight(capsys=capsys)
    assert code == 1
    assert lines[0].endswith(": not ready: --service-account and --pipeline-root not given")
    assert "ready to submit" not in lines[0]
    errors = [line for line in lines if line.startswith("  error: ")]
    assert [line.split()[1] for line in errors] == ["--service-account", "--pipeline-root"]
    assert "--service-account NAME@PROJECT.iam.gserviceaccount.com" in errors[0]
    assert "--pipeline-root gs://BUCKET/pipeline-root" in errors[1]


@pytest.mark.parametrize(
    ("given", "missing"), [(ACCOUNT, "--pipeline-root"), (ROOT, "--service-account")]
)
def test_preflight_with_one_of_account_and_root_names_the_other(
    given: tuple[str, ...], missing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = _preflight(*given, capsys=capsys)
    assert code == 1 and lines[0].endswith(f": not ready: {missing} not given")


def test_preflight_with_account_and_root_is_ready(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _preflight(*SUBMISSION_FLAGS, capsys=capsys)
    assert code == 0 and lines[0].endswith(": ready to submit"), lines


def test_preflight_with_another_error_too_would_fail_on_vertex(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines = _preflight("--param", "machine_type=n1-huge-3", capsys=capsys)
    assert code == 1 and lines[0].endswith(": would fail on Vertex"), lines
