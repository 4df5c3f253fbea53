"""``python -m zq``: the same as the ``zq`` command."""

from zq.cli import main

raise SystemExit(main())
