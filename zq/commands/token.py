"""``zq token add|list|revoke``: the tokens file of ``[auth] strategy = "token"``."""

from __future__ import annotations

import argparse
from typing import Any

from zq.auth import tokens
from zq.config import ConfigError, load_config


def register(subparsers: Any) -> None:
    """Add ``zq token add|list|revoke`` to the ``zq`` command line."""
    parser = subparsers.add_parser(
        "token", help="manage bearer tokens ([auth] strategy = \"token\")",
        description="Manage the tokens file of [auth] strategy = \"token\". "
        "Only a hash of each token is stored.",
    )
    commands = parser.add_subparsers(title="token commands", metavar="ACTION", required=True)

    add = commands.add_parser("add", help="create a token and print it once")
    add.add_argument("--project", required=True, help="the project the token acts in")
    add.add_argument("--role", action="append", default=[], metavar="ROLE",
                     help="a role of the token, e.g. admin (repeatable)")
    add.add_argument("--description", default="", help="a note shown by `zq token list`")
    _file_arguments(add)
    add.set_defaults(handler=_add)

    show = commands.add_parser("list", help="list tokens (ids, projects, roles; never tokens)")
    _file_arguments(show)
    show.set_defaults(handler=_list)

    drop = commands.add_parser("revoke", help="remove a token by its id")
    drop.add_argument("token_id", metavar="ID")
    _file_arguments(drop)
    drop.set_defaults(handler=_revoke)


def _file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", metavar="FILE",
                        help="tokens file (default: [auth] tokens_file of the configuration)")
    parser.add_argument("--config", metavar="FILE",
                        help="TOML configuration file (default: $ZQ_CONFIG)")


def _tokens_file(args: argparse.Namespace) -> str:
    path = args.file or load_config(args.config).auth.tokens_file
    if not path:
        raise ConfigError("No tokens file: pass --file or set [auth] tokens_file.")
    return path


def _add(args: argparse.Namespace) -> int:
    token_id, token = tokens.issue(_tokens_file(args), args.project, args.role, args.description)
    print(f"id:      {token_id}\nproject: {args.project}\ntoken:   {token}")
    print("Store the token now: only its hash is kept, it cannot be shown again.")
    return 0


def _list(args: argparse.Namespace) -> int:
    for entry in tokens.read_entries(_tokens_file(args)):
        roles = ",".join(entry.get("roles", [])) or "-"
        print(f"{entry.get('id')}\t{entry.get('project')}\t{roles}\t"
              f"{entry.get('created', '')}\t{entry.get('description', '')}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    if not tokens.revoke(_tokens_file(args), args.token_id):
        raise ConfigError(f"No token with id {args.token_id!r}.")
    print(f"revoked {args.token_id}")
    return 0
