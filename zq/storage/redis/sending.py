"""Commands sent down one pooled Redis connection in one round trip.

The one way zq's script calls reach Redis (zq.storage.redis.scripts, alone;
zq.storage.redis.coalesce, many threads' calls in one pipeline), with the
``[redis] wait_replicas`` setting that adds a WAIT to a write's round trip.
Tests that inject backend failures patch ``round_trip`` here: both paths
look it up in this module at call time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import hiredis
import redis
from redis.connection import HiredisRespSerializer
from redis.exceptions import ResponseError


def round_trip(client: redis.Redis, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The replies of ``commands``, sent in one write down one pooled connection.

    A command's error reply (``ResponseError``: a script error, NOSCRIPT,
    READONLY) is returned in its place. Anything raised (a lost connection,
    a timeout) closes the connection, so that no reply of it is ever read
    by another call. What redis-py's ``execute_command`` and ``Pipeline``
    do per command besides this (a retry wrapper, set to no retries here;
    its telemetry hooks, called even when off; a generator over every
    argument before hiredis packs them) is about a tenth of a post's CPU
    and is left out: docs/benchmarks.md, "Coalesced Redis calls".
    """
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        if type(getattr(conn, "_command_packer", None)) is HiredisRespSerializer:
            # What the serializer does, minus its pass over every argument
            # (which only converts bytearray and memoryview: never sent here).
            packed: Any = [b"".join([hiredis.pack_command(command) for command in commands])]
        else:
            packed = conn.pack_commands(commands)
        conn.send_packed_command(packed)
        replies = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except ResponseError as error:
                replies.append(error)
        return replies
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)


@dataclass(frozen=True)
class ReplicaWait:
    """``[redis] wait_replicas``: WAIT after each write script, on its connection."""

    replicas: int
    timeout_ms: int  # at least 1: WAIT's 0 waits forever
