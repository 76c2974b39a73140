"""Streaming and resume: how a run's events reach its readers.

Owns the SSE encoding (sse.py), the guard that hands an encoding failure back to the run (guard.py),
the run's numbered in-memory feed and the task that writes it to the event log (feeds.py), the event
log itself (event_log.py), the readers of runs streamed by other processes (follow.py) and the resume
route `GET .../runs/{runId}/events` (views.py). It knows the run's rows (runs/models.py) and reads
(runs/selectors.py), never the lifecycle that writes them, crash recovery or the AG-UI adapter: an
import contract in pyproject.toml keeps it so.
"""
