"""The router's forwarding client against stub model servers: pooled connections, a retry on
a connection the server closed, answers framed by the end of the connection, timeouts (504)
and answers that are not HTTP (502)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from guarded_asgi.app import HttpError

from vertex_retrain.backends.local.serving import router_forward
from vertex_retrain.backends.local.serving.endpoints import DeployedModel
from vertex_retrain.backends.local.serving.router_forward import Forwarder

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
Reply = Callable[[int, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _target(port: int) -> DeployedModel:
    return DeployedModel(
        deployed_model_id="7",
        endpoint_display_name="e",
        model_display_name="m",
        model_version_id="1",
        traffic_percentage=100,
        pid=123,
        pid_start_time=None,
        port=port,
        log_path="/tmp/server.log",
        predict_route="/predict",
        health_route="/health",
        deployed_at="",
    )


async def _with_stub(reply: Reply, posts: int, timeout_s: float = 30.0) -> tuple[list, int]:
    """Serve `reply` (called with the connection's number), POST `posts` times; return the
    answers (or errors) and how many connections the stub accepted."""
    accepted = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        try:
            await reply(accepted, reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    forwarder = Forwarder(timeout_s)
    answers: list = []
    try:
        for _ in range(posts):
            try:
                answers.append(await forwarder.post(_target(port), b'{"instances": []}'))
            except HttpError as error:
                answers.append(error)
    finally:
        await forwarder.close()
        server.close()
        await server.wait_closed()
    return answers, accepted


async def _keep_answering(
    number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    while await reader.read(65536):
        writer.write(OK)


def test_forwarder_sends_sequential_requests_over_one_connection() -> None:
    answers, accepted = asyncio.run(_with_stub(_keep_answering, 5))
    assert answers == [(200, b"{}", "application/json")] * 5
    assert accepted == 1


def test_forwarder_retries_once_when_the_server_closed_a_pooled_connection() -> None:
    async def answer_once(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        writer.write(OK)
        await writer.drain()  # then close: the pooled connection is dead

    answers, accepted = asyncio.run(_with_stub(answer_once, 3))
    assert answers == [(200, b"{}", "application/json")] * 3
    assert accepted == 3


def test_forwarder_reads_an_answer_that_ends_with_the_connection() -> None:
    async def unframed(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")

    answers, accepted = asyncio.run(_with_stub(unframed, 2))
    assert answers == [(200, b"all of it", "text/plain")] * 2
    assert accepted == 2  # such a connection is never reused


def test_forwarder_answers_504_when_the_server_does_not_answer_in_time() -> None:
    async def silent(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        await asyncio.sleep(5)

    (error,), _ = asyncio.run(_with_stub(silent, 1, timeout_s=0.2))
    assert isinstance(error, HttpError) and error.status == 504
    assert "deployed model 7" in error.message and "within 0.2 s" in error.message


@pytest.mark.parametrize("garbage", [b"\x16\x03\x01 hello\r\n\r\n", b""])
def test_forwarder_answers_502_for_an_answer_that_is_not_http(garbage: bytes) -> None:
    async def babble(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        writer.write(garbage)

    (error,), _ = asyncio.run(_with_stub(babble, 1))
    assert isinstance(error, HttpError) and error.status == 502
    assert "/tmp/server.log" in error.message


def test_forwarder_skips_an_interim_1xx_answer() -> None:
    async def early_hints(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.05)  # the interim answer arrives alone (RFC 9110 15.2)
        writer.write(OK)
        await reader.read(65536)

    answers, _ = asyncio.run(_with_stub(early_hints, 1))
    assert answers == [(200, b"{}", "application/json")]


def test_forwarder_keeps_no_connection_that_sent_more_than_its_answer() -> None:
    extra = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

    async def talkative(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        writer.write(OK + extra if number == 1 else OK)
        await _keep_answering(number, reader, writer)

    answers, accepted = asyncio.run(_with_stub(talkative, 2))
    assert answers == [(200, b"{}", "application/json")] * 2
    assert accepted == 2  # the first connection is out of step with its requests


def test_forwarder_retries_on_a_new_connection_when_pooled_ones_are_closed() -> None:
    async def scenario() -> tuple[list[tuple[int, bytes, str]], int]:
        accepted = 0
        both_open = asyncio.Event()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal accepted
            accepted += 1
            try:
                await reader.read(65536)
                if accepted == 2:
                    both_open.set()
                await both_open.wait()  # two connections in the pool
                writer.write(OK)
                await reader.read(65536)  # the next request: closed as it arrives
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        target = _target(server.sockets[0].getsockname()[1])
        forwarder = Forwarder(30.0)
        try:
            body = b'{"instances": []}'
            answers = list(await asyncio.gather(*(forwarder.post(target, body) for _ in "ab")))
            answers.append(await forwarder.post(target, body))
        finally:
            await forwarder.close()
            server.close()
            await server.wait_closed()
        return answers, accepted

    answers, accepted = asyncio.run(scenario())
    assert answers == [(200, b"{}", "application/json")] * 3
    assert accepted == 3  # the retry went to a new connection, not a second pooled one


def test_forwarder_answers_502_for_a_head_over_the_answer_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(router_forward, "MAX_ANSWER_BYTES", 65536)

    async def endless_header(
        number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.read(65536)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000)
        await reader.read(65536)  # until the forwarder gives up

    (error,), _ = asyncio.run(_with_stub(endless_header, 1, timeout_s=5.0))
    assert isinstance(error, HttpError) and error.status == 502
    assert "65536 bytes" in error.message
