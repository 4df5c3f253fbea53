"""An outage through QueueService: the breaker's rules go down with every call, and
the call that closes the breaker sends the outage's dead letters back.

No HTTP, the manual clock, every driver with ``Storage.has_breaker``.
"""

from __future__ import annotations

import pytest

from zq.config import Limits
from zq.poison import moves
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage.base import Storage

METADATA = {"_breaker_failure_ratio": 0.5, "_breaker_min_failures": 3,
            "_breaker_probe_interval": 5, "_breaker_close_after": 2,
            "_dead_letter_queue": "dlq", "_max_claim_count": 2}
DOWN = "ConnectionError: orders-db unreachable"


@pytest.fixture(autouse=True)
def _only_with_breaker(storage: Storage) -> None:
    if not storage.has_breaker:
        pytest.skip("this driver does not carry out the breaker yet (Storage.has_breaker)")


@pytest.fixture
def service(storage: Storage, clock) -> QueueService:
    return QueueService(Limits(), SingleBackend(storage), clock=clock)


def claim(service: QueueService, project: str, limit: int = 10):
    return service.claim(project, "q", {"ttl": 60, "grace": 60}, limit=limit, client_id="c1")


def reject(service: QueueService, project: str, message_id: str, claim_id: str, *,
           retry: bool) -> None:
    document = {"description": DOWN}
    if retry:
        document["retry_after"] = 0
    service.reject_message(project, "q", message_id, document, claim_id=claim_id,
                           client_id="c1")


def trip(service: QueueService, project: str, clock) -> tuple[list[str], str]:
    """Six messages; the first dead lettered by a terminal reject, two retries trip it."""
    service.create_queue(project, "q", METADATA)
    posted = service.post_messages(project, "q", {"messages": [{"body": n} for n in range(6)]},
                                   client_id=None, body_size=10)
    held = claim(service, project)
    reject(service, project, posted[0], held.id, retry=False)
    clock.advance(1)
    reject(service, project, posted[1], held.id, retry=True)
    reject(service, project, posted[2], held.id, retry=True)
    assert service.breaker(project, "q").state == "open"
    # Open: a terminal reject is held as a retry, the message stays.
    reject(service, project, posted[3], held.id, retry=False)
    service.release_claim(project, "q", held.id, client_id="c1")
    assert [m.id for m in service.list_messages(project, "dlq", echo=True).messages] == [
        posted[0]]
    return posted, held.id


def test_the_delete_that_closes_the_breaker_redrives_the_outage(service, project, clock):
    posted, _ = trip(service, project, clock)
    assert claim(service, project) is None  # no probe before the interval
    clock.advance(5)
    for expected in ("half-open", "closed"):
        probe = claim(service, project)
        assert probe is not None and len(probe.messages) == 1
        service.delete_message(project, "q", probe.messages[0].id, claim_id=probe.id,
                               client_id="c1")
        assert service.breaker(project, "q").state == expected
    # No housekeeping ran: the close itself sent the dead letter back.
    assert service.list_messages(project, "dlq", echo=True).messages == []
    back = service.get_message(project, "q", posted[0])
    assert back.claim_count == 0 and back.history[-1][moves.REASON] == "auto_redriven"
    assert not service.breaker(project, "q").redrive_due


def test_a_forced_close_redrives_the_outage(service, project, clock):
    posted, _ = trip(service, project, clock)
    clock.advance(2)
    closed = service.force_breaker(project, "q", {"state": "closed"})
    assert closed.state == "closed"
    assert service.list_messages(project, "dlq", echo=True).messages == []
    assert service.get_message(project, "q", posted[0]).redrive_count == 1
    assert not service.breaker(project, "q").redrive_due


def test_without_the_breaker_every_failure_counts(service, project, clock):
    service.create_queue(project, "q", {"_dead_letter_queue": "dlq", "_max_claim_count": 1})
    posted = service.post_messages(project, "q", {"messages": [{"body": n} for n in range(4)]},
                                   client_id=None, body_size=10)
    held = claim(service, project)
    for message_id in posted:
        reject(service, project, message_id, held.id, retry=True)
    # Zaqar's behaviour: nothing held back, the next claim dead letters them all.
    assert claim(service, project) is None
    assert len(service.list_messages(project, "dlq", echo=True).messages) == 4
