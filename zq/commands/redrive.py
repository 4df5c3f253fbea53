"""``zq redrive``: send the dead letters of a queue back, page by page.

Talks to the storage through the service (zq.service.QueueService.redrive),
as the server does, so the rule, the pool checks and the events are the
same as ``POST /v2/queues/{dlq}/redrive``. Each page is one call: each of
its destinations moves in one atomic step, so stopping between two calls
(Ctrl-C) loses or doubles nothing; running the command again continues.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from zq import validation
from zq.clock import SystemClock
from zq.commands.options import (
    UsageError,
    add_config_arguments,
    add_pooling_arguments,
    config_from_args,
)
from zq.config import Limits
from zq.encryption import BodyCipher
from zq.errors import InvalidRequest
from zq.poison.redrive import DEAD_LETTER_REASONS, RedriveResult
from zq.pooling.setup import open_pools
from zq.service import QueueService
from zq.startup import ensure_default_data_dir, ensure_management_dir

EXIT_INTERRUPTED = 130  # the shell's status for a command stopped by SIGINT

DESCRIPTION = """\
Move messages of the dead letter queue DLQ back: each to the queue it was
dead lettered from (its most recent history entry), or all to --to. A
message keeps its id, body and history (a "redriven" entry is added); its
claim count starts over and its redrive count goes up by one; a
`redriven` event is recorded for each. The same rule as
POST /v2/queues/{dlq}/redrive, applied page after page until the whole
queue has been walked, with a progress bar on stderr and a summary line.

Ctrl-C stops after the page in flight: every message is then either moved
or still in DLQ, never both. Run the same command again to go on. Messages
held by a live claim in DLQ are left to their holder.

A DLQ that does not exist is an error (a misspelt name is not an empty
queue), and so is a destination that does not exist (a misspelt --to, or
a source queue deleted since) unless --create is given; nothing moves then."""

EPILOG = """\
examples:
  zq redrive orders-dlq --project shop --dry-run          what would move, and where
  zq redrive orders-dlq --project shop                    everything back to its source
  zq redrive orders-dlq --project shop --reason rejected --from orders
  zq redrive orders-dlq --project shop --fingerprint 9f2c61d0a4b3e8f7 --to orders-retry --create
  zq redrive orders-dlq --project shop --rate 200/s --limit 10000
  zq redrive orders-dlq --project shop --storage postgresql://zq@db/zq

