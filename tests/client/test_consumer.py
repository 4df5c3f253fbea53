"""zq.client.Consumer against the real app in process (ManualClock, injected sleep)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from zq.client import Client, Consumer, describe

WAIT = 10.0  # seconds: the most a test waits for the renewal thread


class Poison(Exception):
    pass


class Flaky(Exception):
    pass


def consumer(transport, project, handler, **options) -> Consumer:
    client = Client("http://zq.test", project=project, transport=transport)
    options.setdefault("sleep", lambda seconds: None)
    return Consumer("http://zq.test", "q", handler, project=project, client=client,
                    **options)


def test_success_deletes_and_failures_are_rejected_with_their_text(client, transport,
                                                                  project):
    client.create_queue("q", {"_dead_letter_queue": "dlq"})
    ids = client.post("q", {"n": 1}, {"n": 2, "poison": True}, {"n": 3, "flaky": True},
                      ttl=3600)
    seen = []

    def handler(message):
        seen.append(message.body["n"])
        if message.body.get("poison"):
            raise Poison(f"cannot parse order {message.body['n']}")
        if message.body.get("flaky") and seen.count(3) == 1:
            raise Flaky("database timeout")

    run = consumer(transport, project, handler, permanent=(Poison,), retry_after=0)
    stats = run.run(until_empty=True, handle_signals=False)
    # 1 deleted; 2 dead lettered at once; 3 retried, then handled.
    assert seen == [1, 2, 3, 3]
    assert (stats.handled, stats.rejected, stats.retried) == (2, 1, 1)
    assert client.stats("q").total == 0
    [dead] = client.list_messages("dlq", include_history=True)
    assert dead.id == ids[1]
    assert dead.history[-1]["reason"] == "rejected"
    assert dead.history[-1]["description"] == "Poison: cannot parse order 2"


def test_a_permanent_failure_without_a_dead_letter_queue_is_retried_not_dropped(
        client, transport, project):
    client.post("q", "x", ttl=3600)
    calls = []

    def handler(message):
        calls.append(message.id)
        if len(calls) == 1:
            raise Poison("bad")

    stats = consumer(transport, project, handler, permanent=(Poison,),
                     retry_after=0).run(until_empty=True, handle_signals=False)
    assert (stats.rejected, stats.retried, stats.handled) == (0, 1, 1)
    assert len(calls) == 2


def test_retry_waits_for_the_queues_backoff(client, transport, project, clock):
    client.create_queue("q", {"_retry_delay": 30, "_retry_backoff": "fixed"})
    client.post("q", "x", ttl=3600)

    def handler(message):
        raise Flaky("later")

    stats = consumer(transport, project, handler).run(max_batches=1, handle_signals=False)
    assert stats.retried == 1
    assert client.claim("q") is None  # delayed by the backoff, not claimable yet
    assert client.stats("q").delayed == 1
    clock.advance(31)
    assert client.claim("q") is not None


def test_until_empty_waits_for_retries_still_backing_off(client, transport, project, clock):
    # The first empty claim is not the end: both messages are delayed by
    # their backoff, and come back.
    client.create_queue("q", {"_retry_delay": 2, "_retry_backoff": "fixed"})
    client.post("q", {"n": 1}, {"n": 2}, ttl=3600)
    failed: set[int] = set()
    waits: list[float] = []

    def handler(message):
        if message.body["n"] not in failed:
            failed.add(message.body["n"])
            raise Flaky("later")

    def sleep(seconds):
        waits.append(seconds)
        clock.advance(seconds)

    stats = consumer(transport, project, handler, sleep=sleep).run(until_empty=True,
                                                                   handle_signals=False)
    assert (stats.retried, stats.handled) == (2, 2)
    assert client.stats("q").total == 0
    assert sum(waits) >= 2


def test_until_empty_waits_for_messages_another_consumer_holds(client, other, transport,
                                                               project, clock):
    client.post("q", "a", "b", ttl=3600)
    held = other.claim("q", limit=2, ttl=60)
    waits: list[float] = []

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 1:
            other.delete_message("q", held.messages[0].id, claim_id=held.id)
        elif len(waits) == 2:
            other.release("q", held.id)  # "b" comes back, for this consumer
        else:
            run.stop()

    run = consumer(transport, project, lambda m: None, sleep=sleep)
    stats = run.run(until_empty=True, handle_signals=False)
    assert (stats.handled, len(waits)) == (1, 2)
    assert client.stats("q").total == 0


def test_an_empty_queue_is_polled_with_an_exponential_idle_wait(transport, project):
    waits: list[float] = []
    run = None

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 7:
            run.stop()

    run = consumer(transport, project, lambda m: None, sleep=sleep, idle_wait=(0.5, 8.0))
    run.run(handle_signals=False)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_the_idle_wait_restarts_after_a_claim(client, transport, project):
    waits: list[float] = []
    run = None

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 2:
            client.post("q", "x", ttl=3600)
        if len(waits) == 3:
            run.stop()

    run = consumer(transport, project, lambda m: None, sleep=sleep)
    run.run(handle_signals=False)
    assert waits == [0.5, 1.0, 0.5]
    assert run.stats.handled == 1


def wait_for(predicate) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_long_handler_keeps_its_claim_by_renewing_it(client, transport, project, clock):
    client.post("q", "slow", ttl=3600)
    run = None

    def handler(message):
        # The handler outlives the claim's 60 s ttl (ManualClock): only the
        # background renewals keep it from lapsing.
        for _ in range(3):
            before = run.stats.renewals
            clock.advance(40)
            wait_for(lambda before=before: run.stats.renewals > before)

    run = consumer(transport, project, handler, claim_ttl=60, renew_interval=0.01)
    stats = run.run(max_batches=1, handle_signals=False)
    assert stats.handled == 1 and stats.renewals >= 3
    assert client.stats("q").total == 0


def test_stop_finishes_the_current_message_and_releases_the_rest(client, transport,
                                                                  project):
    ids = client.post("q", *range(5), ttl=3600)
    seen = []
    run = None

    def handler(message):
        seen.append(message.id)
        if len(seen) == 2:
            run.stop()

    run = consumer(transport, project, handler, batch=5)
    stats = run.run(handle_signals=False)
    assert seen == ids[:2]
    assert (stats.handled, stats.released) == (2, 3)
    stats_now = client.stats("q")
    assert (stats_now.free, stats_now.claimed) == (3, 0)


def test_sigterm_stops_the_loop_cleanly(client, transport, project):
    ids = client.post("q", *range(4), ttl=3600)
    seen = []
    previous = signal.getsignal(signal.SIGTERM)

    def handler(message):
        seen.append(message.id)
        if len(seen) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    assert threading.current_thread() is threading.main_thread()
    stats = consumer(transport, project, handler, batch=4).run()
    assert seen == ids[:1]
    assert (stats.handled, stats.released) == (1, 3)
    assert client.stats("q").free == 3
    # The loop put the previous handler back.
    assert signal.getsignal(signal.SIGTERM) is previous


def test_a_suspected_consumer_releases_its_lapsed_claim_and_goes_on(client, transport,
                                                                     project, clock):
    client.create_queue("q", {"_suspect_lapsed_consumers": True})
    client.post("q", "a", "b", ttl=3600)
    run = consumer(transport, project, lambda m: None)
    client_of_run = run.client
    client_of_run.claim("q", limit=1, ttl=60)  # a claim the consumer "stalled" on
    clock.advance(61)
    # Being suspected is not an empty queue: until_empty goes on after it.
    stats = run.run(until_empty=True, handle_signals=False)
    assert stats.handled == 2 and stats.claims == 1
    assert client.stats("q").total == 0
    assert client.consumers("q")[0].suspected is False


def test_describe_keeps_within_the_servers_cap():
    assert describe(KeyError("order_id")) == "KeyError: 'order_id'"
    long = describe(ValueError("x" * 5000))
    assert len(long) == 1024 and long.endswith("...")


@pytest.mark.parametrize("until_empty", [False, True])
@pytest.mark.parametrize("failure", ["down", "lost"])
def test_an_unreachable_server_is_waited_for_not_spun_on(project, failure, until_empty):
    import httpx

    def answer(request):
        if failure == "lost":
            raise httpx.ConnectError("refused")
        return httpx.Response(503, json={"title": "Service Unavailable", "description": "x"})

    waits: list[float] = []
    run = None

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 3:
            run.stop()

    client = Client("http://zq.test", project=project, transport=httpx.MockTransport(answer))
    run = Consumer("http://zq.test", "q", lambda m: None, project=project, client=client,
                   sleep=sleep)
    # Stats it cannot read are not an empty queue either.
    run.run(until_empty=until_empty, handle_signals=False)
    assert waits == [0.5, 1.0, 2.0]
