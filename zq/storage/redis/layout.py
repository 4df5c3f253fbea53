"""The version of the Redis key layout, checked when a storage is opened.

Layout 1 (zq before the ready/held/waiting sets) kept one order per queue
and one global message expiry index; layout 2 is the one documented in
zq/storage/redis/__init__.py. A Redis holding layout-1 data is refused
until ``zq db upgrade --storage URI`` converted it (``upgrade``), since the
new scripts would not see its messages as claimable: silent misbehaviour.
An empty Redis (no queue ever created) is simply marked with the current
layout.
"""

from __future__ import annotations

import redis

from zq.clock import Clock
from zq.errors import StorageUnavailable
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.uri import parse_uri
from zq.storage.uri import redact

LAYOUT = "2"

# Messages indexed per conversion script call.
UPGRADE_BATCH = 1000


def _key(prefix: str) -> str:
    return prefix + "layout"


def _holds_data(client: redis.Redis, prefix: str) -> bool:
    """Whether an earlier zq created a queue or posted a message under ``prefix``."""
    if isinstance(client, redis.RedisCluster):
        # zq ran on no cluster before layout 2 (docs/redis.md): nothing of
        # layout 1 can be there, and the two keys are in different slots.
        return False
    return bool(client.exists(prefix + "qseq", prefix + "marker"))


def stored_layout(client: redis.Redis, prefix: str) -> str | None:
    """The layout the data under ``prefix`` is in; None when there is no data yet."""
    found = client.get(_key(prefix))
    if found is None and _holds_data(client, prefix):
        return "1"
    return found


def check_layout(client: redis.Redis, prefix: str, where: str, uri: str) -> None:
    """Mark an empty prefix with the current layout; refuse any other layout.

    ``uri`` is the storage URI as given, named in the command to run.
    """
    found = stored_layout(client, prefix)
    if found is None:
        client.set(_key(prefix), LAYOUT, nx=True)
        found = stored_layout(client, prefix)
    if found == LAYOUT:
        return
    if found == "1":
        raise StorageUnavailable(
            f"The Redis storage {where} holds data in zq's key layout 1; stop every zq "
            f"server using it and run `zq db upgrade --storage {redact(uri)}` to convert it "
            f"to layout {LAYOUT}."
        )
    raise StorageUnavailable(
        f"The Redis storage {where} has key layout {found}, which this version of zq "
        f"does not know (expected {LAYOUT}); upgrade zq."
    )


def upgrade_uri(uri: str, clock: Clock) -> tuple[str | None, str]:
    """``zq db upgrade`` for a Redis storage URI: see ``upgrade``."""
    target = parse_uri(uri)
    client = target.client(decode_responses=True)
    try:
        return upgrade(client, target.prefix, clock)
    except redis.RedisError as exc:
        raise StorageUnavailable(f"Cannot use the Redis storage {redact(uri)}: {exc}") from exc
    finally:
        client.close()


def upgrade(client: redis.Redis, prefix: str, clock: Clock) -> tuple[str | None, str]:
    """Convert the data under ``prefix`` to the current layout; (before, after).

    ``before`` is None when there was no data (the prefix is only marked).

    Run with every zq server of this storage stopped: the conversion reads
    each message's state once, in batches, and a server writing meanwhile
    could leave a message out of its new indexes.
    """
    before = stored_layout(client, prefix)
    if before in (None, LAYOUT):
        if before is None:
            client.set(_key(prefix), LAYOUT, nx=True)
        return before, LAYOUT
    if before != "1":
        raise StorageUnavailable(
            f"Key layout {before} is not one this version of zq can convert "
            f"(it knows 1 and {LAYOUT}); upgrade zq."
        )
    scripts = ScriptBook(client, prefix)
    finished, qid, after = 0, 1, ""
    while not finished:
        finished, qid, after = scripts.run("layout_upgrade", clock.now(), UPGRADE_BATCH,
                                           qid, after, LAYOUT)
    return before, LAYOUT
