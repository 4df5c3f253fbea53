"""The load generator's workloads against RabbitMQ quorum queues, over AMQP 0-9-1.

    python -m benchmarks.amqp_load --url amqp://guest:guest@127.0.0.1:5672/ --workload post

The same workloads, bounds and JSON line as ``python -m benchmarks.loadgen``
(benchmarks/loadgen/workloads.py), with a broker's means, every message
durable: each queue is a quorum queue (replicated log, fsync before the
confirm), each message persistent, and every publish waits for its
publisher confirm. The client is aio-pika (the ``bench`` extra), with the
timed path (publish, consume, ack, nack) on its engine, aiormq, directly:
about a fifth less of the generator's CPU per message, which matters here
as the generator shares the two cores with the broker (``generator_cpu_s``
in each line tells what it spent). Every worker has a connection and a
channel of its own, as loadgen's workers each have a keep-alive HTTP
connection.

- ``post``: publish ``batch`` messages of ``body_size`` JSON bytes, then
  wait for the publisher confirms of the whole batch (one operation).
- ``claim-delete``: from a backlog published before timing starts,
  consumers with prefetch ``batch`` take ``batch`` deliveries and ack them
  at once (``basic.ack`` with ``multiple``).
- ``cycle``: producers (half the concurrency) publish while consumers take
  what has arrived (up to ``batch``, as a claim answers with what is there)
  and ack it; also reports the post-to-delivery latency (``e2e_*``).
- ``poison``: ``cycle`` on a quorum queue with ``x-delivery-limit`` and a
  dead letter exchange and queue (``x-dead-letter-strategy`` at-least-once,
  which needs ``x-overflow`` reject-publish); 1 message in 10 is never
  acked: its consumer nacks it with ``requeue=True`` (a failing consumer
  releasing its claim), so it is delivered again at once until the limit
  dead letters it. Reports the good-message rate and the dead letter moves
  per second.

What counts as a request, to keep ``req_per_s`` beside loadgen's: a batch
publish with its confirms, a batch of deliveries (the "claim"), its ack
(the "delete") and the nacks of its poison (the "release"), as loadgen
counts a post, a claim, a delete and a claim release. ``p50_ms`` and
``p99_ms`` are those of the operations that wait for an answer: the batch
publishes until their last confirm, and in ``claim-delete`` the wait from
an ack to the next full batch (an ack has no answer in AMQP 0-9-1; a
consumer of ``cycle`` and ``poison`` waits for producers, which
``e2e_p50_ms``/``e2e_p99_ms`` measure instead).

**Delivery limit.** zq dead letters a message at the claim after its
``_max_claim_count``-th (3: three deliveries). RabbitMQ 3.10's quorum
queues dead letter a message when it is returned more than
``x-delivery-limit`` times, so ``x-delivery-limit`` 3 delivers it four
times (checked on RabbitMQ 3.10.8). ``--delivery-limit`` defaults to 2 so
that each poison message is delivered three times on both; each poison
run reports ``poison_deliveries`` to show it.

Every queue and exchange a run declares carries the run's prefix
(``amqpbench-<id>``) and is deleted when its workload ends, also after an
error. Only loopback addresses are accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson

from benchmarks.loadgen.cli import parse_load_args
from benchmarks.loadgen.stats import Recorder
from benchmarks.loadgen.workloads import MAX_CLAIM_COUNT, POISON_EVERY, Settings, drive

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/"
WORKLOAD_NAMES = ["post", "claim-delete", "cycle", "poison"]
PREFILL_BATCH = 100  # messages published before waiting for confirms while preparing
QUORUM = {"x-queue-type": "quorum"}


@dataclass
class AmqpRecorder(Recorder):
    """A Recorder that also counts requests that get no answer (acks, nacks)."""

    unanswered: int = 0

    @property
    def requests(self) -> int:
        return len(self.latencies) + self.errors + self.unanswered


@dataclass
class Run:
    """One workload's broker objects: its names, and what to delete afterwards."""

    url: str
    prefix: str
    queues: list[str] = field(default_factory=list)
    exchanges: list[str] = field(default_factory=list)
    connections: list[Any] = field(default_factory=list)

    def name(self, kind: str) -> str:
        return f"{self.prefix}-{kind}-{uuid.uuid4().hex[:6]}"

    async def channel(self, prefetch: int = 0) -> Any:
        """A channel (publisher confirms on) on a connection of its own."""
        import aio_pika

        connection = await aio_pika.connect(self.url)
        self.connections.append(connection)
        channel = await connection.channel(publisher_confirms=True)
        if prefetch:
            await channel.set_qos(prefetch_count=prefetch)
        return channel

    async def raw(self, prefetch: int = 0) -> Any:
        """The aiormq channel under ``channel(prefetch)``: the timed path uses it."""
        return await (await self.channel(prefetch)).get_underlay_channel()

    async def declare(self, channel: Any, name: str, arguments: dict[str, Any]) -> Any:
        self.queues.append(name)  # listed first: a half-made declaration is cleaned too
        return await channel.declare_queue(name, durable=True, arguments=arguments)

    async def clean(self) -> None:
        """Close every connection (unacked deliveries go back), then delete what was
        declared, on a connection of its own."""
        import aio_pika

        for connection in self.connections:
            with contextlib.suppress(Exception):  # a broken connection is closed already
                await connection.close()
        self.connections.clear()
        if not self.queues and not self.exchanges:
            return
        connection = await aio_pika.connect(self.url)
        try:
            channel = await connection.channel()
            for queue in self.queues:
                await channel.queue_delete(queue)
            for exchange in self.exchanges:
                await channel.exchange_delete(exchange)
        finally:
            await connection.close()
        self.queues.clear()
        self.exchanges.clear()


