"""Limits a client cannot get around: chunked bodies, paging and batch sizes."""

from __future__ import annotations

import io
import uuid

import falcon.testing
import pytest

from tests.api.helpers import assert_error


class CountingInput(io.BytesIO):
    """A wsgi.input that remembers how many bytes the app read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk


def chunked_post(app, project: str, path: str, body: bytes):
    """Send ``body`` without Content-Length, as a chunked request arrives in WSGI."""
    environ = falcon.testing.create_environ(
        path=path, method="POST",
        headers={"Client-ID": str(uuid.uuid4()), "X-Project-ID": project,
                 "Content-Type": "application/json", "Transfer-Encoding": "chunked"},
    )
    environ.pop("CONTENT_LENGTH", None)
    stream = CountingInput(body)
    environ["wsgi.input"] = stream
    start = falcon.testing.StartResponseMock()
    result = falcon.testing.Result(app(environ, start), start.status, start.headers)
    return result, stream


def test_chunked_bodies_are_read(app, api):
    result, _ = chunked_post(app, api.project, "/v2/queues/q/messages",
                             b'{"messages": [{"body": "chunked"}]}')
    assert result.status_code == 201, result.text
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 1


def test_chunked_bodies_are_cut_off_past_the_limit(app, api, config):
    cap = config.limits.max_request_body
    result, stream = chunked_post(app, api.project, "/v2/queues/q/purge", b" " * (4 * cap))
    assert_error(result, 400, "larger than")
    assert stream.taken <= cap + 1


def test_chunked_message_posts_keep_their_own_cap(app, api, config):
    cap = config.limits.max_messages_post_size
    body = b'{"messages": [{"body": "' + b"x" * cap + b'"}]}'
    result, stream = chunked_post(app, api.project, "/v2/queues/q/messages", body)
    assert_error(result, 400, "too large")
    assert stream.taken <= cap + 1


@pytest.mark.parametrize("method, path", [
    ("GET", "/v2/queues"),
    ("GET", "/v2/queues/q/messages"),
    ("POST", "/v2/queues/q/claims"),
])
def test_page_and_batch_sizes_are_bounded(api, method, path):
    assert_error(api.request(method, path, params={"limit": 21}, json={}), 400, "1 and 20")
    assert_error(api.request(method, path, params={"limit": 0}, json={}), 400, "1 and 20")


def test_pop_and_ids_are_bounded(api):
    assert_error(api.delete("/v2/queues/q/messages", params={"pop": 21}), 400, "20")
    ids = ",".join(uuid.uuid4().hex for _ in range(21))
    assert_error(api.get("/v2/queues/q/messages", params={"ids": ids}), 400, "20")
