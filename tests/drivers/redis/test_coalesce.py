"""``[redis] coalesce``: concurrent script calls share a pipeline (zq.storage.redis.coalesce).

The batcher's rules are tested against a fake client whose first round trip
is held open until the test has queued the calls it wants in the next
batch, so that which calls share a pipeline never depends on timing; the
end-to-end tests run many threads against the test Redis.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from redis.exceptions import NoScriptError, ResponseError

from tests.drivers.redis.helpers import message
from zq.clock import ManualClock
from zq.config import Config, ConfigError, RedisConfig, load_config
from zq.errors import StorageUnavailable
from zq.storage.redis import RedisStorage, open_redis
from zq.storage.redis.coalesce import MAX_BATCH, Coalescer
from zq.storage.redis.scripts import NOT_CONFIRMED, ScriptBook, script_source
from zq.storage.redis.sending import ReplicaWait, round_trip


class FakeClient:
    """A connection's round trips (``send``): each command answered ``("ok", last
    argument)``; ``errors`` maps a last argument to its error reply."""

    def __init__(self) -> None:
        self.sent: list[list[tuple[Any, ...]]] = []  # the commands of each round trip
        self.errors: dict[Any, Exception] = {}
        self.lost: Exception | None = None  # the next round trip's connection error
        self.loaded: set[str] | None = None  # the SHAs the server has (None: all)
        self.hold = threading.Event()
        self.hold.set()
        self.holding = threading.Event()  # a round trip is held open
        self.confirmed = 1
        self._lock = threading.Lock()

    def coalescer(self, wait: ReplicaWait | None = None) -> Coalescer:
        return Coalescer(self, wait=wait, send=self.send)  # type: ignore[arg-type]

    def script_load(self, source: str) -> str:
        sha = hashlib.sha1(source.encode()).hexdigest()
        assert self.loaded is not None
        self.loaded.add(sha)
        return sha

    def send(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        with self._lock:
            self.sent.append(list(commands))
            lost, self.lost = self.lost, None
        if not self.hold.is_set():
            self.holding.set()
            assert self.hold.wait(10)
        if lost is not None:
            raise lost
        return [self._reply(command) for command in commands]

    def _reply(self, command: tuple[Any, ...]) -> Any:
        if command[0] == "WAIT":
            return self.confirmed
        if self.loaded is not None and command[1] not in self.loaded:
            return NoScriptError("NOSCRIPT No matching script.")
        return self.errors.get(command[-1], ("ok", command[-1]))

    def commands(self) -> list[tuple[Any, ...]]:
        return [command for trip in self.sent for command in trip]


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


class Callers:
    """Threads that each make one call; their outcomes by call."""

    def __init__(self, call: Callable[[Any], Any]) -> None:
        self._call = call
        self.threads: list[threading.Thread] = []
        self.outcomes: dict[Any, Any] = {}

    def start(self, key: Any) -> None:
        def run() -> None:
            try:
                self.outcomes[key] = self._call(key)
            except Exception as error:
                self.outcomes[key] = error

        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)

    def join(self) -> dict[Any, Any]:
        for thread in self.threads:
            thread.join(10)
            assert not thread.is_alive()
        return self.outcomes


def held_batch(client: FakeClient, coalescer: Coalescer, calls: list[Any],
               call: Callable[[Any], Any] | None = None) -> dict[Any, Any]:
    """The first call's round trip held open while ``calls`` queue: then they go together."""
    callers = Callers(call or (lambda key: coalescer.call(("EVALSHA", "s", 0, key))))
    client.hold.clear()
    callers.start("first")
    assert client.holding.wait(10)
    for key in calls:
        callers.start(key)
    wait_until(lambda: len(coalescer._waiting) == len(calls))
    client.hold.set()
    return callers.join()


def test_a_call_alone_goes_at_once_without_a_pipeline() -> None:
    client = FakeClient()
    coalescer = client.coalescer()
    assert coalescer.call(("EVALSHA", "s", 0, "a")) == (("ok", "a"), None)
    assert coalescer.call(("EVALSHA", "s", 0, "b")) == (("ok", "b"), None)
    assert [len(trip) for trip in client.sent] == [1, 1]
    assert (coalescer.round_trips, coalescer.batches) == (2, 0)


def test_calls_queued_during_a_round_trip_go_out_as_one_pipeline_each_to_its_caller() -> None:
    client = FakeClient()
    coalescer = client.coalescer()
    keys = [f"k{n}" for n in range(20)]
    outcomes = held_batch(client, coalescer, keys)
    assert outcomes == {key: (("ok", key), None) for key in ["first", *keys]}
    assert [len(trip) for trip in client.sent] == [1, 20]
    assert sorted(command[-1] for command in client.sent[1]) == sorted(keys)
    assert (coalescer.round_trips, coalescer.batches, coalescer.batched_calls) == (2, 1, 20)
    assert not coalescer._leading and not coalescer._waiting


