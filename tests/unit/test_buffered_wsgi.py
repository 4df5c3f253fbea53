"""zq.buffered_wsgi without granian: environ, body reception and its bounds, answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from types import SimpleNamespace
from typing import Any

import falcon
import pytest

from zq import buffered_wsgi
from zq.buffered_wsgi import Answers, BufferedWSGI, environ_of


class Headers:
    """granian's RSGIHeaders as far as zq uses them: lower-case names, repeats kept."""

    def __init__(self, *pairs: tuple[str, str]) -> None:
        self.pairs = list(pairs)

    def get(self, name: str, default: Any = None) -> Any:
        return next((value for key, value in self.pairs if key == name), default)

    def __contains__(self, name: str) -> bool:
        return any(key == name for key, _ in self.pairs)

    def items(self) -> list[tuple[str, str]]:
        return self.pairs


class Protocol:
    """An RSGI protocol whose body arrives in ``chunks``, then stalls if ``stall``."""

    def __init__(self, chunks: Iterable[bytes] = (), stall: bool = False) -> None:
        self.chunks = list(chunks)
        self.stall = stall
        self.received = 0
        self.answer: tuple[int, list[tuple[str, str]], bytes] | None = None

    async def __call__(self) -> bytes:
        return b"".join([chunk async for chunk in self])

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.received += len(chunk)
            yield chunk
        if self.stall:
            await asyncio.Event().wait()

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.answer = (status, headers, body)


def scope(method: str = "GET", path: str = "/", *headers: tuple[str, str]) -> Any:
    return SimpleNamespace(proto="http", http_version="1.1", server="127.0.0.1:8888",
                           client="127.0.0.2:50000", scheme="http", method=method, path=path,
                           query_string="a=%C3%A9", headers=Headers(*headers))


def run(front: BufferedWSGI, request: Any, protocol: Protocol) -> tuple[int, dict, bytes]:
    try:
        asyncio.run(front.__rsgi__(request, protocol))
    finally:
        front.close()
    assert protocol.answer is not None
    status, headers, body = protocol.answer
    return status, {k.lower(): v for k, v in headers}, body


