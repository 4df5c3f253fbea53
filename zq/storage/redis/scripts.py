"""The driver's Lua scripts: loaded by name from ``lua/``, called by SHA.

Each ``lua/<name>.lua`` file is one atomic unit. The libraries
(``LIBRARIES``: ``lua/_lib.lua``, the key layout and the helpers every
script shares, then ``lua/_breaker.lua``, the breaker and the blame split)
are prepended to each file when it is loaded, after the script's ``#!lua``
line and the names of zq.events, zq.poison.moves, zq.poison.breaker and
zq.poison.blame (``events_prelude``: the tables ``KIND``, ``DETAIL`` and ``MOVE``,
and ``breaker_names``), so that no script spells an event kind, a detail
key or a rule's constant itself. Scripts are called by
EVALSHA; on NOSCRIPT (after a restart, a failover or SCRIPT FLUSH) the
script is loaded again and the call repeated once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

import redis
from redis.exceptions import NoScriptError

from zq import events
from zq.errors import BACKEND_UNREACHABLE, StorageUnavailable
from zq.poison import blame, breaker, moves
from zq.storage.redis import sending
from zq.storage.redis.sending import ReplicaWait
from zq.storage.wake_events import WAKING_KINDS

if TYPE_CHECKING:
    from zq.storage.redis.coalesce import Coalescer

# Prepended to every script, in this order.
LIBRARIES = ("_lib", "_breaker")

# A write the master made but too few replicas confirmed in time
# ([redis] wait_replicas): what the client is told, honestly.
NOT_CONFIRMED = (
    "The change was made, but fewer replicas than required confirmed it in time: it may or "
    "may not survive a failover of the storage backend. Retrying may repeat it (a post "
    "stores the message twice); try again after the number of seconds in Retry-After."
)


def _lua_table(name: str, values: Mapping[str, str | int]) -> str:
    # json.dumps spells these plain ASCII names and integers as Lua does.
    fields = ", ".join(f"{key} = {json.dumps(value)}" for key, value in values.items())
    return f"local {name} = {{{fields}}}"


def _lua_strings(values: list[str]) -> str:
    return "{" + ", ".join(json.dumps(value) for value in values) + "}"


def events_prelude() -> str:
    """zq.events' kinds and detail names as the Lua tables ``KIND`` and ``DETAIL``.

    And ``MOVE.TIME``, the history entry's time key (zq.poison.moves), which
    a script adds to a stored expiry move (wire.expiry_arg); and the
    function ``breaker_names``, called by lua/_breaker.lua when a call needs
    the breaker, which returns three tables: the history entry's keys and
    the reason ``lapsed`` (zq.poison.moves), the breaker's states
    (zq.poison.breaker), and whom a lapse is charged to, the bounds and the
    three forms of the exhaustion description with the placeholders ``{1}``
    and ``{2}`` (zq.poison.blame). A function, so that a script that does
    not need them does not build them. ``WAKING``: the kinds that wake
    their queue's waiting claims (zq.storage.wake_events).
    """
    waking = ", ".join(f"[{json.dumps(kind)}] = true" for kind in sorted(WAKING_KINDS))
    exhausted = [blame.exhaustion_description(["{1}", "{2}"][:n]) for n in range(3)]
    entry = {"TIME": moves.TIME, "QUEUE": moves.QUEUE, "REASON": moves.REASON,
             "DESCRIPTION": moves.DESCRIPTION, "CLIENT_ID": moves.CLIENT_ID,
             "CHARGED_TO": moves.CHARGED_TO, "LAPSED": moves.REASON_LAPSED}
    states = {"CLOSED": breaker.CLOSED, "OPEN": breaker.OPEN, "HALF_OPEN": breaker.HALF_OPEN}
    blames = {"CONSUMER": blame.CONSUMER, "MESSAGE": blame.MESSAGE, "OUTAGE": blame.OUTAGE,
              "LAPSED_WITH": blame.LAPSED_WITH, "LAPSE_ENTRIES": blame.LAPSE_ENTRIES}
    return "\n".join([
        "-- Generated from zq/events.py, zq/poison/moves.py, zq/poison/breaker.py and",
        "-- zq/poison/blame.py (zq.storage.redis.scripts.events_prelude).",
        _lua_table("KIND", events.KIND_NAMES),
        _lua_table("DETAIL", events.DETAIL_NAMES),
        _lua_table("MOVE", {"TIME": moves.TIME}),
        "local function breaker_names()",
        "  " + _lua_table("ENTRY", entry),
        "  " + _lua_table("BREAKER", states),
        "  " + _lua_table("BLAME", blames),
        f"  BLAME.EXHAUSTED = {_lua_strings(exhausted)}",
        "  return ENTRY, BREAKER, BLAME",
        "end",
        f"local WAKING = {{{waking}}}",
    ])


def script_source(name: str) -> str:
    """The full text sent to Redis for script ``name``: shebang, names, libraries, body."""
    folder = resources.files(__package__).joinpath("lua")
    body = folder.joinpath(f"{name}.lua").read_text(encoding="utf-8")
    libraries = "\n".join(folder.joinpath(f"{library}.lua").read_text(encoding="utf-8")
                           for library in LIBRARIES)
    shebang, _, rest = body.partition("\n")
    if not shebang.startswith("#!lua"):
        raise ValueError(f"lua/{name}.lua must start with a #!lua line")
    return f"{shebang}\n{events_prelude()}\n{libraries}\n{rest}"


def script_names() -> list[str]:
    """Every script of the package, library excluded."""
    folder = resources.files(__package__).joinpath("lua")
    return sorted(
        entry.name.removesuffix(".lua")
        for entry in folder.iterdir()
        if entry.name.endswith(".lua") and not entry.name.startswith("_")
    )


class ScriptBook:
    """The scripts of one client, run with prefix and time first."""

    def __init__(self, client: redis.Redis, prefix: str, wait: ReplicaWait | None = None,
                 coalescer: Coalescer | None = None) -> None:
        """``coalescer``: the calls of concurrent threads share round trips
        (``[redis] coalesce``, zq.storage.redis.coalesce)."""
        self._client = client
        self._prefix = prefix
        self._wait = wait
        self.coalescer = coalescer
        self._sources = {name: script_source(name) for name in script_names()}
        self._shas = {name: hashlib.sha1(source.encode()).hexdigest()
                      for name, source in self._sources.items()}
        # Scripts Redis lets write: only these are WAITed for.
        self._writes = {name for name, source in self._sources.items()
                        if "no-writes" not in source.partition("\n")[0]}

    def home(self, project: str) -> str:
        """The key prefix under which ``project``'s keys live (one server: the prefix)."""
        return self._prefix

    def homes(self) -> list[str]:
        """Every key prefix holding data: what backend-wide scripts (gc, volume) run over."""
        return [self._prefix]

    def run_everywhere(self, name: str, now: float, *args: Any) -> list[tuple[str, Any]]:
        """(home, answer) of script ``name`` run in each of ``homes()``."""
        return [(home, self.run_in(home, name, now, *args)) for home in self.homes()]

    def run(self, name: str, now: float, *args: Any) -> Any:
        """Run script ``name`` with ``ARGV = [prefix, now, *args]``."""
        return self.run_in(self._prefix, name, now, *args)

    def run_in(self, home: str, name: str, now: float, *args: Any) -> Any:
        """Run script ``name`` under key prefix ``home`` (one of ``homes()``)."""
        # EVALSHA straight through execute_command: redis-py's Script
        # wrapper costs as much Python again per call.
        command = ("EVALSHA", self._shas[name], *self._routing(home), home, repr(float(now)),
                   *args)
        try:
            try:
                return self._call(name, command)
            except NoScriptError:
                # Not run: the server lost its scripts (restart, failover,
                # SCRIPT FLUSH). Load it and call once more.
                self._client.script_load(self._sources[name])
                return self._call(name, command)
        except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError) as exc:
            # Whether a state change ran is unknown here: never retried. A
            # replica's READONLY answer: the master moved (a failover).
            raise StorageUnavailable(BACKEND_UNREACHABLE, detail=f"Redis: {exc}") from exc
        except redis.RedisError as exc:
            raise StorageUnavailable(
                "The storage backend failed; the error has been logged.",
                detail=f"Redis script {name}: {exc}",
            ) from exc

    def _routing(self, home: str) -> tuple[Any, ...]:
        """EVALSHA's ``numkeys`` and keys: none on one server (the scripts compute theirs)."""
        return (0,)

    def _call(self, name: str, command: tuple[Any, ...]) -> Any:
        wait = self._wait
        if self.coalescer is not None:
            waited = wait is not None and name in self._writes
            answer, confirmed = self.coalescer.call(command, wait=waited)
            return self._confirmed(name, answer, confirmed, wait) if waited else answer  # type: ignore[arg-type]
        if wait is None or name not in self._writes:
            (answer,) = sending.round_trip(self._client, (command,))
            if isinstance(answer, Exception):
                raise answer
            return answer
        # WAIT counts the replicas that have this connection's writes, so it
        # goes down the script's connection, in the same round trip.
        answer, confirmed = sending.round_trip(
            self._client, (command, ("WAIT", wait.replicas, wait.timeout_ms)))
        for reply in (answer, confirmed):
            if isinstance(reply, Exception):
                raise reply
        return self._confirmed(name, answer, confirmed, wait)

    def _confirmed(self, name: str, answer: Any, confirmed: Any, wait: ReplicaWait) -> Any:
        """``answer`` when ``confirmed`` replicas are enough for ``[redis] wait_replicas``."""
        if int(confirmed) < wait.replicas:
            # The script ran on the master: its change stands there, but a
            # failover now may or may not keep it. Redis cannot undo it.
            raise StorageUnavailable(
                NOT_CONFIRMED,
                detail=f"Redis script {name}: {confirmed} of {wait.replicas} replicas "
                f"confirmed within {wait.timeout_ms} ms ([redis] wait_replicas)",
            )
        return answer