def test_a_batch_is_at_most_max_batch_calls_the_rest_go_in_the_next() -> None:
    client = FakeClient()
    coalescer = client.coalescer()
    keys = list(range(MAX_BATCH + 5))
    outcomes = held_batch(client, coalescer, keys)
    assert all(outcomes[key] == (("ok", key), None) for key in keys)
    assert [len(trip) for trip in client.sent] == [1, MAX_BATCH, 5]


def test_a_script_error_goes_to_its_own_caller_only() -> None:
    client = FakeClient()
    client.errors["bad"] = ResponseError("ERR user_script:1: boom")
    coalescer = client.coalescer()
    outcomes = held_batch(client, coalescer, ["a", "bad", "b"])
    assert isinstance(outcomes["bad"], ResponseError)
    assert outcomes["a"] == (("ok", "a"), None) and outcomes["b"] == (("ok", "b"), None)
    assert len(client.sent[1]) == 3


def test_a_lost_connection_answers_every_call_of_its_batch_and_resends_nothing() -> None:
    client = FakeClient()
    coalescer = client.coalescer()
    keys = [f"w{n}" for n in range(8)]

    def lose_next(batch: list[Any]) -> None:
        if len(batch) > 1:
            client.lost = redis.ConnectionError("Connection closed by server.")

    coalescer.before_send = lose_next
    outcomes = held_batch(client, coalescer, keys)
    assert outcomes["first"] == (("ok", "first"), None)
    assert all(isinstance(outcomes[key], redis.ConnectionError) for key in keys)
    # Each write was sent exactly once: a reply lost is never a retry.
    assert sorted(command[-1] for command in client.commands()) == sorted(["first", *keys])
    # The coalescer is free again: the next call goes alone.
    assert coalescer.call(("EVALSHA", "s", 0, "after")) == (("ok", "after"), None)


def test_many_threads_every_call_answered_once_with_its_own_reply() -> None:
    client = FakeClient()
    coalescer = client.coalescer()
    answers: dict[tuple[int, int], Any] = {}

    def work(thread: int) -> None:
        for n in range(200):
            answers[thread, n] = coalescer.call(("EVALSHA", "s", 0, (thread, n)))[0]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == {key: ("ok", key) for key in answers} and len(answers) == 16 * 200
    sent = [command[-1] for command in client.commands()]
    assert len(sent) == len(set(sent)) == 16 * 200
    assert coalescer.calls == 16 * 200 and not coalescer._waiting


def book(client: FakeClient, wait: ReplicaWait | None = None) -> ScriptBook:
    return ScriptBook(client, "zq:", wait, client.coalescer(wait))  # type: ignore[arg-type]


def test_noscript_loads_and_retries_only_that_call() -> None:
    client = FakeClient()
    scripts = book(client)
    get_many = hashlib.sha1(script_source("get_many").encode()).hexdigest()
    client.loaded = {sha for sha in scripts._shas.values() if sha != get_many}
    names = {"a": "post", "b": "get_many", "c": "delete"}
    assert scripts.coalescer is not None
    outcomes = held_batch(client, scripts.coalescer, list(names),
                          lambda key: scripts.run(names.get(key, "post"), 1.0, key))
    assert outcomes == {key: ("ok", key) for key in ["first", "a", "b", "c"]}
    sent = [command[-1] for command in client.commands()]
    # Only the call Redis did not run went again, alone, once the script was loaded.
    assert sorted(sent) == ["a", "b", "b", "c", "first"]
    assert client.sent[-1] == [client.sent[1][1]] and get_many in client.loaded


def test_one_wait_after_the_batch_answers_each_write_with_its_count() -> None:
    client = FakeClient()
    wait = ReplicaWait(replicas=1, timeout_ms=50)
    scripts = book(client, wait)
    assert scripts.coalescer is not None
    names = {"r": "get_many", "w1": "post", "w2": "delete"}
    outcomes = held_batch(client, scripts.coalescer, list(names),
                          lambda key: scripts.run(names.get(key, "post"), 1.0, key))
    assert outcomes == {key: ("ok", key) for key in ["first", *names]}
    # The lone write: its script and WAIT; the batch: three scripts, one WAIT.
    assert [command[0] for command in client.sent[0]] == ["EVALSHA", "WAIT"]
    assert [command[0] for command in client.sent[1]] == ["EVALSHA"] * 3 + ["WAIT"]
    client.confirmed = 0
    client.hold.clear()
    client.holding.clear()
    outcomes = held_batch(client, scripts.coalescer, list(names),
                          lambda key: scripts.run(names.get(key, "post"), 1.0, key))
    for key in ("first", "w1", "w2"):
        assert isinstance(outcomes[key], StorageUnavailable)
        assert outcomes[key].description == NOT_CONFIRMED
    assert outcomes["r"] == ("ok", "r")  # a read does not wait