async def pool(items: list[Any]) -> asyncio.Queue[Any]:
    """The workers' channels (or consumers): an operation takes one and gives it back,
    so an open-loop run keeps ``concurrency`` connections however many are due."""
    idle: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        idle.put_nowait(item)
    return idle


def bodies(settings: Settings, count: int, first: int = 0, poison: bool = False) -> list[bytes]:
    """``count`` bodies of ``body_size`` JSON bytes, as loadgen's, stamped with the send time."""
    filler = "x" * max(0, settings.body_size - len('{"data":"","t":0000000000.000000,"p":0}'))
    now = time.time()
    return [orjson.dumps({"data": filler, "t": now,
                          "p": int(poison and (first + i) % POISON_EVERY == 0)})
            for i in range(count)]


async def publish(channel: Any, queue: str, payloads: list[bytes]) -> bool:
    """Publish persistent messages on an aiormq channel with confirms on, and wait for
    every confirm; False if any was refused."""
    from pamqp.commands import Basic

    persistent = Basic.Properties(delivery_mode=2)
    confirms = await asyncio.gather(*(
        channel.basic_publish(body, routing_key=queue, properties=persistent)
        for body in payloads), return_exceptions=True)
    return all(isinstance(confirm, Basic.Ack) for confirm in confirms)


async def timed_publish(recorder: Recorder, channel: Any, queue: str, payloads: list[bytes],
                        due: float | None) -> bool:
    began = time.perf_counter() if due is None else due
    if not await publish(channel, queue, payloads):
        recorder.errors += 1
        return False
    recorder.latencies.append(time.perf_counter() - began)
    return True


