"""Flags and start-up steps that several subcommands share.

The configuration is built once per command: defaults, then the TOML file
(``--config`` or ``ZQ_CONFIG``), then ``ZQ_*`` variables (all by
zq.config.load_config), then the command's flags on top.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from zq.config import Config, ConfigError, load_config
from zq.startup import StartupError


class CommandError(StartupError):
    """A command cannot do its job; zq prints the message and exits with 1."""


class UsageError(CommandError):
    """The command line itself is wrong; zq prints the command's usage and exits with 2.

    For what argparse cannot check alone: flag values checked by the rule
    that owns them (a port against the configuration's rule, a queue name
    against zq.validation), so each rule stays in one place.
    """


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE`` and ``--storage URI`` to a subcommand."""
    group = parser.add_argument_group("configuration")
    group.add_argument(
        "--config", metavar="FILE",
        help="TOML configuration file (default: $ZQ_CONFIG, else built-in defaults)",
    )
    group.add_argument(
        "--storage", metavar="URI",
        help="storage URI, e.g. sqlite:///var/lib/zq/zq.sqlite3, "
             "postgresql://user@host/db, mysql://user@host/db, redis://host:6379 "
             "(default: [storage] uri, $ZQ_STORAGE, else SQLite in the data directory)",
    )


def add_pooling_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--pooling/--no-pooling`` and ``--management URI`` to a subcommand."""
    group = parser.add_argument_group("pooling (queues spread over pools, see docs/pools.md)")
    group.add_argument(
        "--pooling", action=argparse.BooleanOptionalAction, default=None,
        help="spread queues over the pools of the management store "
             "(default: [pooling] enabled, $ZQ_POOLING_ENABLED, else off)",
    )
    group.add_argument(
        "--management", metavar="URI",
        help="management store URI (pools, flavors, catalog), e.g. "
             "postgresql://zq@db/zq_management; needs pooling on (default: "
             "[pooling] management, else SQLite zq-management.sqlite3 in the data directory)",
    )


def config_from_args(args: argparse.Namespace, **flag_sections: Mapping[str, Any]) -> Config:
    """The effective configuration: file and environment, then the flags.

    ``flag_sections`` maps a section to the flags given for it, with None
    for a flag that was not given (so it does not override anything).
    ``--storage``, ``--pooling`` and ``--management`` are read from ``args``
    when the command has them.
    """
    config = load_config(args.config)
    sections = {
        "storage": {"uri": getattr(args, "storage", None)},
        "pooling": {"enabled": getattr(args, "pooling", None),
                    "management": getattr(args, "management", None)},
        **flag_sections,
    }
    overrides = {
        section: {key: value for key, value in values.items() if value is not None}
        for section, values in sections.items()
    }
    overrides = {section: values for section, values in overrides.items() if values}
    if overrides:
        try:
            config = config.with_overrides(**overrides)
        except ConfigError as exc:
            # The file and the environment passed above: the flags are wrong.
            raise UsageError(str(exc)) from exc
    if getattr(args, "management", None) is not None and not config.pooling.enabled:
        # Ignoring it would leave the operator believing pooling is on.
        raise CommandError(
            "--management names the store of pooling, which is off: "
            "add --pooling (or set [pooling] enabled = true)."
        )
    return config
