"""POST /v2/queues/{q}/claims?wait=S: the request waits in the loop until it can claim.

Every backend (ZQ_TEST_BACKENDS). The app runs behind zq.buffered_wsgi as
in a worker (tests/waiting/front.py); waits are short, and each test asserts
what the clients got, never how fast.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from zq.buffered_wsgi import HAND_BACK_KEY

from .front import Client, Front, bodies


@pytest.fixture
def front(storage, clock, project) -> Iterator[Front]:
    served = Front(storage, clock, project)
    try:
        yield served
    finally:
        served.close()


def run(scenario: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_waiting_claim_gets_the_message_posted_after_it_started(front):
    async def scenario():
        waiting = asyncio.create_task(front.claim("q", wait=10, limit=5))
        await front.waiters(1)
        await front.post("q", {"n": 1})
        status, headers, answer = await waiting
        assert status == 201, answer
        assert bodies(answer) == [{"n": 1}]
        assert headers["location"].startswith("/v2/queues/q/claims/")
        assert front.waiting.count == 0

    run(scenario)


def test_nothing_comes_204_once_the_wait_is_over(front):
    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        status, _, answer = await front.claim("q", wait=0.3)
        assert (status, answer) == (204, None)
        assert loop.time() - started >= 0.3  # it waited, holding no thread meanwhile
        assert front.waiting.count == 0

    run(scenario)


def test_without_wait_nothing_waits(front):
    async def scenario():
        for params in ({}, {"wait": 0}, {"wait": "0.0"}):
            status, _, _ = await front.claim("q", **params)
            assert status == 204
        assert front.waiting.count == 0 and front.waiting.queues == {}

    run(scenario)


def test_a_message_already_there_is_claimed_at_once(front):
    async def scenario():
        await front.post("q", {"n": 1})
        status, _, answer = await front.claim("q", wait=10)
        assert status == 201 and bodies(answer) == [{"n": 1}]

    run(scenario)


def test_a_released_claim_wakes_a_waiter(front):
    async def scenario():
        await front.post("q", {"n": 1})
        status, headers, _ = await front.claim("q")
        assert status == 201
        waiting = asyncio.create_task(front.claim("q", wait=10))
        await front.waiters(1)
        status, _, _ = await front.request("DELETE", headers["location"])
        assert status == 204
        status, _, answer = await waiting
        assert status == 201 and bodies(answer) == [{"n": 1}]

    run(scenario)


def test_an_expired_claim_wakes_a_waiter(front, clock):
    async def scenario():
        await front.post("q", {"n": 1})
        assert (await front.claim("q"))[0] == 201
        waiting = asyncio.create_task(front.claim("q", wait=10))
        await front.waiters(1)
        clock.advance(61)  # the claim's ttl (60) passes: no event, the re-check sees it
        status, _, answer = await waiting
        assert status == 201 and bodies(answer) == [{"n": 1}]

    run(scenario)


def test_a_delay_that_ends_wakes_a_waiter(front, clock):
    async def scenario():
        await front.post("q", {"n": 1}, delay=30)
        waiting = asyncio.create_task(front.claim("q", wait=10))
        await front.waiters(1)
        clock.advance(30)
        status, _, answer = await waiting
        assert status == 201 and bodies(answer) == [{"n": 1}]

    run(scenario)


def test_a_redrive_into_the_queue_wakes_a_waiter(front):
    async def scenario():
        await front.request("PUT", "/v2/queues/q", {"_dead_letter_queue": "dlq"})
        [message_id] = await front.post("q", {"n": 1})
        status, headers, _ = await front.claim("q")
        claim_id = headers["location"].rsplit("/", 1)[1]
        status, _, _ = await front.request(
            "POST", f"/v2/queues/q/messages/{message_id}/reject", {"description": "bug"},
            claim_id=claim_id)
        assert status == 204
        assert (await front.stats("dlq"))["total"] == 1
        waiting = asyncio.create_task(front.claim("q", wait=10))
        await front.waiters(1)
        status, _, answer = await front.request("POST", "/v2/queues/dlq/redrive")
        assert status == 200 and answer["moved"] == 1
        status, _, answer = await waiting
        assert status == 201 and bodies(answer) == [{"n": 1}]

    run(scenario)


def test_two_waiters_one_message_exactly_one_gets_it(front):
    async def scenario():
        first = asyncio.create_task(front.claim("q", wait=0.5))
        await front.waiters(1)
        second = asyncio.create_task(front.claim("q", wait=0.5))
        await front.waiters(2)
        await front.post("q", {"n": 1})
        answers = await asyncio.gather(first, second)
        statuses = [status for status, _, _ in answers]
        # Arrival order: the first waiter gets it, the other waits out its time.
        assert statuses == [201, 204]
        assert (await front.stats("q"))["claimed"] == 1

    run(scenario)


def test_waiters_are_served_in_arrival_order(front):
    async def scenario():
        tasks = []
        for n in range(3):
            tasks.append(asyncio.create_task(front.claim("q", wait=10, limit=1)))
            await front.waiters(n + 1)
        for n in range(3):
            await front.post("q", {"n": n})
            status, headers, answer = await tasks[n]
            assert status == 201 and bodies(answer) == [{"n": n}], (n, headers)

    run(scenario)


def test_one_post_of_several_messages_serves_several_waiters(front):
    async def scenario():
        tasks = [asyncio.create_task(front.claim("q", wait=10, limit=1)) for _ in range(3)]
        await front.waiters(3)
        await front.post("q", {"n": 0}, {"n": 1}, {"n": 2})
        answers = await asyncio.gather(*tasks)
        got = sorted(bodies(answer)[0]["n"] for _, _, answer in answers)
        assert got == [0, 1, 2]

    run(scenario)


def test_a_client_that_left_while_waiting_gets_no_claim(front):
    async def scenario():
        client = Client(b"")
        waiting = asyncio.create_task(front.claim("q", client, wait=10))
        await front.waiters(1)
        client.left.set()
        await waiting
        assert front.waiting.count == 0
        await front.post("q", {"n": 1})
        stats = await front.stats("q")
        assert (stats["free"], stats["claimed"]) == (1, 0)

    run(scenario)


def test_a_claim_made_as_its_client_left_is_released_at_once(storage, clock, project):
    """The client leaves while the woken claim runs: what it claimed is free again."""
    served = Front(storage, clock, project)
    client = Client(b"")
    app = served.rsgi.app
    leaving = threading.Event()

    def app_that_loses_its_client(environ, start_response):
        if environ.get(HAND_BACK_KEY):  # the woken attempt: the client goes meanwhile
            loop.call_soon_threadsafe(lambda: (client.left.set(), leaving.set()))
            leaving.wait(5)
        return app(environ, start_response)

    served.rsgi.app = app_that_loses_its_client

    async def scenario():
        nonlocal loop
        loop = asyncio.get_running_loop()
        waiting = asyncio.create_task(served.claim("q", client, wait=10))
        await served.waiters(1)
        await served.post("q", {"n": 1})
        await waiting
        stats = await served.stats("q")
        assert (stats["free"], stats["claimed"]) == (1, 0)
        # Free for the next consumer now, not after the claim's ttl.
        status, _, answer = await served.claim("q")
        assert status == 201 and bodies(answer) == [{"n": 1}]

    loop: Any = None
    try:
        run(scenario)
    finally:
        served.close()
    assert leaving.is_set()


def test_a_stopping_worker_answers_its_waiting_claims_at_once(front):
    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiting = asyncio.create_task(front.claim("q", wait=20))
        await front.waiters(1)
        front.waiting.close()
        status, _, _ = await waiting
        assert status == 204
        assert loop.time() - started < 10
        # A claim arriving while the worker stops answers at once too.
        assert (await front.claim("q", wait=20))[0] == 204

    run(scenario)


def test_beyond_its_capacity_a_worker_answers_at_once(storage, clock, project):
    served = Front(storage, clock, project, capacity=1)

    async def scenario():
        first = asyncio.create_task(served.claim("q", wait=10))
        await served.waiters(1)
        assert (await served.claim("q", wait=10))[0] == 204  # not held
        await served.post("q", {"n": 1})
        assert (await first)[0] == 201

    try:
        run(scenario)
    finally:
        served.close()


def test_the_recheck_is_one_query_per_interval_for_all_waiters(front):
    async def scenario():
        tasks = [asyncio.create_task(front.claim(f"q{n % 3}", wait=0.6)) for n in range(9)]
        await front.waiters(9)
        before = front.recheck.looks
        await asyncio.gather(*tasks)
        looks = front.recheck.looks - before
        # 9 waiters on 3 queues for about 0.6 s at one look per 0.05 s: one
        # query per look, not one per waiter or queue.
        assert 1 <= looks <= 0.6 / 0.05 + 2

    run(scenario)


def test_a_post_wakes_nothing_while_no_claim_asks_to_wait(front):
    async def scenario():
        await front.post("q", {"n": 1})
        assert front.waiting.recent == {} and front.waiting.wakeups == 0
        # A wait spelled with an escape is still a wait the app honours; its
        # 204 is answered at once rather than lost.
        status, _, _ = await front.request("POST", "/v2/queues/empty/claims", {},
                                           query="w%61it=0.2")
        assert status == 204

    run(scenario)


def test_a_claim_with_a_large_body_does_not_wait(front):
    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        body = b'{"ttl": 60' + b" " * 2000 + b"}"  # a valid claim, padded
        status, _, _ = await front.request("POST", "/v2/queues/q/claims", body, wait=10)
        assert status == 204
        assert loop.time() - started < 5  # answered at once, not after its 10 s
        status, _, _ = await front.claim("q", wait=0.1)  # a claim as sent: waits
        assert status == 204

    run(scenario)


def test_the_listeners_start_with_the_first_waiting_claim(front):
    # A worker whose claims never wait hears none of its backend's wake-ups:
    # a listener costs it CPU on every post (docs/benchmarks.md, issue 31).
    async def scenario():
        front.rsgi.__rsgi_init__(asyncio.get_running_loop())  # as granian starts a worker
        await front.post("q", {"n": 1})
        status, _, _ = await front.claim("q", limit=5)
        assert status == 201
        await asyncio.sleep(0.3)  # room for a listener that would start with the worker
        assert front.recheck.listeners == {}
        waiting = asyncio.create_task(front.claim("empty", wait=0.5))
        await front.waiters(1)
        status, _, _ = await waiting
        assert status == 204
        assert list(front.recheck.listeners) == [id(front.storage)]

    run(scenario)
