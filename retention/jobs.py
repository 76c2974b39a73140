"""The retention job in each serving process: a pass of `retention_apply` every
RETENTION_INTERVAL_SECONDS (0: never; run `manage.py apply_retention` from cron instead), started at
the process's start and stopped at its shutdown (a part of its runtime: tambo_project/runtime.py).

The first pass comes at a random point of the first interval, so the processes of a deployment do
not all start theirs together; the database work runs on the shared database threads (core/db.py)
and holds no connection between passes.
"""
from __future__ import annotations

import asyncio
import logging
import random

from django.conf import settings
from django.db import connections

from core.db import db_call, log_db_failure
from retention.policy import retention_apply

log = logging.getLogger(__name__)


class Housekeeper:
    def __init__(self) -> None:
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        interval = settings.RETENTION_INTERVAL_SECONDS
        if interval > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(interval))

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _loop(self, interval: float) -> None:
        delay = random.uniform(0, interval)
        while True:
            await asyncio.sleep(delay)
            delay = interval
            try:
                report = await db_call(_pass)
            except Exception as exc:  # noqa: BLE001 - logged; the next pass tries again
                log_db_failure("Retention pass failed", exc)
                continue
            for project, removed in report.items():
                log.info("Retention removed from project %s: %s", project, dict(removed))


def _pass():
    try:
        return retention_apply()
    finally:
        connections.close_all()


housekeeper = Housekeeper()
