"""The process tests/crash/test_sigkill_group_commit.py kills in a shared commit.

``python -m tests.crash.group_commit_child URI PROJECT MODE``: posts
``BEFORE`` messages one by one (each printed ``ACK n`` once answered), then
``GROUP`` posts from as many threads, queued behind a first write that
holds the lead so that they form one group. When that group reaches its
COMMIT (MODE ``before``: all its statements run, COMMIT not sent; MODE
``after``: COMMIT returned, nobody answered yet) it prints ``IN COMMIT``
and waits to be killed.
"""

from __future__ import annotations

import sys
import threading
import time

from zq.clock import SystemClock
from zq.config import SqlConfig
from zq.storage.records import NewMessage
from zq.storage.sql import SqlStorage, open_sql

BEFORE = 3
GROUP = 5


def message(n: int) -> NewMessage:
    body = f'{{"n": {n}}}'
    return NewMessage(body=body, ttl=3600, delay=0, fingerprint=str(n))


def main(uri: str, project: str, mode: str) -> None:
    store = open_sql(uri, clock=SystemClock(), settings=SqlConfig(group_commit=True))
    assert isinstance(store, SqlStorage)
    group = store._db.group
    assert group is not None

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def in_commit(size: int) -> None:
        if size == GROUP:
            say("IN COMMIT")
            time.sleep(3600)  # until the SIGKILL

    if mode == "before":
        group.before_commit = in_commit
    else:
        group.after_commit = in_commit

    for n in range(BEFORE):
        store.messages.post(project, "q", [message(n)], client_id="c")
        say(f"ACK {n}")

    def hold(_conn: object) -> None:
        while len(group._waiting) < GROUP:
            time.sleep(0.001)

    def post(n: int) -> None:
        store.messages.post(project, "q", [message(n)], client_id="c")
        say(f"ACK {n}")

    leader = threading.Thread(target=store._db.write, args=(hold,))
    leader.start()
    while not group._leading:
        time.sleep(0.001)
    for n in range(BEFORE, BEFORE + GROUP):
        threading.Thread(target=post, args=(n,)).start()
    leader.join()
    time.sleep(3600)


if __name__ == "__main__":
    main(*sys.argv[1:4])
