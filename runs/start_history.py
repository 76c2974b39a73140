"""A starting run's history, read after the lock's transaction has committed.

The history holds the thread's images and files (megabytes each): read inside the transaction, they
would hold the thread's row lock while they load (docs/images-and-voice.md). Reading them after the
commit is safe because the run holds the run lock by then: no other run writes the thread's messages.
"""
from __future__ import annotations

import logging

from django.db import DatabaseError

from runs.context_budget import history_for
from runs.lock import lock_release
from runs.models import Run
from threads.models import Message, Thread

logger = logging.getLogger(__name__)

HISTORY_UNREADABLE = "HISTORY_UNREADABLE"


def history_after_lock(*, thread: Thread, run: Run, budget: int | None) -> list[Message]:
    """The run's history (runs/context_budget.py `history_for`), read with no transaction open.

    The caller's transaction took the run lock for `run` and committed. When the read fails, the
    lock is given back (the run recorded as failed) before the error is raised again, so the thread
    is not left busy until its lease expires; the stored message stays, as after any failed run.
    """
    try:
        return history_for(thread, budget)
    except Exception:
        try:
            lock_release(thread_id=thread.id, run_id=run.id, run_status=Run.Status.FAILED,
                         error_code=HISTORY_UNREADABLE, error_message="The thread's history could not be read.")
        except DatabaseError:
            # The database is gone: the lease expires and the next taker records the run (runs/lock.py).
            logger.warning("could not release the lock of run %s after its history failed", run.id)
        raise