class Echo:
    """A falcon resource answering what the app saw of the request."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        resp.media = {"path": req.path, "body": req.stream.read().decode(),
                      "length": req.content_length}

    on_get = on_post


def echo_app() -> falcon.App:
    app = falcon.App()
    app.add_route("/{anything}", Echo())
    return app


def test_the_environ_follows_pep_3333() -> None:
    environ = environ_of(scope("POST", "/queues/\u00e9\u20ac", ("content-type", "application/json"),
                               ("content-length", "2"), ("x-roles", "a"), ("x-roles", "b")),
                         b"{}")
    assert environ["PATH_INFO"] == "/queues/\u00e9\u20ac".encode().decode("latin-1")
    assert environ["QUERY_STRING"] == "a=%C3%A9"
    assert environ["CONTENT_TYPE"] == "application/json"
    assert environ["CONTENT_LENGTH"] == "2"
    assert environ["HTTP_X_ROLES"] == "a,b"  # a repeated header is one, comma separated
    assert (environ["SERVER_NAME"], environ["SERVER_PORT"]) == ("127.0.0.1", "8888")
    assert environ["REMOTE_ADDR"] == "127.0.0.2"
    assert environ["wsgi.input"].read() == b"{}"


def test_header_names_keep_their_environ_keys_and_made_up_ones_stay_bounded() -> None:
    many = [(f"x-made-up-{n}", "v") for n in range(buffered_wsgi.ENVIRON_KEYS_KEPT + 50)]
    for _ in range(2):
        environ = environ_of(scope("GET", "/", ("content-length", "0"), ("client-id", "c"),
                                   *many), b"")
        assert environ["CONTENT_LENGTH"] == "0" and environ["HTTP_CLIENT_ID"] == "c"
        assert all(environ[f"HTTP_X_MADE_UP_{n}"] == "v" for n in range(len(many)))
    assert len(buffered_wsgi._environ_keys) <= buffered_wsgi.ENVIRON_KEYS_KEPT


def test_a_request_reaches_the_app_whole() -> None:
    protocol = Protocol([b'{"a"', b": 1}"])
    status, headers, body = run(
        BufferedWSGI(echo_app(), threads=1, body_timeout=5, max_body=100),
        scope("POST", "/\u00e9", ("content-length", "8")), protocol)
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"path": "/\u00e9", "body": '{"a": 1}', "length": 8}


def test_a_body_announced_too_large_is_never_received() -> None:
    protocol = Protocol([b"x" * 200])
    status, _, body = run(BufferedWSGI(echo_app(), threads=1, body_timeout=5, max_body=100),
                          scope("POST", "/x", ("content-length", "200")), protocol)
    assert protocol.received == 0
    assert status == 200 and json.loads(body)["body"] == ""  # zq's app refuses it (413)


def test_a_chunked_body_is_received_to_one_byte_past_the_limit() -> None:
    protocol = Protocol([b"x" * 60] * 10)
    _, _, body = run(BufferedWSGI(echo_app(), threads=1, body_timeout=5, max_body=100),
                     scope("POST", "/x", ("transfer-encoding", "chunked")), protocol)
    assert protocol.received == 120  # two chunks: 101 bytes or more stops the reading
    assert len(json.loads(body)["body"]) == 120


def test_a_stalled_body_is_answered_408_at_the_timeout() -> None:
    protocol = Protocol([b"["], stall=True)
    status, headers, body = run(
        BufferedWSGI(echo_app(), threads=1, body_timeout=0.05, max_body=100),
        scope("POST", "/x", ("content-length", "100")), protocol)
    assert status == 408
    assert headers["connection"] == "close"
    assert json.loads(body)["title"] == "Request Timeout"


def test_an_app_that_raises_answers_500_in_json(caplog: pytest.LogCaptureFixture) -> None:
    def broken(environ: dict, start_response: Any) -> list[bytes]:
        raise RuntimeError("boom")

    status, _, body = run(BufferedWSGI(broken, threads=1, body_timeout=5, max_body=100),
                          scope("GET", "/x"), Protocol())
    assert status == 500
    assert set(json.loads(body)) == {"title", "description"}
    assert "boom" not in body.decode()
    assert "The app failed on GET /x" in caplog.text


def test_an_app_answer_given_as_an_iterator_is_joined_and_closed() -> None:
    closed = []

    class Answer:
        def __iter__(self):
            yield b"a"
            yield b"b"

        def close(self) -> None:
            closed.append(True)

    def app(environ: dict, start_response: Any) -> Answer:
        start_response("201 Created", [("X-A", "1")])
        return Answer()

    status, headers, body = run(BufferedWSGI(app, threads=1, body_timeout=5, max_body=100),
                                scope("GET", "/x"), Protocol())
    assert (status, headers, body, closed) == (201, {"x-a": "1"}, b"ab", [True])


def test_answers_wake_the_loop_once_for_all_answered_before_it_runs() -> None:
    loop = asyncio.new_event_loop()
    try:
        answers = Answers(loop)
        wakeups = []
        schedule = loop.call_soon_threadsafe
        loop.call_soon_threadsafe = lambda *a: wakeups.append(a) or schedule(*a)  # type: ignore
        first = [loop.create_future() for _ in range(5)]
        for future in first:
            answers.add(future)
        loop.run_until_complete(asyncio.wait(first))
        assert len(wakeups) == 1
        # Once the pending wake-up has run, the next answer wakes the loop again.
        later = loop.create_future()
        answers.add(later)
        loop.run_until_complete(later)
        assert len(wakeups) == 2
    finally:
        loop.close()


def test_concurrent_requests_each_end_after_their_own_answer() -> None:
    front = BufferedWSGI(echo_app(), threads=4, body_timeout=5, max_body=100)
    protocols = [Protocol([f'"{n}"'.encode()]) for n in range(200)]

    async def one(n: int, protocol: Protocol) -> None:
        await front.__rsgi__(scope("POST", f"/{n}", ("content-length", str(len(f'"{n}"')))),
                             protocol)
        # granian answers 500 to a coroutine that ends before its response.
        assert protocol.answer is not None

    async def every() -> None:
        await asyncio.gather(*(one(n, p) for n, p in enumerate(protocols)))

    try:
        asyncio.run(every())
    finally:
        front.close()
    for n, protocol in enumerate(protocols):
        assert protocol.answer is not None
        assert json.loads(protocol.answer[2])["body"] == f'"{n}"'


def test_at_most_max_active_requests_receive_bodies_at_once() -> None:
    # granian takes thousands of requests per worker to make room for waiting
    # claims; the others are still received and served max_active at a time,
    # so the bodies held in memory stay bounded.
    front = BufferedWSGI(echo_app(), threads=4, body_timeout=5, max_body=100, max_active=2)
    protocols = [Protocol([b'"x"'], stall=n < 2) for n in range(3)]

    async def every() -> None:
        stalled = [asyncio.create_task(front.__rsgi__(
            scope("POST", "/x", ("transfer-encoding", "chunked")), p)) for p in protocols[:2]]
        await asyncio.sleep(0.05)
        third = asyncio.create_task(front.__rsgi__(
            scope("POST", "/x", ("content-length", "3")), protocols[2]))
        await asyncio.sleep(0.1)
        assert protocols[2].received == 0 and protocols[2].answer is None  # not let in yet
        for task in stalled:
            task.cancel()
        await third
        assert protocols[2].answer is not None and protocols[2].answer[0] == 200

    try:
        asyncio.run(every())
    finally:
        front.close()