class Consumer:
    """One consumer: a channel with prefetch ``batch`` and an inbox of its deliveries."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.inbox: deque[Any] = deque()
        self.arrived = asyncio.Event()
        self.arrival: dict[int, float] = {}  # delivery tag -> when it reached us

    @classmethod
    async def start(cls, run: Run, queue: str, prefetch: int) -> Consumer:
        consumer = cls(await run.raw(prefetch=prefetch))
        await consumer.channel.basic_consume(queue, consumer.deliver, no_ack=False)
        return consumer

    async def deliver(self, message: Any) -> None:
        self.arrival[message.delivery_tag] = time.time()
        self.inbox.append(message)
        self.arrived.set()

    async def take(self, count: int, *, until: float, whole: bool) -> list[Any]:
        """Up to ``count`` deliveries: ``whole`` waits for all ``count``, otherwise
        what has arrived once the first one is here. Whatever is here at
        ``until`` (a monotonic time) when it comes first."""
        while len(self.inbox) < (count if whole else 1):
            self.arrived.clear()
            left = until - time.monotonic()
            if left <= 0:
                break
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except TimeoutError:
                break
        if not whole:  # deliveries of the same read are handed to us one task each
            for _ in range(2):
                await asyncio.sleep(0)
        return [self.inbox.popleft() for _ in range(min(count, len(self.inbox)))]


async def settle(recorder: AmqpRecorder, channel: Any, messages: list[Any]) -> list[Any]:
    """Nack (requeue) the poison of a batch, then ack the rest with one multiple ack.

    Returns the good messages. The nacks go first: a multiple ack covers every
    earlier delivery of the channel still outstanding, poison included.
    """
    good, poison = [], []
    for message in messages:
        (poison if orjson.loads(message.body)["p"] else good).append(message)
    for message in poison:
        await channel.basic_nack(message.delivery_tag, requeue=True)
    if poison:
        recorder.unanswered += 1  # the "release" of loadgen's poison consumer
    if good:
        await channel.basic_ack(good[-1].delivery_tag, multiple=True)
        recorder.unanswered += 1  # the "delete"
    return good


async def post_workload(settings: Settings, run: Run) -> dict[str, object]:
    admin = await run.channel()
    queue = run.name("post")
    await run.declare(admin, queue, QUORUM)
    idle = await pool([await run.raw() for _ in range(settings.concurrency)])
    payloads = bodies(settings, settings.batch)
    recorder = AmqpRecorder(max_requests=settings.requests, duration=settings.duration)

    async def operation(due: float | None) -> bool:
        channel = await idle.get()  # open loop: waiting for one counts in the latency
        try:
            if await timed_publish(recorder, channel, queue, payloads, due):
                recorder.messages += settings.batch
        finally:
            idle.put_nowait(channel)
        return True

    await drive(settings, recorder, operation)
    return recorder.summary("post")


async def prefill(run: Run, queue: str, settings: Settings, messages: int) -> None:
    """Publish ``messages`` messages (untimed), ``concurrency`` publishers at once."""
    chunks = iter(range(0, messages, PREFILL_BATCH))

    async def worker() -> None:
        channel = await run.raw()
        for start in chunks:
            if not await publish(channel, queue,
                                 bodies(settings, min(PREFILL_BATCH, messages - start))):
                raise RuntimeError("the broker refused a message of the backlog")

    await asyncio.gather(*(worker() for _ in range(settings.concurrency)))


async def claim_delete_workload(settings: Settings, run: Run) -> dict[str, object]:
    admin = await run.channel()
    queue = run.name("claim")
    await run.declare(admin, queue, QUORUM)
    claims = settings.requests // 2 + settings.concurrency
    if settings.rate > 0:
        claims = min(claims, int(settings.rate * settings.duration) + settings.concurrency)
    backlog = claims * settings.batch
    await prefill(run, queue, settings, backlog)
    consumers = [await Consumer.start(run, queue, settings.batch)
                 for _ in range(settings.concurrency)]
    idle = await pool(consumers)
    recorder = AmqpRecorder(max_requests=settings.requests, duration=settings.duration)
    taken = 0

    async def operation(due: float | None) -> bool:
        nonlocal taken
        if taken >= backlog:
            return False  # the backlog is used up
        consumer = await idle.get()
        try:
            began = time.perf_counter() if due is None else due
            batch = await consumer.take(settings.batch, whole=True,
                                        until=time.monotonic() + settings.duration + 5)
            taken += len(batch)
            if len(batch) < min(settings.batch, backlog - taken + len(batch)):
                recorder.errors += 1  # deliveries stopped coming
                return False
            recorder.latencies.append(time.perf_counter() - began)
            await consumer.channel.basic_ack(batch[-1].delivery_tag, multiple=True)
            recorder.unanswered += 1
            recorder.messages += len(batch)
        finally:
            idle.put_nowait(consumer)
        return True

    recorder.restart()
    await drive(settings, recorder, operation, cost=2)
    return recorder.summary("claim-delete")


async def produce_and_consume(settings: Settings, run: Run, recorder: AmqpRecorder,
                              queue: str, *, poison: bool) -> int:
    """Producers and consumers on one queue until the bounds (cycle and poison).

    Returns how many deliveries of poison messages the consumers saw."""
    producers = max(1, settings.concurrency // 2)
    consumers = [await Consumer.start(run, queue, settings.batch)
                 for _ in range(max(1, settings.concurrency - producers))]
    channels = await pool([await run.raw() for _ in range(producers)])
    posted = itertools.count(0, settings.batch)
    stop = asyncio.Event()
    poison_deliveries = 0

    async def produce(due: float | None) -> bool:
        channel = await channels.get()
        try:
            await timed_publish(recorder, channel, queue,
                                bodies(settings, settings.batch, next(posted), poison), due)
        finally:
            channels.put_nowait(channel)
        return True

    async def consume(consumer: Consumer) -> None:
        nonlocal poison_deliveries
        # Take, ack, and nack the poison: three requests at most, as loadgen's.
        while not stop.is_set() and recorder.reserve(3):
            batch = await consumer.take(settings.batch, whole=False,
                                        until=time.monotonic() + 0.1)
            if not batch:
                continue  # nothing arrived: ask again, as a claim answering 204 would
            recorder.unanswered += 1  # the "claim"
            arrived = [consumer.arrival.pop(m.delivery_tag) for m in batch]
            stamps = [orjson.loads(m.body)["t"] for m in batch]
            recorder.end_to_end.extend(a - t for a, t in zip(arrived, stamps, strict=True))
            good = await settle(recorder, consumer.channel, batch)
            poison_deliveries += len(batch) - len(good)
            recorder.messages += len(good)

    async def producers_then_stop() -> None:
        await drive(settings, recorder, produce, workers=producers)
        stop.set()

    await asyncio.gather(producers_then_stop(), *(consume(c) for c in consumers))
    return poison_deliveries


async def cycle_workload(settings: Settings, run: Run) -> dict[str, object]:
    admin = await run.channel()
    queue = run.name("cycle")
    await run.declare(admin, queue, QUORUM)
    recorder = AmqpRecorder(max_requests=settings.requests, duration=settings.duration)
    await produce_and_consume(settings, run, recorder, queue, poison=False)
    return recorder.summary("cycle")


async def poison_workload(settings: Settings, run: Run,
                          delivery_limit: int) -> dict[str, object]:
    admin = await run.channel()
    queue, dead, exchange = run.name("poison"), run.name("poison-dlq"), run.name("poison-dlx")
    run.exchanges.append(exchange)
    dlx = await admin.declare_exchange(exchange, "fanout", durable=True)
    dlq = await run.declare(admin, dead, QUORUM)
    await dlq.bind(dlx)
    await run.declare(admin, queue, {
        **QUORUM, "x-delivery-limit": delivery_limit, "x-dead-letter-exchange": exchange,
        "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"})
    recorder = AmqpRecorder(max_requests=settings.requests, duration=settings.duration)
    deliveries = await produce_and_consume(settings, run, recorder, queue, poison=True)
    elapsed = recorder.elapsed()
    moved = (await admin.declare_queue(dead, passive=True)).declaration_result.message_count
    recorder.extra.update(dead_letter_moves=moved,
                          dead_letter_moves_per_s=round(moved / elapsed, 1),
                          poison_deliveries=deliveries, delivery_limit=delivery_limit)
    summary = recorder.summary("poison", elapsed)
    summary["good_msgs_per_s"] = summary["msgs_per_s"]
    return summary


async def run_workloads(settings: Settings, workloads: list[str],
                        delivery_limit: int) -> list[dict[str, object]]:
    results = []
    prefix = f"amqpbench-{uuid.uuid4().hex[:8]}"
    for name in workloads:
        run = Run(settings.url, prefix)
        try:
            if name == "post":
                result = await post_workload(settings, run)
            elif name == "claim-delete":
                result = await claim_delete_workload(settings, run)
            elif name == "cycle":
                result = await cycle_workload(settings, run)
            else:
                result = await poison_workload(settings, run, delivery_limit)
        finally:
            await run.clean()
        result.update(concurrency=settings.concurrency, batch=settings.batch,
                      body_size=settings.body_size, rate=settings.rate or None, wait=None,
                      broker="rabbitmq", queue_type="quorum")
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


def broker_version(url: str) -> tuple[str, str]:
    """The broker's version (from its connection properties) and aio-pika's."""
    import aio_pika

    async def ask() -> str:
        connection = await aio_pika.connect(url)
        try:
            properties = connection.transport.connection.server_properties
            return str(properties.get("version", "unknown"))
        finally:
            await connection.close()

    return asyncio.run(ask()), aio_pika.__version__


def parse_args(argv: list[str] | None = None) -> tuple[Settings, list[str], int]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.amqp_load",
        description="loadgen's workloads against a local RabbitMQ's quorum queues.",
        epilog="examples:\n"
               "  python -m benchmarks.amqp_load --url amqp://guest:guest@127.0.0.1:5672/ "
               "--workload post\n"
               "  python -m benchmarks.amqp_load --workload claim-delete --duration 10\n\n"
               + __doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=DEFAULT_URL,
                        help="broker on a loopback address (default: %(default)s)")
    parser.add_argument("--workload", action="append", choices=[*WORKLOAD_NAMES, "all"],
                        help="repeatable; 'all' is post, claim-delete, cycle, poison "
                             "(default: all)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="closed loop: operations in flight (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=3000,
                        help="at most this many requests per workload (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=15.0,
                        help="at most this many seconds per workload (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=10,
                        help="messages per publish batch and per consumer's prefetch "
                             "(default: %(default)s)")
    parser.add_argument("--body-size", type=int, default=1024,
                        help="bytes of each message body as JSON (default: %(default)s)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="open loop: operations started per second (default: closed loop)")
    parser.add_argument("--max-in-flight", type=int, default=256,
                        help="open loop: outstanding operations at most (default: %(default)s)")
    parser.add_argument("--delivery-limit", type=int, default=MAX_CLAIM_COUNT - 1,
                        help="poison: the queue's x-delivery-limit; RabbitMQ delivers a "
                             "message limit + 1 times, so the default delivers it as often "
                             "as zq's _max_claim_count 3 (default: %(default)s)")
    args = parse_load_args(parser, argv)
    if args.duration <= 0 or args.rate < 0 or args.delivery_limit < 0:
        parser.error("--duration must be positive, --rate and --delivery-limit not negative")
    chosen = args.workload or ["all"]
    workloads = WORKLOAD_NAMES if "all" in chosen else chosen
    settings = Settings(url=args.url, concurrency=args.concurrency, requests=args.requests,
                        duration=args.duration, batch=args.batch, body_size=args.body_size,
                        rate=args.rate, max_in_flight=args.max_in_flight)
    return settings, workloads, args.delivery_limit


def main(argv: list[str] | None = None) -> int:
    settings, workloads, delivery_limit = parse_args(argv)
    try:
        asyncio.run(run_workloads(settings, workloads, delivery_limit))
    except (OSError, RuntimeError) as exc:
        print(f"amqp_load: {settings.url}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # aio-pika's and aiormq's own errors (connection, channel)
        print(f"amqp_load: {settings.url}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
