"""zq.client's long poll: claims that ask to wait, and the fall back to polling.

Against a server that ignores ``wait`` (Zaqar: the real app behind a
middleware that drops the parameter and zq's header, so every answer is
the real one) the consumer must notice and poll; against one that honours
it (a stub that holds the request, and sets ``X-Zq-Wait``) it must claim
again at once, without an idle sleep. A real ``zq serve`` is in
tests/e2e/test_client_long_poll.py.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest

from zq.client import Client, Consumer
from zq.client.http import WAIT_HEADER


class ZaqarLike:
    """The WSGI app as Zaqar would answer: ``wait`` ignored, no zq wait header."""

    def __init__(self, app) -> None:
        self.app = app
        self.claim_queries: list[dict[str, str]] = []

    def __call__(self, environ, start_response):
        query = dict(parse_qsl(environ.get("QUERY_STRING", "")))
        if environ["PATH_INFO"].endswith("/claims") and environ["REQUEST_METHOD"] == "POST":
            self.claim_queries.append(dict(query))
        query.pop("wait", None)
        environ = {**environ, "QUERY_STRING": urlencode(query)}

        def strip(status, headers, exc_info=None):
            kept = [(k, v) for k, v in headers if k.lower() != WAIT_HEADER.lower()]
            return start_response(status, kept, exc_info)

        return self.app(environ, strip)


def zaqar_consumer(app, project, handler, **options) -> tuple[Consumer, ZaqarLike]:
    stub = ZaqarLike(app)
    client = Client("http://zaqar.test", project=project,
                    transport=httpx.WSGITransport(app=stub))
    return Consumer("http://zaqar.test", "q", handler, project=project, client=client,
                    **options), stub


def test_the_consumer_waits_by_default_and_says_so_in_its_claims(app, project):
    waits: list[float] = []
    run, stub = zaqar_consumer(app, project, lambda m: None,
                               sleep=lambda s: (waits.append(s), run.stop()))
    assert run.wait == 20.0 and run.long_polling
    run.run(handle_signals=False)
    assert stub.claim_queries[0].get("wait") == "20", stub.claim_queries


def test_against_zaqar_two_early_empty_answers_switch_to_polling(app, project, client):
    waits: list[float] = []
    run = None

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 2:
            client.post("q", "x", ttl=3600)
        if len(waits) == 4:
            run.stop()

    handled = []
    run, stub = zaqar_consumer(app, project, lambda m: handled.append(m.body), sleep=sleep)
    run.run(handle_signals=False)
    # Each early 204 is followed by the idle wait (never a busy loop), the
    # first one too; after the second the claims stop asking to wait.
    assert waits == [0.5, 1.0, 0.5, 1.0]
    assert [q.get("wait") for q in stub.claim_queries] == ["20", "20", None, None, None]
    assert run.server_waits is False and not run.long_polling
    assert handled == ["x"]
    assert run.stats.long_polls == 2


def test_messages_between_the_early_answers_do_not_hide_zaqar(app, project, client):
    # A trickle of messages: a 201 between two early 204s says nothing
    # about wait, so the two 204s still count.
    waits: list[float] = []
    run = None

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 1:
            client.post("q", "x", ttl=3600)
        if len(waits) == 3:
            run.stop()

    run, stub = zaqar_consumer(app, project, lambda m: None, sleep=sleep)
    run.run(handle_signals=False)
    assert [q.get("wait") for q in stub.claim_queries] == ["20", "20", "20", None]
    assert run.server_waits is False


def test_wait_zero_polls_from_the_start(app, project):
    waits: list[float] = []
    run = None

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 2:
            run.stop()

    run, stub = zaqar_consumer(app, project, lambda m: None, sleep=sleep, wait=0)
    run.run(handle_signals=False)
    assert waits == [0.5, 1.0]
    assert all("wait" not in q for q in stub.claim_queries)
    assert run.stats.long_polls == 0


def test_a_negative_wait_is_refused(project):
    with pytest.raises(ValueError):
        Consumer("http://zq.test", "q", lambda m: None, project=project, wait=-1)


class HoldingServer:
    """A stub of a zq that holds empty claims for the wait (scaled down) and says so."""

    def __init__(self, *, early: bool = False) -> None:
        self.early = early  # answer at once, as zq does while it stops
        self.claims: list[httpx.Request] = []
        self.messages: list[str] = []
        self.on_claim = lambda count: None  # called with the number of claims so far

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/stats"):
            return httpx.Response(200, json={"messages": {"free": 0, "claimed": 0,
                                                          "total": 0}})
        self.claims.append(request)
        self.on_claim(len(self.claims))
        wait = float(request.url.params.get("wait", 0))
        headers = {WAIT_HEADER: f"{wait:g}"} if wait else {}
        if self.messages:
            body = self.messages.pop(0)
            return httpx.Response(201, headers={**headers, "Location": "/v2/queues/q/claims/c1"},
                                  json={"messages": [{
                                      "id": "m1", "ttl": 60, "age": 0, "body": body,
                                      "href": "/v2/queues/q/messages/m1?claim_id=c1"}]})
        if wait and not self.early:
            time.sleep(wait)
        return httpx.Response(204, headers=headers)


def holding_consumer(server: HoldingServer, project: str, **options) -> Consumer:
    client = Client("http://zq.test", project=project, transport=httpx.MockTransport(server))
    return Consumer("http://zq.test", "q", lambda m: None, project=project, client=client,
                    **options)


def test_a_held_empty_claim_is_followed_by_the_next_claim_without_a_sleep(project):
    server = HoldingServer()
    sleeps: list[float] = []
    run = holding_consumer(server, project, wait=0.05, sleep=sleeps.append)
    server.on_claim = lambda count: count == 3 and run.stop()
    run.run(handle_signals=False)
    assert sleeps == []  # three held claims, no idle wait in between
    assert run.server_waits is True
    assert [r.url.params["wait"] for r in server.claims] == ["0.05"] * 3


def test_an_early_answer_from_a_waiting_server_is_slept_on_but_keeps_the_long_poll(project):
    # zq answers waiting claims at once while it stops (SIGTERM); the
    # header says it is zq, so the consumer keeps waiting, after a pause.
    server = HoldingServer(early=True)
    sleeps: list[float] = []
    run = None

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 3:
            run.stop()

    run = holding_consumer(server, project, wait=20, sleep=sleep)
    run.run(handle_signals=False)
    assert sleeps == [0.5, 1.0, 2.0]
    assert run.long_polling and run.server_waits is True
    assert all(r.url.params["wait"] == "20" for r in server.claims)


def test_until_empty_does_not_wait_on_an_empty_queue(project):
    server = HoldingServer()
    run = holding_consumer(server, project, wait=20, sleep=lambda s: None)
    started = time.monotonic()
    run.run(until_empty=True, handle_signals=False)
    assert time.monotonic() - started < 5
    assert [r.url.params.get("wait") for r in server.claims] == [None]


def test_until_empty_waits_for_what_is_left_then_returns(app, project, client, clock):
    # A message held by another consumer: the consumer's next claim waits
    # (here: on the in-process app, whose answer decides the rest).
    client.post("q", "a", ttl=3600)
    held = client.claim("q", limit=1, ttl=60)
    calls = []

    def sleep(seconds):
        calls.append(seconds)
        client.release("q", held.id)

    run, stub = zaqar_consumer(app, project, lambda m: None, sleep=sleep)
    stats = run.run(until_empty=True, handle_signals=False)
    assert stats.handled == 1
    assert stub.claim_queries[0].get("wait") is None  # the first claim never waits
    assert stub.claim_queries[1].get("wait") == "20"  # something was left: wait for it
    assert client.stats("q").total == 0


def test_sigterm_cuts_a_waiting_claim_short(project):
    server = HoldingServer()
    run = holding_consumer(server, project, wait=30)
    previous = signal.getsignal(signal.SIGTERM)
    assert threading.current_thread() is threading.main_thread()
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    started = time.monotonic()
    timer.start()
    try:
        stats = run.run()
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10  # not the 30 s the claim asked
    assert run.stopping and stats.long_polls == 1
    assert signal.getsignal(signal.SIGTERM) is previous


def test_stats_and_consumers_carry_the_waiting_claims(config, storage, clock, project):
    from zq.api import create_app
    from zq.metrics.waiting import WaitingCensus

    census = WaitingCensus()
    app = create_app(config, storage=storage, clock=clock, waiting=census)
    with Client("http://zq.test", project=project,
                transport=httpx.WSGITransport(app=app)) as client:
        assert client.stats("q").waiting == 0
        census.started(project, "q", "c1")
        assert client.stats("q").waiting == 1
        [row] = client.consumers("q")
        assert (row.client_id, row.waiting, row.last_claim) == ("c1", 1, None)
    # Zaqar's stats have no such field.
    with Client("http://zaqar.test", project=project,
                transport=httpx.MockTransport(lambda request: httpx.Response(
                    200, json={"messages": {"free": 0, "claimed": 0, "total": 0}}))) as zaqar:
        assert zaqar.stats("q").waiting is None
