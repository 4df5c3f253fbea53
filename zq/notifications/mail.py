"""One mail attempt for a ``mailto:`` subscriber, through ``[notifications] smtp_host``.

The subscriber is ``mailto:ADDRESS``, one address and nothing else
(zq.subscribers.mail_recipient); the mail's text is the notification's JSON,
from ``smtp_from``, with zq's subject. Zaqar also read a subject from the
URI; zq takes no header from it (docs/compatibility.md). No SMTP host
configured: the attempt fails (and is reported), nothing is sent.
"""

from __future__ import annotations

import smtplib
from email.message import EmailMessage

from zq.notifications.webhook import Outcome
from zq.subscribers import mail_recipient


def send(subscriber: str, body: bytes, *, queue: str, host: str, port: int, sender: str,
         timeout: float) -> Outcome:
    """Mail ``body`` to the subscriber; never raises for SMTP or network trouble."""
    try:
        address = mail_recipient(subscriber)
    except ValueError as exc:  # stored before the rule: no retry can change it
        return Outcome(False, None, f"refused: {exc}", retry=False)
    if not host:  # read at start: no retry can find one
        return Outcome(False, None, "no [notifications] smtp_host configured", retry=False)
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = address
    mail["Subject"] = f"zq notification: queue {queue}"
    mail.set_content(body.decode())
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            # The envelope names the one checked address, whatever the headers say.
            smtp.send_message(mail, from_addr=sender, to_addrs=[address])
    except (OSError, smtplib.SMTPException) as exc:
        return Outcome(False, None, f"{type(exc).__name__}: {exc}")
    return Outcome(True, 250, "mailed")
