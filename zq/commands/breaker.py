"""``zq breaker show|open|close``: see and force a queue's outage breaker.

Talks to the storage through the service (zq.service.QueueService), as
``zq redrive`` does and as the server does, so the breaker shown is the one
``GET /v2/queues/{q}/stats`` shows and a forced one writes the same
``breaker`` event as ``POST /v2/queues/{q}/breaker``. The breaker lives in
the backend, so a running server sees the change at its next claim.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from zq import validation
from zq.clock import SystemClock
from zq.commands.options import (
    UsageError,
    add_config_arguments,
    add_pooling_arguments,
    config_from_args,
)
from zq.errors import InvalidRequest
from zq.poison.history import iso8601
from zq.pooling.setup import open_pools
from zq.service import QueueService
from zq.startup import ensure_default_data_dir, ensure_management_dir
from zq.storage.breakers import BreakerState

DESCRIPTION = """\
See or force the outage breaker of queue QUEUE (docs/poison.md). A queue's
breaker is on once its metadata sets _breaker_failure_ratio; it trips open
when many distinct messages fail alike (a dependency outage), holds
deliveries back to one probe per _breaker_probe_interval while open, and
closes after _breaker_close_after successful probes in a row.

  show   the state, since when, and the failure description most failures
         in the window shared
  open   force it open now (as a trip: failures are no longer charged to
         messages, one probe delivery per interval)
  close  force it closed now (full speed again; the window's failures are
         forgotten and the outage's dead letters are redriven, as when
         probes close it)

A forced change writes a `breaker` event with forced: true, like
POST /v2/queues/{q}/breaker."""

EPILOG = """\
examples:
  zq breaker show orders --project shop
  zq breaker show orders --project shop --json
  zq breaker open orders --project shop          stop deliveries while you fix a dependency
  zq breaker close orders --project shop         deliver at full speed again
  zq breaker show orders --project shop --storage postgresql://zq@db/zq

exit status: 0 done (show: also for a breaker that is off), 1 failed (a
queue that does not exist, a breaker that is off for open/close,
unreachable storage), 2 bad command line."""

# action -> (help, description, the state it forces or None to show)
ACTIONS: dict[str, tuple[str, str, str | None]] = {
    "show": ("show the breaker's state, since when and why",
             "Show the breaker of queue QUEUE: its state (closed, open or half-open),\n"
             "since when (UTC), and the failure description most failures in the\n"
             "window shared; or that it is off.", None),
    "open": ("force the breaker open",
             "Force the breaker of queue QUEUE open: failures are no longer charged to\n"
             "messages and deliveries slow to one probe per _breaker_probe_interval,\n"
             "until probes close it or you close it.", "open"),
    "close": ("force the breaker closed",
              "Force the breaker of queue QUEUE closed: deliveries at full speed again,\n"
              "the window's failures forgotten, the outage's dead letters redriven\n"
              "(_auto_redrive_max), as when probes close it.", "closed"),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = subparsers.add_parser(
        "breaker", help="see or force a queue's outage breaker",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=raw,
    )
    actions = parser.add_subparsers(title="breaker commands", metavar="ACTION", required=True)
    for action, (summary, description, forced) in ACTIONS.items():
        sub = actions.add_parser(action, help=summary, description=description,
                                 epilog=EPILOG, formatter_class=raw)
        sub.add_argument("queue", metavar="QUEUE", help="the queue whose breaker it is")
        sub.add_argument("--project", required=True, metavar="P",
                         help="the project (X-Project-ID) the queue belongs to")
        sub.add_argument("--json", action="store_true",
                         help='print the breaker as GET .../stats shows it: '
                              '{"state", "since", "description"} (null when off)')
        add_config_arguments(sub)
        add_pooling_arguments(sub)
        sub.set_defaults(handler=run, forced=forced)


def check_command_line(args: argparse.Namespace, service: QueueService) -> None:
    """Refuse a malformed project or queue name as a bad command line (zq.validation)."""
    try:
        validation.project_id(args.project, service.limits)
        validation.queue_name(args.queue, service.limits)
    except InvalidRequest as exc:
        raise UsageError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    ensure_default_data_dir(config)
    if config.pooling.enabled:
        ensure_management_dir(config)
    pools, _ = open_pools(config, clock=SystemClock())
    try:
        service = QueueService(config.limits, pools)
        check_command_line(args, service)
        return act(service, args, sys.stdout)
    finally:
        pools.close()


def act(service: QueueService, args: argparse.Namespace, out: TextIO) -> int:
    """Show or force the breaker and print it; the exit status."""
    if args.forced is None:
        state = service.breaker(args.project, args.queue)
    else:
        state = service.force_breaker(args.project, args.queue, {"state": args.forced})
    if args.json:
        print(json.dumps(None if state is None else breaker_state(state)), file=out)
    elif state is None:
        print(f"{args.queue}: breaker off (set _breaker_failure_ratio in its metadata to "
              "turn it on)", file=out)
    else:
        print(describe(args.queue, state, forced=args.forced is not None), file=out)
    return 0


def breaker_state(state: BreakerState) -> dict[str, object]:
    """The breaker as ``GET .../stats`` shows it (``since`` in ISO 8601 UTC)."""
    return {"state": state.state, "since": iso8601(state.since),
            "description": state.description}


def describe(queue: str, state: BreakerState, *, forced: bool = False) -> str:
    """One line for people: ``orders: breaker open since ... -- description``."""
    shown = breaker_state(state)
    verb = "forced " if forced else ""
    # A breaker that never moved on a backend that does not know when the
    # queue was created: since the epoch, which says nothing to a person.
    when = f"since {shown['since']}" if state.since > 0 else "(never tripped)"
    line = f"{queue}: breaker {verb}{shown['state']} {when}"
    if shown["description"]:
        line += f" -- failures shared: {shown['description']}"
    return line
