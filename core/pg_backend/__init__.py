"""Django's PostgreSQL backend with the pool's check of a connection decided by core/pool_check.py
(settings.py uses it as ENGINE when the pool is on)."""