def test_redis_errors_become_the_drivers_errors() -> None:
    client = FakeClient()
    scripts = book(client)
    client.lost = redis.ConnectionError("gone")
    with pytest.raises(StorageUnavailable, match=r"unreachable|unavailable|Redis"):
        scripts.run("post", 1.0, "x")


# --- on the test Redis --------------------------------------------------------


def test_round_trip_answers_each_command_and_closes_a_connection_that_failed(
        redis_uri: str) -> None:
    client = redis.Redis.from_url(redis_uri.split("?")[0], decode_responses=True,
                                  socket_timeout=0.2)
    try:
        first, missing, last = round_trip(client, [("ECHO", "a"), ("EVALSHA", "0" * 40, 0),
                                                   ("ECHO", "b")])
        assert (first, last) == ("a", "b") and isinstance(missing, NoScriptError)
        assert round_trip(client, [("ECHO", "again")]) == ["again"]  # the connection is fine
        with pytest.raises(redis.TimeoutError):
            round_trip(client, [("BLPOP", "zqtest-never-a-key", 2)])
        # Its reply would come later: the connection was closed, not reused.
        assert round_trip(client, [("ECHO", "after")]) == ["after"]
    finally:
        client.close()


def coalescing(redis_uri: str, clock: ManualClock) -> RedisStorage:
    store = open_redis(redis_uri, clock=clock, settings=RedisConfig(coalesce=True))
    assert isinstance(store, RedisStorage)
    return store


def test_concurrent_posts_and_claims_none_lost_none_twice(redis_uri: str,
                                                          clock: ManualClock) -> None:
    storage = coalescing(redis_uri, clock)
    threads, posts = 16, 25
    try:
        storage.queues.create("p", "co", {})
        posted: list[str] = []

        def post(thread: int) -> None:
            for n in range(posts):
                posted.extend(storage.messages.post(
                    "p", "co", [message(thread * 1000 + n)], client_id="c"))

        run_threads(post, threads)
        assert len(posted) == len(set(posted)) == threads * posts
        assert storage.queues.stats("p", "co").total == threads * posts
        claimed: list[str] = []

        def claim(thread: int) -> None:
            while True:
                claim = storage.claims.create("p", "co", ttl=60, grace=60, limit=3,
                                              client_id="c")
                if claim is None:
                    return
                taken = [m.id for m in claim.messages]
                claimed.extend(taken)
                storage.messages.delete_many("p", "co", taken, claim_ids=[claim.id],
                                             client_id="c")

        run_threads(claim, threads)
        assert sorted(claimed) == sorted(posted)
        assert storage.queues.stats("p", "co").total == 0
        coalescer = storage._scripts.coalescer
        assert coalescer is not None and coalescer.calls > coalescer.round_trips
    finally:
        storage.close()


def run_threads(work: Callable[[int], None], count: int) -> None:
    errors: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            work(n)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors


def test_with_wait_replicas_the_batch_waits_once(redis_uri: str, clock: ManualClock) -> None:
    settings = RedisConfig(coalesce=True, wait_replicas=1, wait_timeout=0.05)
    storage = open_redis(redis_uri, clock=clock, settings=settings)
    plain = open_redis(redis_uri, clock=clock)
    try:
        plain.queues.create("p", "cw", {})
        with pytest.raises(StorageUnavailable) as unconfirmed:
            storage.messages.post("p", "cw", [message(1)], client_id="c")
        assert unconfirmed.value.description == NOT_CONFIRMED
        assert plain.queues.stats("p", "cw").total == 1
    finally:
        storage.close()
        plain.close()


def test_the_settings() -> None:
    config = load_config(environ={"ZQ_REDIS_COALESCE": "true",
                                  "ZQ_REDIS_COALESCE_WINDOW": "0.001"})
    assert (config.redis.coalesce, config.redis.coalesce_window) == (True, 0.001)
    assert Config().redis.coalesce is False
    with pytest.raises(ConfigError, match=r"coalesce_window: must be 0 to 0\.1"):
        load_config(environ={"ZQ_REDIS_COALESCE_WINDOW": "1"})


def test_a_cluster_refuses_coalescing() -> None:
    with pytest.raises(StorageUnavailable, match=r"coalesce.*not available on a Redis Cluster"):
        open_redis("redis+cluster://127.0.0.1:1/", clock=ManualClock(),
                   settings=RedisConfig(coalesce=True))


def test_coalesce_on_a_storage_that_is_not_redis_is_refused(tmp_path: Any) -> None:
    from zq.server import prepare_storage
    from zq.startup import StartupError

    config = Config().with_overrides(storage={"uri": f"sqlite:///{tmp_path / 'zq.sqlite3'}"},
                                     redis={"coalesce": True})
    with pytest.raises(StartupError, match=r"coalesce cannot take effect.*not Redis"):
        prepare_storage(config)
