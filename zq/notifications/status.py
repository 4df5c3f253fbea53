"""The notifier's state as ``zq serve`` last saw it, shared with the workers.

The server's master process supervises the notifier (zq.notifications.
process) and writes what it sees to a small JSON file in a private
directory of its own; each worker reads it for ``GET /v2/health``, so a
dead notifier shows in the API, not only in the log. The file is replaced
whole (write, then rename): a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

# States: the notifier runs; it died and waits for its restart; it stopped
# with the server; ``[notifications] enabled = false`` started none.
RUNNING = "running"
DOWN = "down"
STOPPED = "stopped"
DISABLED = "disabled"


class StatusFile:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def write(self, state: str, **details: Any) -> None:
        """Replace the status (the master process only)."""
        text = json.dumps({"state": state, **details}, sort_keys=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".notifier-")
        try:
            with os.fdopen(fd, "w") as out:
                out.write(text)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def read(self) -> dict[str, Any]:
        """The last status written; ``unknown`` when there is none (yet, or any more)."""
        try:
            status = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"state": "unknown"}
        return status if isinstance(status, dict) else {"state": "unknown"}
