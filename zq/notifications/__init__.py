"""Subscriptions' notifications: webhooks and mail, driven by the event log.

- subscriptions.py: the subscription records the notifier reads (the
  subscription API's controller, or a test's fake).
- hosts.py: ``[notifications] allowed_hosts`` and the address a webhook may use.
- payloads.py: which events a subscription is told about, and what it is told.
- webhook.py, mail.py: one delivery attempt each.
- pump.py: one subscription's cursor, lease, order and retries.
- confirmation_requests.py, confirmations.py: Zaqar's confirmation
  requests (require_confirmation): their stored state, and their sending.
- runner.py: the notifier process ``zq serve`` starts (docs/notifications.md).
"""