exit status: 0 done, 1 failed (nothing is half moved), 2 bad command line,
130 stopped by Ctrl-C."""

RATE_PATTERN = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:/s)?")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "redrive", help="move dead letters back to their queues",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dlq", metavar="DLQ", help="the dead letter queue to redrive")
    parser.add_argument("--project", required=True, metavar="P",
                        help="the project (X-Project-ID) the queue belongs to")
    parser.add_argument("--to", metavar="Q",
                        help="send every message to Q (default: back to its source queue)")
    parser.add_argument("--reason", choices=DEAD_LETTER_REASONS,
                        help="only messages dead lettered for this reason")
    parser.add_argument("--from", dest="source", metavar="Q",
                        help="only messages dead lettered from queue Q")
    parser.add_argument("--fingerprint", metavar="F",
                        help="only messages with this body fingerprint (as zq stats shows)")
    parser.add_argument("--create", action="store_true",
                        help="create a destination queue that does not exist (without it, "
                             "a missing destination is an error and nothing moves)")
    parser.add_argument("--dry-run", action="store_true",
                        help="count what would move and where, move nothing")
    parser.add_argument("--rate", metavar="N/s", type=parse_rate,
                        help="at most N messages per second (e.g. 200 or 200/s)")
    parser.add_argument("--limit", metavar="N", type=positive_int,
                        help="at most N messages in all (default: the whole queue)")
    add_config_arguments(parser)
    add_pooling_arguments(parser)
    parser.set_defaults(handler=run)


def parse_rate(text: str) -> float:
    """``N`` or ``N/s`` messages per second, N > 0."""
    found = RATE_PATTERN.fullmatch(text.strip())
    if found is None or float(found.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a rate: give messages per second, e.g. 200 or 200/s")
    return float(found.group(1))


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return int(text)


def check_command_line(args: argparse.Namespace, limits: Limits) -> None:
    """Refuse, as a bad command line, what the service would refuse in every page.

    Uses the service's own rules (zq.validation), before storage is opened.
    """
    if args.fingerprint is not None and not validation.FINGERPRINT_PATTERN.fullmatch(
            args.fingerprint):
        raise UsageError(
            f"--fingerprint {args.fingerprint!r} is not a fingerprint: 16 lowercase hex "
            "digits, as zq stats and the dead_lettered events show it.")
    names = (("DLQ", args.dlq), ("--to", args.to), ("--from", args.source))
    try:
        validation.project_id(args.project, limits)
        for flag, value in names:
            if value is not None:
                validation.name(value, field=flag, max_length=limits.max_queue_name_length)
    except InvalidRequest as exc:
        raise UsageError(str(exc)) from exc
    if args.to == args.dlq:
        raise UsageError(
            f"--to names the dead letter queue itself ({args.dlq!r}): leave --to out to "
            "send each message back where it was dead lettered from.")


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    check_command_line(args, config.limits)
    ensure_default_data_dir(config)
    if config.pooling.enabled:
        ensure_management_dir(config)
    pools, _ = open_pools(config, clock=SystemClock())
    try:
        service = QueueService(config.limits, pools,
                               cipher=BodyCipher.from_config(config.encryption))
        return Redrive(service, args, sys.stdout, sys.stderr).run()
    finally:
        pools.close()


@dataclass
class Totals:
    """What the pages so far matched, moved and created."""

    matched: int = 0
    moved: int = 0
    to: dict[str, int] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    pages: int = 0

    def add(self, result: RedriveResult) -> None:
        self.matched += result.matched
        self.moved += result.moved
        self.pages += 1
        for queue, count in result.to.items():
            self.to[queue] = self.to.get(queue, 0) + count
        self.created += [queue for queue in result.created if queue not in self.created]


class Redrive:
    """One run of the command: pages, pacing, progress, Ctrl-C, summary."""

    def __init__(self, service: QueueService, args: argparse.Namespace, out: TextIO,
                 err: TextIO, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.service = service
        self.args = args
        self.out = out
        self.err = err
        self.monotonic = monotonic
        self.stop = threading.Event()
        self.totals = Totals()
        self.held = 0  # the dead letter queue's unclaimed messages when we started

    @property
    def filtered(self) -> bool:
        """Whether a filter selects among the messages (their number is then unknown)."""
        return any(value is not None for value in (self.args.reason, self.args.source,
                                                    self.args.fingerprint))

    def body(self, limit: int, marker: str | None) -> dict[str, Any]:
        selected = {"reason": self.args.reason, "from": self.args.source,
                    "fingerprint": self.args.fingerprint}
        return {"to": self.args.to, "dry_run": self.args.dry_run or None, "limit": limit,
                "marker": marker, "create": self.args.create or None,
                "filter": {k: v for k, v in selected.items() if v is not None} or None}

    def run(self) -> int:
        args = self.args
        # Claimed messages stay with their holders: the unclaimed ones are
        # what can move.
        self.held = self.service.queue_stats(args.project, args.dlq).free
        total = self.held if args.limit is None else min(self.held, args.limit)
        progress = Progress(self.err, total, args.dry_run, upper_bound=self.filtered)
        cap = validation.redrive_limit_cap(self.service.limits)
        page = cap if args.rate is None else max(1, min(cap, int(args.rate)))
        started = self.monotonic()
        marker: str | None = None
        previous = signal.signal(signal.SIGINT, self._interrupted)
        try:
            while not self.stop.is_set():
                room = page if args.limit is None else min(page, args.limit - self.totals.matched)
                if room <= 0:
                    break
                result = self.service.redrive(args.project, args.dlq, self.body(room, marker),
                                              client_id=None)
                self.totals.add(result)
                if args.rate is not None:
                    # Paced by what was handled so far, the last page too: a
                    # page starts, and the run ends, when the rate allows it,
                    # so the bar and the summary show the paced rate, not a
                    # page's burst (an Event wait, so Ctrl-C ends it at once).
                    due = started + self.totals.matched / args.rate
                    self.stop.wait(max(0.0, due - self.monotonic()))
                progress.show(self.totals, self.monotonic() - started)
                if result.next is None:
                    break
                marker = result.next
        finally:
            signal.signal(signal.SIGINT, previous)
            progress.done()
        elapsed = self.monotonic() - started
        print(self.summary(elapsed), file=self.out)
        return EXIT_INTERRUPTED if self.stop.is_set() else 0

    def _interrupted(self, signum: int, frame: object) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: stop now (the page is atomic anyway)
        self.stop.set()
        print("\nzq: stopping after the page in flight (Ctrl-C again to abort)",
              file=self.err, flush=True)

    def summary(self, elapsed: float) -> str:
        totals, dlq = self.totals, self.args.dlq
        if totals.matched == 0 and not self.stop.is_set():
            return self._nothing_matched()
        where = ", ".join(f"{queue} {count}" for queue, count in sorted(totals.to.items()))
        where = f" ({where})" if where else ""
        rate = totals.moved / elapsed if elapsed > 0 else 0.0
        if self.args.dry_run:
            created = (f"; would create {', '.join(totals.created)}" if totals.created
                       else "")
            line = (f"Dry run: {totals.matched} message(s) of {dlq} would be redriven{where}"
                    f"{created}; nothing moved.")
        else:
            line = (f"Redrove {totals.moved} of {totals.matched} matched message(s) from "
                    f"{dlq}{where} in {elapsed:.1f} s ({rate:.0f}/s).")
            if totals.created:
                line += f" Created {', '.join(totals.created)}."
            if totals.matched > totals.moved:
                line += (f" {totals.matched - totals.moved} were claimed or moved by someone "
                         "else meanwhile and stayed where they were.")
        if self.stop.is_set():
            line = f"Interrupted: {line} Run the same command again to continue."
        return line

    def _nothing_matched(self) -> str:
        """Why nothing moved: an empty queue is not a match of nothing."""
        dlq = self.args.dlq
        if self.held == 0:
            return f"{dlq} holds no messages to redrive (none unclaimed): nothing moved."
        why = ("none matches the filters" if self.filtered
               else "none was dead lettered into it from another queue; --to sends "
                    "such messages somewhere")
        return f"{dlq} holds {self.held} unclaimed message(s), but {why}: nothing moved."


class Progress:
    """A progress bar on stderr: redrawn in place on a terminal, a line a second otherwise.

    Its 100% is the dead letter queue's unclaimed messages at the start,
    within --limit; with a filter only an upper bound is known ("of at most").
    """

    WIDTH = 30

    def __init__(self, err: TextIO, total: int, dry_run: bool, *,
                 upper_bound: bool = False) -> None:
        self.err = err
        self.total = total
        self.upper_bound = upper_bound
        self.verb = "matched" if dry_run else "redriven"
        self.tty = err.isatty()
        self.last_line = float("-inf")
        self.drawn = False
        self.pending: str | None = None  # a state not written yet (not on a terminal)

    def show(self, totals: Totals, elapsed: float) -> None:
        if self.total == 0:
            return  # nothing can move: the summary says so, a bar at 0/0 would not
        done = totals.matched if self.verb == "matched" else totals.moved
        share = min(1.0, done / self.total) if self.total else 1.0
        filled = int(share * self.WIDTH)
        rate = done / elapsed if elapsed > 0 else 0.0
        of = f" of at most {self.total}" if self.upper_bound else f"/{self.total}"
        text = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}{of} "
                f"{self.verb}, {rate:.0f}/s")
        if self.tty:
            self.err.write("\r" + text)
            self.drawn = True
        elif elapsed - self.last_line >= 1.0:
            self.err.write(text + "\n")
            self.last_line = elapsed
            self.pending = None
        else:
            self.pending = text
        self.err.flush()

    def done(self) -> None:
        if self.drawn:
            self.err.write("\n")
        elif self.pending is not None:
            self.err.write(self.pending + "\n")  # the last state, so a log ends complete
        self.err.flush()
