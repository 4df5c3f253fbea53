"""Wake-ups of waiting claims through the backend: how soon they arrive, what they cost.

    python -m benchmarks.wake_latency redis [--posts 300] [--listeners 8] [--seconds 5]
    python -m benchmarks.wake_latency postgresql
    python -m benchmarks.wake_latency sqlite --servers [--rounds 20]
    (from the repository root; a scratch backend: benchmarks/scratch_storage.py)

Through the storage contract, no HTTP (Redis and PostgreSQL), three figures:

- ``delivery``: a listener (``Storage.wakeups.listen``, one connection of
  its own, as each worker has) on one storage, posts of one message through
  another storage (other connections, as another worker or server would);
  the time from the post's return (its change committed) to the listener's
  report, p50 and p99 over ``--posts`` posts, one every 20 ms;
- ``listener_cpu``: the CPU time one worker's listener spends per wake-up
  it hears (3,000 posts to distinct queues from another process): every
  worker hears every queue's wake-ups, those its claims wait on or not;
- ``cost``: posts per second from 8 threads for ``--seconds``, with the
  wake-up as built and with it taken out of the post (Redis: the script's
  PUBLISH removed; PostgreSQL: the notifier's NOTIFY not sent), while
  ``--listeners`` listeners (the workers of a deployment) are subscribed
  from another process, so that the fan-out to them is paid too. Each
  figure is the best of ``--rounds`` runs, alternating, so that a
  neighbour's load does not decide it.

With ``--servers`` (any backend: sqlite, mariadb, redis, postgresql), over
HTTP instead: two ``zq serve`` of one worker each on the backend, with the
default ``[server] wait_recheck_interval`` (1 s); one claim waits on the
first (``wait=10``), a message is posted through the second ``--rounds``
times (0.2 to 0.7 s after the claim started), and the time from
sending the post to the claim's answer (the post's own time included) is
the ``across_servers`` figure (``post_answer_p50_ms``: the post's own
share, its request's time): the
backend's notification where it has one, the re-check where it has none.

Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.scratch_storage import scratch
from tests.contract.helpers import new_message
from zq.clock import SystemClock
from zq.storage import open_storage
from zq.storage.wake_listener import ThreadedListener


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def delivery(uri: str, posts: int) -> dict[str, Any]:
    listening, posting = open_storage(uri, clock=SystemClock()), open_storage(uri,
                                                                              clock=SystemClock())
    heard: dict[str, float] = {}
    arrived = threading.Condition()

    def wake(project: str, queue: str) -> None:
        with arrived:
            heard[queue] = time.perf_counter()
            arrived.notify_all()

    listener = listening.wakeups.listen(wake)
    if listener is None:
        raise SystemExit(f"{uri}: this backend has no notifications (waiters use the re-check)")
    try:
        assert isinstance(listener, ThreadedListener)
        listener.wait_connected(10)
        latencies = []
        for n in range(posts):
            queue = f"q{n}"
            posting.messages.post("bench", queue, [new_message({"n": n})], client_id="c")
            done = time.perf_counter()
            with arrived:
                assert arrived.wait_for(lambda queue=queue: queue in heard, 10), queue
            latencies.append((heard[queue] - done) * 1000)
            time.sleep(0.02)
    finally:
        listener.close()
        listening.close()
        posting.close()
    return {"figure": "delivery", "posts": posts,
            "p50_ms": round(statistics.median(latencies), 3),
            "p99_ms": round(percentile(latencies, 0.99), 3)}


@contextmanager
def without_wakeup(backend: str) -> Iterator[None]:
    """The post as it would be without its wake-up (see the module documentation)."""
    if backend == "redis":
        from zq.storage.redis import scripts

        original = scripts.script_source

        def silent(name: str) -> str:
            return original(name).replace("redis.call('PUBLISH', WAKE_CHANNEL, name)",
                                          "local _ = name")

        scripts.script_source = silent
        try:
            yield
        finally:
            scripts.script_source = original
    else:
        from zq.storage.sql import wake

        original_send = wake.Notifier.send
        wake.Notifier.send = lambda self, pairs: None  # type: ignore[method-assign]
        try:
            yield
        finally:
            wake.Notifier.send = original_send  # type: ignore[method-assign]


def posts_per_second(uri: str, seconds: float, threads: int = 8) -> float:
    storage = open_storage(uri, clock=SystemClock())
    try:
        counts = [0] * threads
        stop = time.monotonic() + seconds

        def work(i: int) -> None:
            while time.monotonic() < stop:
                storage.messages.post("bench", f"cost{i % 4}", [new_message({"n": i})],
                                      client_id="c")
                counts[i] += 1

        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return sum(counts) / seconds
    finally:
        storage.close()


def _post_in_child(uri: str, posts: int) -> None:
    storage = open_storage(uri, clock=SystemClock())
    try:
        for n in range(posts):
            storage.messages.post("bench", f"cpu{n}", [new_message({"n": n})], client_id="c")
    finally:
        storage.close()  # sends what the notifier still holds


def listener_cpu(uri: str, posts: int) -> dict[str, Any]:
    """CPU a worker spends hearing wake-ups: posts to distinct queues from another process."""
    import multiprocessing
    import resource

    storage = open_storage(uri, clock=SystemClock())
    heard = [0]
    listener = storage.wakeups.listen(lambda project, queue: heard.__setitem__(0, heard[0] + 1))
    assert isinstance(listener, ThreadedListener)
    try:
        listener.wait_connected(10)
        child = multiprocessing.get_context("spawn").Process(target=_post_in_child,
                                                              args=(uri, posts))
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.monotonic()
        child.start()
        child.join()
        deadline = time.monotonic() + 10
        while heard[0] < posts and time.monotonic() < deadline:
            time.sleep(0.01)
        after = resource.getrusage(resource.RUSAGE_SELF)
        elapsed = time.monotonic() - started
    finally:
        listener.close()
        storage.close()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"figure": "listener_cpu", "posts": posts, "heard": heard[0],
            "cpu_ms_per_wakeup": round(cpu / max(heard[0], 1) * 1000, 3),
            "posts_per_s": round(posts / elapsed)}


def _listen_in_child(uri: str, listeners: int, ready: Any, stop: Any) -> None:
    """The workers' listeners, in a process of their own (as workers are)."""
    subscribed = [open_storage(uri, clock=SystemClock()) for _ in range(listeners)]
    running = [s.wakeups.listen(lambda project, queue: None) for s in subscribed]
    ready.set()
    stop.wait()
    for listener in running:
        if listener is not None:
            listener.close()


