"""python-zaqarclient's ``Queue.signed_url`` and its 'signed-url' auth backend, for real.

The app (token auth, a signing key) is served by wsgiref in a thread; the
owner uses zaqarclient with a zq token (its keystone backend sends a given
token as X-Auth-Token without asking Keystone), the holder of the signed
URL uses zaqarclient with nothing but the signed URL.
"""

from __future__ import annotations

import threading
import time
import wsgiref.simple_server
from collections.abc import Iterator

import pytest
from zaqarclient.queues.v2 import client as zaqar
from zaqarclient.transport import errors as zaqar_errors

from zq.clock import ManualClock


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def clock() -> ManualClock:
    # zaqarclient computes expiries from the wall clock: start the server's there.
    return ManualClock(start=time.time())


@pytest.fixture
def url(tenants) -> Iterator[str]:
    server = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, tenants.app, handler_class=QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def token_client(url: str, api) -> zaqar.Client:
    options = {"os_auth_token": api.token, "os_project_id": api.project}
    return zaqar.Client(url, version=2,
                        conf={"auth_opts": {"backend": "keystone", "options": options}})


def signed_url_client(url: str, signed: dict) -> zaqar.Client:
    options = {**signed, "os_project_id": signed["project"]}
    return zaqar.Client(url, version=2,
                        conf={"auth_opts": {"backend": "signed-url", "options": options}})


def test_signed_url_works_with_python_zaqarclient(tenants, url, clock):
    owner = token_client(url, tenants.a).queue("jobs")
    owner.post([{"body": {"n": 1}, "ttl": 600}, {"body": {"n": 2}, "ttl": 600}])
    signed = owner.signed_url(paths=["messages", "claims"],
                              methods=["GET", "POST", "DELETE"], ttl_seconds=3600)
    assert signed["project"] == tenants.a.project
    assert sorted(signed["paths"]) == ["/v2/queues/jobs/claims", "/v2/queues/jobs/messages"]

    queue = signed_url_client(url, signed).queue("jobs", auto_create=False)
    assert sorted(m.body["n"] for m in queue.messages()) == [1, 2]
    queue.post({"body": {"n": 3}, "ttl": 600})
    claim = queue.claim(ttl=60, grace=60, limit=2)
    claimed = list(claim)
    assert len(claimed) == 2
    claimed[0].delete()
    assert owner.stats["messages"]["total"] == 2

    with pytest.raises(zaqar_errors.ForbiddenError):
        queue.stats  # noqa: B018  (not signed: stats)
    with pytest.raises(zaqar_errors.ForbiddenError):
        claim.update(ttl=120)  # not signed: PATCH
    other = signed_url_client(url, signed).queue("other", auto_create=False)
    with pytest.raises(zaqar_errors.ForbiddenError):
        list(other.messages())

    tampered = signed_url_client(url, {**signed, "methods": ["GET", "POST", "DELETE", "PATCH"]})
    with pytest.raises(zaqar_errors.ForbiddenError):
        list(tampered.queue("jobs", auto_create=False).messages())

    # Project B never saw any of it.
    assert token_client(url, tenants.b).queue("jobs", auto_create=False).stats[
        "messages"]["total"] == 0

    # The client computed the expiry from the wall clock: allow it some slack.
    clock.advance(3590)
    list(queue.messages())  # still valid
    clock.advance(20)
    with pytest.raises(zaqar_errors.ForbiddenError):
        list(queue.messages())
