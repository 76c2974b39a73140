"""Django's PostgreSQL backend, with one difference: the psycopg pool it makes checks a connection it
hands out with `core.pool_check.connection_check` (a round trip only for a connection that may have
died in the pool) instead of `ConnectionPool.check_connection` (a round trip every time).

Django passes its own `check` to the pool and the pool takes one, so the pool is made here, with
Django's own arguments, before Django's `pool` property would make it; the rest is Django's.
"""
from __future__ import annotations

from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base

from core import pool_check


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        options = self.settings_dict["OPTIONS"].get("pool")
        if (options and self.alias != NO_DB_ALIAS and self.alias not in self._connection_pools
                and self.settings_dict["CONN_HEALTH_CHECKS"]):
            from psycopg_pool import ConnectionPool

            # As Django's own `pool` property makes it, `check` aside.
            pool = ConnectionPool(kwargs={**self.get_connection_params(), "autocommit": True}, open=False,
                                  configure=self._configure_connection, check=pool_check.connection_check,
                                  **({} if options is True else options))
            self._connection_pools.setdefault(self.alias, pool)
        return super().pool
