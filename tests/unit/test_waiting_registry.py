"""zq.waiting.waiters.WaitingClaims alone: who a wake-up picks, and what happens next."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from zq.waiting.waiters import CLOSING, GONE, TIMEOUT, WAKE, WaitingClaims

KEY = ("p", "q")


def run(scenario: Callable[[WaitingClaims], Coroutine[Any, Any, None]], capacity: int = 10
        ) -> None:
    async def main() -> None:
        claims = WaitingClaims(capacity=capacity)
        claims.bind(asyncio.get_running_loop())
        await asyncio.wait_for(scenario(claims), 10)

    asyncio.run(main())


def never() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


def test_a_wake_up_picks_the_first_in_line_only():
    async def scenario(claims: WaitingClaims) -> None:
        first = claims.enter(KEY, 10, since=0)
        second = claims.enter(KEY, 10, since=0)
        parked = [asyncio.create_task(claims.park(w, never())) for w in (first, second)]
        await asyncio.sleep(0)
        claims.wake(KEY)
        assert await parked[0] == WAKE
        assert not parked[1].done() and (first.trying, second.trying) == (True, False)
        # Its claim took fewer than it asked for: the queue is empty, the other waits on.
        claims.tried(first, claimed=1, more=False)
        claims.leave(first)
        await asyncio.sleep(0)
        assert not parked[1].done() and claims.count == 1
        parked[1].cancel()

    run(scenario)


def test_a_full_claim_lets_the_next_in_line_try():
    async def scenario(claims: WaitingClaims) -> None:
        first = claims.enter(KEY, 10, since=0)
        second = claims.enter(KEY, 10, since=0)
        claims.wake(KEY)
        assert await claims.park(first, never()) == WAKE
        claims.tried(first, claimed=5, more=True)
        assert await claims.park(second, never()) == WAKE

    run(scenario)


def test_a_wake_up_during_an_attempt_makes_it_try_again():
    async def scenario(claims: WaitingClaims) -> None:
        first = claims.enter(KEY, 10, since=0)
        second = claims.enter(KEY, 10, since=0)
        claims.wake(KEY)
        assert await claims.park(first, never()) == WAKE
        claims.wake(KEY)  # a post while its claim runs: kept, not given to the second
        assert not second.trying and KEY in claims.pending
        claims.tried(first, claimed=0, more=False)
        assert await claims.park(first, never()) == WAKE  # first in line tries again
        assert not second.trying

    run(scenario)


def test_a_waiter_that_leaves_when_picked_hands_its_wake_up_on():
    async def scenario(claims: WaitingClaims) -> None:
        first = claims.enter(KEY, 0.01, since=0)
        second = claims.enter(KEY, 10, since=0)
        assert await claims.park(first, never()) == TIMEOUT
        claims.wake(KEY)  # picks the first, whose time is already up
        claims.leave(first)
        assert await claims.park(second, never()) == WAKE
        assert claims.count == 1

    run(scenario)


def test_a_wake_up_during_the_first_attempt_is_not_lost():
    async def scenario(claims: WaitingClaims) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        claims.wake(KEY)  # the post's wake-up, before the claim that missed it waits
        waiter = claims.enter(KEY, 10, since=started)
        assert await claims.park(waiter, never()) == WAKE
        late = claims.enter(("p", "other"), 10, since=loop.time() + 1)
        gone = never()
        gone.set_result(None)
        assert await claims.park(late, gone) == GONE

    run(scenario)


def test_closing_answers_every_waiter_and_takes_no_more():
    async def scenario(claims: WaitingClaims) -> None:
        waiter = claims.enter(KEY, 10, since=0)
        parked = asyncio.create_task(claims.park(waiter, never()))
        await asyncio.sleep(0)
        claims.close()
        assert await parked == CLOSING
        assert claims.enter(KEY, 10, since=0) is None

    run(scenario)


def test_beyond_capacity_nobody_waits():
    async def scenario(claims: WaitingClaims) -> None:
        assert claims.enter(KEY, 10, since=0) is not None
        assert claims.enter(("p", "other"), 10, since=0) is None

    run(scenario, capacity=1)


def test_reports_from_other_threads_are_delivered_on_the_loop():
    async def scenario(claims: WaitingClaims) -> None:
        claims.asking = 1  # a claim that asked to wait is being served
        waiter = claims.enter(KEY, 10, since=0)
        parked = asyncio.create_task(claims.park(waiter, never()))
        await asyncio.to_thread(claims.wake_threadsafe, *KEY)
        assert await parked == WAKE

    run(scenario)
