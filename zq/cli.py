"""The ``zq`` command line: one parser, subcommands from the modules that own them.

Each module listed in COMMAND_MODULES has ``register(subparsers)``, which adds
its subcommand(s) and binds ``handler(args) -> int | None``. Exit status: 0 on
success, 1 when the command fails (bad configuration, unreachable storage,
...), 2 for a bad command line, 130 when stopped by Ctrl-C. Errors are one line on stderr, never a
traceback (``zq --traceback ...`` shows it when debugging zq itself).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from zq import __version__
from zq.commands.options import UsageError
from zq.config import ConfigError, unknown_variables
from zq.errors import ZqError
from zq.startup import StartupError

# The command each module adds, in the order `zq --help` lists them. `zq
# COMMAND ...` imports only the module that owns COMMAND: importing them all
# (the pooling store pulls in SQLAlchemy and Alembic) cost every command,
# `zq stats` included, 0.3-2 s of start-up.
COMMANDS: dict[str, str] = {
    "serve": "zq.commands.serve",
    "db": "zq.commands.db",
    "gc": "zq.commands.gc",
    "config": "zq.commands.config",
    "token": "zq.commands.token",  # token add / list / revoke
    "events": "zq.analytics.cli",  # events export
    "stats": "zq.analytics.cli",
    "redrive": "zq.commands.redrive",  # redrive DLQ
    "breaker": "zq.commands.breaker",  # breaker show / open / close QUEUE
}
# The modules that add subcommands, in that order.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))

# Modules whose import failed: name -> reason. Shown by `zq --help`; the
# test suite requires it to be empty, so a module lost in a merge fails the
# tests loudly while the other commands keep working for users.
UNAVAILABLE: dict[str, str] = {}

DESCRIPTION = """\
zq: a multi-tenant message queue speaking the OpenStack Zaqar v2 REST API,
built around dead letter queues. Messages that keep failing are moved to a
dead letter queue after _max_claim_count claims, with their claim count and
history, and every state change is an event analysts can export."""

EPILOG = """\
examples:
  zq serve                                    serve on SQLite in the data directory
  zq serve --storage postgresql://zq@db/zq    serve on PostgreSQL
  zq serve --pooling                          spread queues over pools (see /v2/pools)
  zq db upgrade --storage mysql://zq@db/zq    create or migrate an SQL schema
  zq gc                                       remove expired messages now
  zq config                                   show the effective configuration
  zq redrive orders-dlq --project shop        send dead letters back to their queues
  zq breaker show orders --project shop       is the outage breaker of orders open?

Run `zq COMMAND --help` for the options of a command.
Configuration: defaults < --config FILE or $ZQ_CONFIG < ZQ_* variables < flags."""

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as the shell reports a command stopped by SIGINT


def _modules_for(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The modules to import for ``argv``: the named command's own, else all (help, typos)."""
    if argv is None:
        return COMMAND_MODULES
    command = next((word for word in argv if not word.startswith("-")), None)
    return (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``zq`` parser: every available subcommand, or only the one ``argv`` names."""
    UNAVAILABLE.clear()
    parser = argparse.ArgumentParser(
        prog="zq", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zq {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="on failure, show the Python traceback (for debugging zq)")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in _modules_for(argv):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            UNAVAILABLE[name] = str(exc)
            continue
        module.register(subparsers)
    _remember_parsers(parser)
    if UNAVAILABLE:
        missing = "; ".join(f"{name} ({reason})" for name, reason in UNAVAILABLE.items())
        parser.epilog = f"{EPILOG}\n\nunavailable commands: {missing}"
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Let every (sub)command's parser name itself in ``args.command_parser``.

    A subcommand's defaults are applied after its parent's, so the parser
    of the command that was typed wins: its usage is the one a bad
    command line shows.
    """
    parser.set_defaults(command_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _remember_parsers(sub)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``zq`` with ``argv`` (default: the process arguments); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    # Exits with 2 on a bad command line. Unknown words are reported by the
    # typed command's parser, with its usage, not zq's.
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    for warning in unknown_variables():
        print(f"zq: warning: {warning}", file=sys.stderr)
    try:
        result = args.handler(args)
    except UsageError as exc:
        args.command_parser.error(str(exc))  # usage and the message, exit status 2
    except (ConfigError, StartupError, ZqError) as exc:  # CommandError is a StartupError
        return fail(args, exc, str(exc))
    except KeyboardInterrupt:
        print("zq: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a driver's or library's own error
        return fail(args, exc, f"{type(exc).__name__}: {exc}")
    return EXIT_OK if result is None else int(result)


def fail(args: argparse.Namespace, exc: BaseException, message: str) -> int:
    """Report a failed command in one line (or with its traceback if asked)."""
    if args.traceback:
        raise exc
    first_line = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    print(f"zq: error: {first_line}", file=sys.stderr)
    return EXIT_FAILURE
