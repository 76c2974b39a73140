"""Side tasks a thread asks of the model without a run: its name, and suggested next messages (docs/protocol.md#thread-names-and-suggestions).

Each is one short non-streamed model call (`Provider.complete`) that takes no run lock, so it works
while a run streams on the same thread.
"""
