"""Crash recovery: what keeps a run's thread from staying locked when a process or the database fails.

Owns the expired-lease sweep, the in-progress text checkpoints and the dead-run event (leases.py),
the background retry of a run's end when the database did not answer (settle.py), and the middleware
that starts this process's watcher with its first request (middleware.py). It may use the stream
(the dead-run event goes to the event log); the stream never imports it.
"""
