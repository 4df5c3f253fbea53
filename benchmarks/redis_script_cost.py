"""Redis's own time per claim, delete and delete_many script call (INFO commandstats).

    python -m benchmarks.redis_script_cost REDIS_URL [-n N] [--rounds R] [--breaker]
    (from the repository root; PYTHONPATH=OTHER_CHECKOUT for a before/after)

Posts N messages, then times three phases: claims of 10 (N / 10 calls),
deletes of single messages by their claim (half of them) and delete_many
of a claim's 10 messages (the other half), each as the server's
microseconds per EVALSHA (``cmdstat_evalsha``), not the client's: what
the scripts cost Redis, without Python's share. ``--breaker`` passes a
breaker and blame split in the rules (every claim-delete a success), for
what they cost when on. Prints one JSON line per round and the medians.

CONFIG RESETSTAT clears the server's statistics before each phase, so give
it a Redis of its own (a scratch ``redis-server --port P --save ''``); its
keys are under a random prefix and removed at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import uuid
from typing import Any

import redis

from zq.clock import SystemClock
from zq.events import fingerprint
from zq.storage.records import NewMessage
from zq.storage.redis.storage import RedisStorage

PHASES = ("claim10", "delete", "delete_many10")


def one_round(client: redis.Redis, n: int, breaker: bool) -> dict[str, float]:
    """Server microseconds per call of each phase, on a fresh prefix."""
    prefix = f"cost{uuid.uuid4().hex[:8]}:"
    storage = RedisStorage(client, prefix, SystemClock())
    extra: dict[str, Any] = {}
    if breaker:  # only a checkout with the breaker knows these
        from zq.poison.breaker import BreakerPolicy
        from zq.storage.delivery_rules import DeliveryRules

        extra = {"rules": DeliveryRules(breaker=BreakerPolicy(failure_ratio=0.5),
                                        blame_split=True)}
    body = json.dumps({"payload": "x" * 100})
    batch = [NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))] * 10
    for _ in range(n // 10):
        storage.messages.post("p", "q", batch, client_id="c")
    claims = []
    half = n // 20

    def claim() -> None:
        for _ in range(n // 10):
            claims.append(storage.claims.create("p", "q", ttl=600, grace=60, limit=10,
                                                client_id="c", **extra))

    def delete() -> None:
        for made in claims[:half]:
            for m in made.messages:
                storage.messages.delete("p", "q", m.id, claim_id=made.id, client_id="c",
                                        **extra)

    def delete_many() -> None:
        for made in claims[half:]:
            storage.messages.delete_many("p", "q", [m.id for m in made.messages],
                                         claim_ids=[made.id], client_id="c", **extra)

    found = {}
    try:
        for name, phase in zip(PHASES, (claim, delete, delete_many), strict=True):
            client.config_resetstat()
            phase()
            stats = client.info("commandstats").get("cmdstat_evalsha", {})
            found[name] = stats["usec"] / stats["calls"]
    finally:
        storage.queues.delete("p", "q")
        for key in client.scan_iter(match=prefix + "*", count=1000):
            client.delete(key)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.redis_script_cost redis://127.0.0.1:6391/0 --rounds 1\n"
               "  python -m benchmarks.redis_script_cost redis://127.0.0.1:6391/0 --rounds 1 "
               "--breaker",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="a Redis of its own, e.g. redis://127.0.0.1:6391/0")
    parser.add_argument("-n", type=int, default=2000,
                        help="messages per round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds (default: %(default)s)")
    parser.add_argument("--breaker", action="store_true",
                        help="rules with a breaker and blame split")
    args = parser.parse_args()
    client = redis.Redis.from_url(args.url, decode_responses=True)
    rounds = []
    for _ in range(args.rounds):
        rounds.append(one_round(client, args.n, args.breaker))
        print(json.dumps({k: round(v, 1) for k, v in rounds[-1].items()}), flush=True)
    print(json.dumps({"median_usec_per_call": {
        phase: round(statistics.median(r[phase] for r in rounds), 1) for phase in PHASES},
        "breaker": args.breaker, "n": args.n, "rounds": args.rounds}))


if __name__ == "__main__":
    main()