def cost(backend: str, uri: str, seconds: float, listeners: int, rounds: int
         ) -> dict[str, Any]:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    ready, stop = context.Event(), context.Event()
    child = context.Process(target=_listen_in_child, args=(uri, listeners, ready, stop))
    child.start()
    try:
        ready.wait(60)
        runs: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(rounds):
            runs["with"].append(posts_per_second(uri, seconds))
            with without_wakeup(backend):
                runs["without"].append(posts_per_second(uri, seconds))
    finally:
        stop.set()
        child.join(30)
    best = {key: max(values) for key, values in runs.items()}
    return {"figure": "cost", "listeners": listeners,
            "posts_per_s_with_wakeup": round(best["with"]),
            "posts_per_s_without": round(best["without"]),
            "ratio": round(best["with"] / best["without"], 3)}


def across_servers(backend: str, uri: str, rounds: int) -> dict[str, Any]:
    import random
    import tempfile
    import uuid
    from pathlib import Path

    import httpx

    from tests.e2e.server import ServerProcess, clean_environment

    with tempfile.TemporaryDirectory(prefix="zq-wake-") as directory:
        env = clean_environment(Path(directory) / "data")
        env["ZQ_NOTIFICATIONS_ENABLED"] = "false"
        servers = [ServerProcess(Path(directory) / f"server-{n}.log", env, "--workers", "1",
                                 "--storage", uri) for n in range(2)]
        latencies, posts = [], []
        try:
            for server in servers:
                server.start()
            headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "bench",
                       "Content-Type": "application/json"}
            with httpx.Client(timeout=30, trust_env=False) as http:
                for n in range(rounds):
                    answered: dict[str, Any] = {}

                    def wait(answered: dict[str, Any] = answered) -> None:
                        with httpx.Client(timeout=30, trust_env=False) as waiting:
                            answer = waiting.post(f"{servers[0].url}/v2/queues/q/claims",
                                                  params={"limit": 1, "wait": 10},
                                                  headers=headers, json={"ttl": 60})
                        answered["at"], answered["status"] = time.perf_counter(), answer
                    waiter = threading.Thread(target=wait)
                    waiter.start()
                    time.sleep(random.uniform(0.2, 0.7))
                    posted = time.perf_counter()
                    http.post(f"{servers[1].url}/v2/queues/q/messages", headers=headers,
                              json={"messages": [{"body": n}]})
                    posts.append((time.perf_counter() - posted) * 1000)
                    waiter.join(30)
                    assert answered["status"].status_code == 201, answered["status"].text
                    latencies.append((answered["at"] - posted) * 1000)
                    for message in answered["status"].json()["messages"]:
                        http.delete(f"{servers[0].url}{message['href']}", headers=headers)
        finally:
            for server in servers:
                server.stop()
    return {"figure": "across_servers", "rounds": rounds,
            "p50_ms": round(statistics.median(latencies), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1),
            "max_ms": round(max(latencies), 1),
            "post_answer_p50_ms": round(statistics.median(posts), 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.wake_latency redis --posts 300 --seconds 4\n"
               "  python -m benchmarks.wake_latency sqlite --servers --rounds 20",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("backend", choices=("redis", "postgresql", "sqlite", "mariadb"),
                        help="a scratch backend (sqlite and mariadb: with --servers only)")
    parser.add_argument("--servers", action="store_true",
                        help="two zq serve, a claim waiting on one, posts through the other")
    parser.add_argument("--posts", type=int, default=300,
                        help="delivery: posts timed, one every 20 ms (default: %(default)s)")
    parser.add_argument("--listeners", type=int, default=8,
                        help="cost: listeners subscribed from another process "
                             "(default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="cost: seconds of posts per run (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="cost: runs of each variant; --servers: posts (default 20)")
    args = parser.parse_args(argv)
    if args.servers and "--rounds" not in (argv or __import__("sys").argv):
        args.rounds = 20
    with scratch(args.backend) as uri:
        report: Callable[[dict[str, Any]], None] = lambda line: print(  # noqa: E731
            json.dumps({"backend": args.backend, **line}), flush=True)
        if args.servers:
            report(across_servers(args.backend, uri, args.rounds))
            return
        report(delivery(uri, args.posts))
        report(listener_cpu(uri, 3000))
        report(cost(args.backend, uri, args.seconds, args.listeners, args.rounds))


if __name__ == "__main__":
    main()
