"""What a ``mailto:`` subscriber may say: one address, nothing else.

A subscriber URI is the tenant's; the mail goes out through the operator's
SMTP host under the operator's ``smtp_from``. So the URI names exactly one
recipient, and carries no header (``?subject=``, ``?from=``, ``?cc=``...):
otherwise any tenant could relay mail to many addresses, or as anyone,
through the operator's host. Used by the subscription API (a 400) and by
the notifier (a subscriber stored before this rule is refused, not sent).
Kept apart from the sending code so the API imports no SMTP client.
"""

from __future__ import annotations

import re

# A conservative address: no percent-encoding, separators, quotes, comments
# or query, so what is checked here is the one recipient SMTP sees.
_ADDRESS = re.compile(
    r"[A-Za-z0-9!#$&'*+/=^_`{|}~.-]+"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*")


def recipient(subscriber: str) -> str:
    """The one address of a ``mailto:`` subscriber; ValueError says why there is none."""
    scheme, _, rest = subscriber.partition(":")
    if scheme.lower() != "mailto":
        raise ValueError("it is not a mailto: URI")
    if "?" in rest:
        raise ValueError("a mailto: subscriber takes no query (no subject, from or other "
                         "header: the operator's [notifications] smtp_from sends every mail)")
    if not _ADDRESS.fullmatch(rest):
        raise ValueError("a mailto: subscriber names exactly one plain address "
                         "(local@domain: no list, no percent-encoding, no quotes)")
    return rest
