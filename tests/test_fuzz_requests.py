"""Fuzzing the prediction request path with hypothesis: instance parsing, the trainer's
server and the endpoint router (in front of it), over real HTTP.

Properties: parsing either returns well-formed values or raises `InstanceError`; every
HTTP request gets an answer, 200 with predictions or a 4xx with an error message, never a
500 and never a dropped connection. `FUZZ_EXAMPLES` scales the runs (default below; the
recorded long runs are in docs/security.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from data.hostile.support import (
    GOOD_BODY,
    GOOD_INSTANCE,
    N_DRINKS,
    post,
    router_over_trainer_server,
    write_tiny_artifact,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainer.predictor import InstanceError, parse_instance
from trainer.serve import RunningServer, start_server

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
# deadline=None: HTTP round trips on a loaded two-core machine vary; liveness is bounded by
# the client's socket timeout instead.
PARSE = settings(max_examples=EXAMPLES or 250, deadline=None)
HTTP = settings(
    max_examples=EXAMPLES or 150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
INT64 = 2**63

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
TIMESTAMPS = (
    st.datetimes().map(lambda when: when.isoformat())
    | st.from_regex(r"\A[0-9T:+\-. Z]{0,30}\Z")
    | st.text(max_size=30)
)
FIELD_VALUES = {
    "member_id": st.integers() | st.sampled_from([11, 12, 13, INT64 - 1, -INT64]) | JSON,
    "store_id": st.sampled_from([1, 2, 3, INT64, -INT64 - 1]) | st.integers() | JSON,
    "timestamp": TIMESTAMPS | JSON,
    "k": st.integers(min_value=-2, max_value=N_DRINKS + 2) | JSON,
}
# Instances that are mostly well formed, with any field missing, wrong or extra.
NEAR_INSTANCES = st.fixed_dictionaries({}, optional={**FIELD_VALUES, "extra": JSON}) | st.builds(
    lambda extra: {**GOOD_INSTANCE, **extra}, st.dictionaries(st.text(max_size=9), JSON)
)
INSTANCES = NEAR_INSTANCES | JSON


@PARSE
@given(INSTANCES, st.integers(min_value=1, max_value=50))
def test_parse_instance_returns_int64_values_or_raises_instance_error(
    instance: Any, max_k: int
) -> None:
    try:
        member, store, seconds, k = parse_instance(instance, "instances[0]", max_k)
    except InstanceError as error:
        assert str(error).startswith("instances[0]: ")
        return
    assert all(type(v) is int and -INT64 <= v < INT64 for v in (member, store, seconds))
    assert type(k) is int and 1 <= k <= max_k
    assert set(instance) <= {"member_id", "store_id", "timestamp", "k"}


BODIES = (
    st.lists(INSTANCES, max_size=5).map(lambda xs: json.dumps({"instances": xs}).encode())
    | JSON.map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=200)
    | st.builds(
        lambda depth, open_, close: open_ * depth + close * depth,
        st.integers(min_value=1, max_value=60_000),
        st.sampled_from([b"[", b'{"a":', b'{"instances":[']),
        st.sampled_from([b"]", b"}", b""]),
    )
)


SERVER_LIMIT = 1 << 20  # trainer.serve's default
ROUTER_LIMIT = 400_000


def _check_answer(status: int, answer: dict[str, Any], *, too_large: bool) -> None:
    if status == 200:
        assert isinstance(answer["predictions"], list)
    else:
        assert status == (413 if too_large else 400), answer
        error = answer["error"]
        message = error["message"] if isinstance(error, dict) else error
        assert isinstance(message, str) and message


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with start_server(write_tiny_artifact(tmp_path_factory.mktemp("fuzz-model"))) as running:
        yield running


@HTTP
@given(body=BODIES)
def test_prediction_server_answers_every_body_with_200_or_400(
    server: RunningServer, body: bytes
) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    _check_answer(*post(port, "/predict", body), too_large=len(body) > SERVER_LIMIT)


# Header values http.client can send: latin-1 text without line breaks.
HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=12,
).map(str.strip)


# Lengths a client may declare. Between SEND_UP_TO and the router's drain cap (64 MiB) an
# honest client would have to send the whole body, which the fuzzer does not.
SEND_UP_TO = 2_000_000
DRAIN_CAP = 64 << 20


def _declared(length: str) -> int | None:
    return int(length) if length.isascii() and length.isdigit() else None


LENGTHS = (
    HEADER_TEXT
    | st.integers(min_value=0, max_value=SEND_UP_TO).map(str)
    | st.integers(min_value=DRAIN_CAP + 1, max_value=10**15).map(str)
).filter(lambda length: not SEND_UP_TO < (_declared(length) or 0) <= DRAIN_CAP)


def _declared_body(length: str, up_to: int) -> bytes:
    """What an honest client sends after this Content-Length: that many bytes, if the
    server reads them (up to `up_to`); beyond, the server answers without reading."""
    size = _declared(length)
    return b" " * size if size is not None and size <= up_to else b""


@HTTP
@given(length=LENGTHS)
def test_prediction_server_answers_every_content_length(server: RunningServer, length: str) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    # The trainer's server answers 413 without reading the body (the router drains it).
    body = _declared_body(length, up_to=SERVER_LIMIT)
    status, answer = post(port, "/predict", body, content_length=length)
    assert status in {400, 411, 413} and answer["error"]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("fuzz-router")
    with router_over_trainer_server(root, max_request_bytes=ROUTER_LIMIT) as handle:
        yield handle


@HTTP
@given(body=BODIES, vertex_route=st.booleans())
def test_router_answers_every_body_with_200_or_400(
    router: Any, body: bytes, vertex_route: bool
) -> None:
    path = "/v1/endpoints/shop%20recs:predict" if vertex_route else "/predict"
    _check_answer(*post(router.port, path, body), too_large=len(body) > ROUTER_LIMIT)


@HTTP
@given(length=LENGTHS)
def test_router_answers_every_content_length(router: Any, length: str) -> None:
    body = _declared_body(length, up_to=SEND_UP_TO)
    status, answer = post(router.port, "/predict", body, content_length=length)
    assert status in {400, 411, 413} and answer["error"]["message"]


def test_fuzzed_servers_still_answer_a_good_request(server: RunningServer, router: Any) -> None:
    # Runs after the fuzz tests in this module (file order): both stayed up.
    assert post(int(server.url.rsplit(":", 1)[1]), "/predict", GOOD_BODY)[0] == 200
    assert post(router.port, "/predict", GOOD_BODY)[0] == 200
