"""The rules of the poison workflow: what happens to a message that keeps failing.

Pure decisions, on the lowest floor above the base modules: the dead letter
policy (dead_letter), the check of dead letter chains (dead_letter_chain),
what a moved message becomes (moves), how its history is shown (history),
the backoff between deliveries (backoff), which dead letters a redrive
selects (redrive) and who counts as a lapsed consumer (consumers). The
service builds them from queue metadata; the storage contract and the
drivers carry them out; nothing here reaches a backend by itself.
"""
