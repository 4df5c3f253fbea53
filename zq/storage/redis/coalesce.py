"""Coalesced script calls: concurrent EVALSHA calls of one process share a round trip.

``[redis] coalesce``. Every script call (``ScriptBook._call``) queues; the
first call when no round trip is in flight goes out at once, alone, exactly
as without coalescing (one EVALSHA down a pooled connection), so a quiet
server pays no added latency. Calls that arrive while that round trip is in
flight wait in line; when it returns, the first of them becomes the
*leader* and sends everything in line (up to ``MAX_BATCH``) as one
pipeline (plain pipelining, no MULTI: ``sending.round_trip``), one write of
the packed commands, then their replies read in order, then hands the lead to
whoever queued meanwhile (that hand-off is zq.storage.batching's; what a
batch sends and how each call is answered is this module's). Each script
stays atomic on its own: Redis runs every EVALSHA of a pipeline as it would
run it alone, one after the other.

Each caller keeps its own outcome:

- a script's reply, or its error (a ``redis.ResponseError`` such as a
  script error, READONLY or OOM), goes to its own caller only;
- NOSCRIPT means "not run": the caller gets it, loads the script and calls
  again (ScriptBook.run_in), queueing like any call; the others keep their
  replies;
- a lost connection or a timeout while sending or reading the pipeline
  answers every call of the batch with that error (the driver turns it into
  503, StorageUnavailable), whether or not its own reply had been read: a
  write whose reply was lost may have run, so it is never sent again, as
  without coalescing.

``[redis] wait_replicas``: one WAIT after the batch's scripts, on the same
connection, covers every write of the batch (WAIT counts the replicas that
have all of this connection's writes so far); its count answers each write
of the batch as a lone write's WAIT would answer it.

Not coalesced: what does not go through the scripts (the waiting claims'
pub/sub and blocking reads, the notification cursors, the cluster's homes
set, PING) and Redis Cluster (``redis+cluster://``, refused with
``[redis] coalesce``, zq/storage/redis/storage.py). See docs/redis.md,
"Coalesced script calls".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from zq.storage.batching import Batcher, Unit
from zq.storage.redis import sending
from zq.storage.redis.sending import ReplicaWait

# Calls in one pipeline at most: bounds the first caller's wait for the
# last reply and the size of one write (a post of 10 is about 1 KB).
MAX_BATCH = 64


class _Call(Unit):
    """One caller's command; its result is (reply, WAIT's count or None)."""

    __slots__ = ("command", "wait")

    def __init__(self, command: tuple[Any, ...], wait: bool) -> None:
        super().__init__()
        self.command = command
        self.wait = wait  # a write to WAIT for ([redis] wait_replicas)


class Coalescer(Batcher[_Call]):
    """Sends the script calls of many threads as pipelines (module docstring)."""

    def __init__(self, client: redis.Redis, *, window: float = 0.0,
                 wait: ReplicaWait | None = None,
                 send: Callable[[list[tuple[Any, ...]]], list[Any]] | None = None) -> None:
        """``window``: seconds a new leader waits for more calls before it sends
        (0: only the calls that queued while the previous round trip ran).
        ``send``: sends commands in one round trip and returns their replies
        (default: zq.storage.redis.sending.round_trip on ``client``)."""
        super().__init__(max_batch=MAX_BATCH, window=window)
        self._client = client
        self._send_hook = send
        self._wait = wait
        # Round trips made and the calls they carried (benchmarks and tests
        # read them): ``batches`` counts the pipelines of two calls or more.
        self.round_trips = 0
        self.calls = 0
        self.batches = 0
        self.batched_calls = 0
        # Test hook: called with the batch just before it is sent.
        self.before_send: Any = None

    def call(self, command: tuple[Any, ...], *, wait: bool = False) -> tuple[Any, Any]:
        """(reply, WAIT's count or None) of ``command``; raises its own error.

        ``wait``: a write followed by WAIT ([redis] wait_replicas).
        """
        return self._submit(_Call(command, wait))  # type: ignore[no-any-return]

    def _run_batch(self, batch: list[_Call]) -> None:
        if self.before_send is not None:
            self.before_send(batch)
        self.round_trips += 1
        self.calls += len(batch)
        if len(batch) > 1:
            self.batches += 1
            self.batched_calls += len(batch)
        commands = [unit.command for unit in batch]
        waits = self._wait is not None and any(unit.wait for unit in batch)
        if waits:
            assert self._wait is not None
            commands.append(("WAIT", self._wait.replicas, self._wait.timeout_ms))
        try:
            # Each reply, or each error reply, in order (alone: the plain
            # path, one command); anything raised is the connection's, for
            # everyone.
            replies = self._send_commands(commands)
        except BaseException as error:
            for unit in batch:
                unit.error = error
            return
        confirmed = replies.pop() if waits else None
        for unit, reply in zip(batch, replies, strict=True):
            if isinstance(reply, Exception):
                unit.error = reply
            elif unit.wait:
                if isinstance(confirmed, Exception):
                    unit.error = confirmed  # the script ran; its WAIT failed
                else:
                    unit.result = reply, confirmed
            else:
                unit.result = reply, None

    def _send_commands(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        if self._send_hook is not None:
            return self._send_hook(commands)
        # Looked up at each call, as ScriptBook does (tests replace it).
        return sending.round_trip(self._client, commands)
