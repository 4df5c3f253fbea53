"""``zq config``: show the effective configuration as TOML."""

from __future__ import annotations

import argparse
import dataclasses
import json

from zq.commands.options import add_config_arguments, config_from_args
from zq.config import Config
from zq.storage.uri import redact

DESCRIPTION = """\
Print the configuration zq would run with, as a TOML file: built-in
defaults, overridden by the file (--config or $ZQ_CONFIG), overridden by
ZQ_* environment variables, overridden by flags. Every setting is shown,
so the output is also a complete template for a configuration file. A
password in the storage URI and the encryption keys are shown as ***."""

EPILOG = """\
examples:
  zq config
  zq config --config /etc/zq/zq.toml
  ZQ_LIMITS_MAX_MESSAGE_TTL=86400 zq config > zq.toml

Each setting is `[section] name` in the file and ZQ_SECTION_NAME in the
environment; the storage URI is also $ZQ_STORAGE."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config", help="print the effective configuration as TOML",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> None:
    print(to_toml(config_from_args(args)), end="")


def to_toml(config: Config) -> str:
    """The configuration as TOML text (settings are ints, floats and strings)."""
    lines: list[str] = []
    for section in dataclasses.fields(config):
        values = getattr(config, section.name)
        lines.append(f"[{section.name}]")
        for item in dataclasses.fields(values):
            value = getattr(values, item.name)
            comment = ""
            if section.name == "storage" and item.name == "uri":
                comment = "" if value else f"  # empty: {config.storage.resolved_uri()}"
                value = redact(value)
            elif section.name == "encryption" and item.name == "keys":
                value = ",".join(f"{key_id}:***" for key_id in config.encryption.parsed_keys())
            elif section.name == "encryption" and item.name == "fingerprint_key" and value:
                value = "***"
            # JSON strings and numbers are valid TOML basic strings and numbers.
            lines.append(f"{item.name} = {json.dumps(value)}{comment}")
        lines.append("")
    return "\n".join(lines)
