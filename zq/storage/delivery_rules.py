"""The rules one delivery (a claim or a pop) follows, as one value.

The service builds a DeliveryRules once per request from the queue's
metadata (zq.poison: the dead letter policy, the backoff, the consumer log
entry, the breaker and blame split) and hands it down through the contract
to the driver, which carries it out inside the delivery's atomic step. The
same value goes to the deletes, rejects and terminal rejects (a move) of
the queue, where only ``breaker`` and ``blame_split`` apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from zq.poison.backoff import BackoffPolicy
from zq.poison.breaker import BreakerPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.records import ConsumerEntry


@dataclass(frozen=True, slots=True)
class DeliveryRules:
    """What a claim or pop applies besides taking free messages in queue order."""

    # Exhausted messages are moved, not delivered (None: every one is delivered).
    dead_letter: DeadLetterPolicy | None = None
    # Each delivered message is claimable again no sooner than this after its claim.
    backoff: BackoffPolicy | None = None
    # The claim's record in the consumer log, written in the claim's own step.
    consumer: ConsumerEntry | None = None
    # The metadata version the rules were read at: checked, in the same atomic
    # step, by a driver with Storage.checks_metadata_version (MetadataChanged
    # when it moved); the service gives one only to such a driver.
    metadata_version: str | None = None
    # The queue's breaker (zq.poison.breaker, zq.storage.breakers): failures
    # and successes are recorded, and an open breaker forgives failures,
    # holds terminal rejects and lets only probes through. None: nothing
    # is recorded (Zaqar's behaviour). Only a driver with Storage.has_breaker.
    breaker: BreakerPolicy | None = None
    # ``_suspect_lapsed_consumers``: each lapse a delivery discovers is blamed
    # on the consumer or the message (zq.poison.blame). False: every lapse is
    # charged to the message (Zaqar's behaviour).
    blame_split: bool = False


NO_RULES = DeliveryRules()
