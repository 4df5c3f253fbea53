"""How long a new subscription's first notification takes on a long event log.

    python -m benchmarks.first_notification [--events 100000] [--tree DIR]
    (from the repository root)

Fills a fresh SQLite file with ``--events`` events (posts of 100 messages to
another queue), subscribes a local webhook receiver through the
subscription service, posts one message to the subscribed queue and times
until the receiver has it, with a notifier ticking in process. ``--tree``
runs the same in a fresh process with another zq source tree first on the
path (an older checkout, for a before/after).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def measure(events: int) -> float:
    from tests.notifications.helpers import config, notifier, receiver
    from zq.clock import SystemClock
    from zq.config import Limits
    from zq.events import fingerprint
    from zq.pooling import SingleBackend
    from zq.storage import open_storage
    from zq.storage.records import NewMessage
    from zq.subscriptions import SubscriptionService

    folder = tempfile.mkdtemp()
    storage = open_storage(f"sqlite:///{folder}/log.sqlite3")
    body = '{"i": 1}'
    batch = [NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))] * 100
    for _ in range(events // 100):
        storage.messages.post("p", "filler", batch, client_id=None)
    service = SubscriptionService(Limits(), SingleBackend(storage))
    with receiver() as hook:
        service.create("p", "q", {"subscriber": hook.url("/first")})
        time.sleep(2.1)  # the subscription's whole-second age: the post is younger
        started = time.monotonic()
        storage.messages.post("p", "q", batch[:1], client_id=None)
        server = notifier(storage, SystemClock(), config(hook.port))
        while not hook.received:
            server.tick()
            time.sleep(0.002)
        took = time.monotonic() - started
        server.close()
    storage.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python -m benchmarks.first_notification\n"
               "  python -m benchmarks.first_notification --events 100000 --tree /tmp/zq-main",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000,
                        help="events in the log before the subscription (default: %(default)s)")
    parser.add_argument("--tree", metavar="DIR",
                        help="another zq source tree to measure instead")
    args = parser.parse_args()
    if args.tree:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([args.tree, here])}
        code = ("import sys; from benchmarks.first_notification import measure; "
                f"print(measure({args.events}))")
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True, cwd=args.tree).stdout
        took = float(out.strip().splitlines()[-1])
    else:
        took = measure(args.events)
    print(f"{args.events} events: first notification after {took:.3f} s")


if __name__ == "__main__":
    main()
