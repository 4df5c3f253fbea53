"""One mail attempt for a ``mailto:`` subscriber, through ``[notifications] smtp_host``.

As Zaqar: the subscriber is ``mailto:ADDRESS[?subject=...&from=...]`` and
the mail's text is the notification's JSON. No SMTP host configured: the
attempt fails (and is reported), nothing is sent.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage
from urllib.parse import parse_qs, urlsplit

from zq.notifications.webhook import Outcome


def send(subscriber: str, body: bytes, *, queue: str, host: str, port: int, sender: str,
         timeout: float) -> Outcome:
    """Mail ``body`` to the subscriber; never raises for SMTP or network trouble."""
    if not host:
        return Outcome(False, None, "no [notifications] smtp_host configured")
    parts = urlsplit(subscriber)
    address = parts.path
    query = parse_qs(parts.query)
    mail = EmailMessage()
    mail["From"] = query.get("from", [sender])[0]
    mail["To"] = address
    mail["Subject"] = query.get("subject", [f"zq notification: queue {queue}"])[0]
    mail.set_content(body.decode())
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            smtp.send_message(mail)
    except (OSError, smtplib.SMTPException) as exc:
        return Outcome(False, None, f"{type(exc).__name__}: {exc}")
    return Outcome(True, 250, "mailed")
