"""``zq config``: show the effective configuration as TOML."""

from __future__ import annotations

import argparse
import dataclasses
import json

from zq.commands.options import add_config_arguments, config_from_args
from zq.config import MASK_KEYS, MASK_URI_PASSWORD, MASK_VALUE, Config, EncryptionConfig
from zq.storage.uri import REDACTED, redact

DESCRIPTION = """\
Print the configuration zq would run with, as a TOML file: built-in
defaults, overridden by the file (--config or $ZQ_CONFIG), overridden by
ZQ_* environment variables, overridden by flags. Every setting is shown,
so the output is also a complete template for a configuration file.
Secrets are never shown: the passwords of the storage and management store
URIs, [signed_urls] secret_key, [encryption] fingerprint_key and the keys of
[encryption] keys (their ids stay) are shown as ***."""

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
            if section.name == "storage" and item.name == "uri" and not value:
                comment = f"  # empty: {config.storage.resolved_uri()}"
            value = masked(value, item.metadata.get("secret"))
            # JSON strings and numbers are valid TOML basic strings and numbers.
            lines.append(f"{item.name} = {json.dumps(value)}{comment}")
        lines.append("")
    return "\n".join(lines)


def masked(value: object, secret: str | None) -> object:
    """A setting as it may be shown: secrets masked, everything else as is."""
    if secret == MASK_VALUE and value:
        return REDACTED
    if secret == MASK_URI_PASSWORD and isinstance(value, str):
        return redact(value)
    if secret == MASK_KEYS and isinstance(value, str):
        keys = EncryptionConfig(keys=value).parsed_keys()
        return ",".join(f"{key_id}:{REDACTED}" for key_id in keys)
    return value
