"""The operator console's static files (``/console``, served by zq.api.console).

The page is plain HTML, CSS and JavaScript modules under ``static/``: no
build step, nothing vendored. It calls zq's public REST API and nothing
else (docs/console.md).
"""

CONSOLE_PATH = "/console"


def is_console_path(path: str) -> bool:
    """Whether ``path`` is the console's page or one of its files (no identity needed:
    they hold no data; zq.api.middleware and zq.auth.keystone let them through)."""
    return path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")
