"""``zq token add|list|revoke``: the tokens file of ``[auth] strategy = "token"``."""

from __future__ import annotations

import argparse
from typing import Any

from zq.auth import tokens
from zq.config import ConfigError, load_config

TOKEN_DESCRIPTION = """\
Manage the tokens file of [auth] strategy = "token": each token is a random
secret that a client sends as `X-Auth-Token: TOKEN` (or `Authorization:
Bearer TOKEN`) and that acts in one project with some roles. Only a hash of
each token is stored, so `zq token add` shows a token once and never again.
A running server reads the file again when it changes."""

TOKEN_EPILOG = """\
examples:
  zq token add --project demo --file /etc/zq/tokens.json
  zq token add --project ops --role admin --description "pool admin"
  zq token list
  zq token revoke tok-3f2a9c1e

Without --file, the file is [auth] tokens_file of the configuration
(--config FILE, $ZQ_CONFIG or $ZQ_AUTH_TOKENS_FILE)."""

# action: (summary, description, examples)
ACTIONS = {
    "add": ("create a token and print it once",
            "Create a token for a project (and roles), store its hash and print the\n"
            "token once: it cannot be shown again.",
            "  zq token add --project demo\n"
            "  zq token add --project ops --role admin --description \"pool admin\"\n"
            "  zq token add --project demo --file /etc/zq/tokens.json"),
    "list": ("list tokens (ids, projects, roles; never tokens)",
             "List the tokens of the file, one per line: id, project, roles, creation\n"
             "time and description, tab-separated. The tokens themselves are never shown.",
             "  zq token list\n"
             "  zq token list --file /etc/zq/tokens.json"),
    "revoke": ("remove a token by its id",
               "Remove a token by the id `zq token add` and `zq token list` show; a\n"
               "server stops accepting it as soon as it reads the file again.",
               "  zq token revoke tok-3f2a9c1e\n"
               "  zq token revoke tok-3f2a9c1e --file /etc/zq/tokens.json"),
}


def register(subparsers: Any) -> None:
    """Add ``zq token add|list|revoke`` to the ``zq`` command line."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = subparsers.add_parser(
        "token", help="manage bearer tokens ([auth] strategy = \"token\")",
        description=TOKEN_DESCRIPTION, epilog=TOKEN_EPILOG, formatter_class=raw,
    )
    commands = parser.add_subparsers(title="token commands", metavar="ACTION", required=True)
    added = {}
    for action, (summary, description, examples) in ACTIONS.items():
        added[action] = commands.add_parser(
            action, help=summary, description=description,
            epilog=f"examples:\n{examples}", formatter_class=raw,
        )
        _file_arguments(added[action])

    add = added["add"]
    add.add_argument("--project", required=True, help="the project the token acts in")
    add.add_argument("--role", action="append", default=[], metavar="ROLE",
                     help="a role of the token, e.g. admin (repeatable)")
    add.add_argument("--description", default="", help="a note shown by `zq token list`")
    add.set_defaults(handler=_add)
    added["list"].set_defaults(handler=_list)
    added["revoke"].add_argument("token_id", metavar="ID")
    added["revoke"].set_defaults(handler=_revoke)


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
