"""The zq subcommands that run the service: serve, db, gc, config, token.

Each module here has a ``register(subparsers)`` function that adds its
subcommand to the ``zq`` parser (see zq.cli) and binds a handler as
``handler``: ``handler(args) -> int | None`` (None means exit status 0).
"""
