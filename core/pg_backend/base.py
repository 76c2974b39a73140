"""Django's PostgreSQL backend, with one difference: the psycopg pool it makes checks a connection it
hands out with `core.pool_check.connection_check` (a round trip only for a connection that may have
died in the pool) instead of `ConnectionPool.check_connection` (a round trip every time), and drops
the idle connections a restart cut before it hands one out (`Pool`).

Django passes its own `check` to the pool and the pool takes one, so the pool is made here, with
Django's own arguments, before Django's `pool` property would make it; the rest is Django's.
"""
from __future__ import annotations

from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool
from psycopg_pool.pool import AddConnection

from core import pool_check


class Pool(ConnectionPool):
    """psycopg_pool's pool, which first drops the idle connections the server spoke on (closed,
    or sent an error) and asks for as many new ones, instead of handing them out one by one to a
    check that fails and backs off (core/pool_check.py)."""

    def getconn(self, timeout: float | None = None):
        self.drop_spoken()
        return super().getconn(timeout)

    def drop_spoken(self) -> int:
        """Closes the idle connections `pool_check.spoken` finds and replaces each; how many.

        Takes them out under the pool's lock as psycopg_pool 3.3 takes a connection out
        (`_get_ready_connection`); tests/runs/test_pool_check.py fails if that changes."""
        with self._lock:
            dead = pool_check.spoken(self._pool) if self._pool else []
            for conn in dead:
                self._pool.remove(conn)
        for conn in dead:
            self._stats[self._CONNECTIONS_LOST] += 1
            self._close_connection(conn)
            self.run_task(AddConnection(self))
        return len(dead)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        options = self.settings_dict["OPTIONS"].get("pool")
        if (options and self.alias != NO_DB_ALIAS and self.alias not in self._connection_pools
                and self.settings_dict["CONN_HEALTH_CHECKS"]):
            # As Django's own `pool` property makes it, `check` and the class aside.
            pool = Pool(kwargs={**self.get_connection_params(), "autocommit": True}, open=False,
                        configure=self._configure_connection, check=pool_check.connection_check,
                        **({} if options is True else options))
            self._connection_pools.setdefault(self.alias, pool)
        return super().pool
