"""A throwaway PostgreSQL cluster with chosen settings (e.g. the default max_connections=100), for
capacity tests, outage tests (which stop and start it) and benchmarks that must not touch a shared server.

Runs initdb/pg_ctl as the `postgres` user when started as root, as bin/test does. `halt()` and
`resume()` stop and start the server as a restart or failover does; `stop()` ends it for good
(`-m immediate`) and removes its directory.
"""
from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator

from tests.support.live import ROOT, free_port


def pg_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return found[-1] if found and os.path.exists(found[-1] + "/initdb") else None


def _as_pg(command: str) -> None:
    argv = ["su", "postgres", "-s", "/bin/bash", "-c", command] if os.getuid() == 0 else ["bash", "-c", command]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class PgCluster:
    def __init__(self, max_connections: int = 100, database: str = "tambo", options: str = ""):
        binaries = pg_bin()
        if binaries is None:
            raise RuntimeError("PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin)")
        self.bin = binaries
        self.dir = tempfile.mkdtemp(prefix="tambo-pgcap.")
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.port = free_port()
        self.database = database
        data, log = shlex.quote(self.dir + "/data"), shlex.quote(self.dir + "/log")
        _as_pg(f"{self.bin}/initdb -D {data} -U postgres -A trust --no-sync")
        options = (f"-p {self.port} -k {shlex.quote(self.dir)} -c listen_addresses=127.0.0.1 -c fsync=off "
                   f"-c synchronous_commit=off -c max_connections={max_connections} {options}")
        self._start = f"{self.bin}/pg_ctl -D {data} -l {log} -w -o {shlex.quote(options)} start"
        _as_pg(self._start)
        _as_pg(f"{self.bin}/createdb -h 127.0.0.1 -p {self.port} -U postgres {database}")
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def migrate_and_key(self, project_file: str | None = None) -> str:
        """Migrates the database and creates a project with an API key; returns the key. `project_file`
        (YAML naming the project `capacity`) configures the project first."""
        env = {**os.environ, "DATABASE_URL": self.url, "LOG_LEVEL": "WARNING"}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        if project_file is not None:
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
                file.write(project_file)
                file.flush()
                subprocess.run([sys.executable, "manage.py", "apply_projects", file.name], cwd=ROOT, env=env,
                               check=True, capture_output=True)
        out = subprocess.run([sys.executable, "manage.py", "createapikey", "--project", "capacity"], cwd=ROOT,
                             env=env, check=True, capture_output=True, text=True).stdout
        return out.split()[-1]

    def client_connections(self) -> int:
        """Client connections to the database now, not counting the one asking."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' "
                "AND pid <> pg_backend_pid()", (self.database,)).fetchone()[0]

    def log_size(self) -> int:
        return os.path.getsize(self.dir + "/log")

    def logged_sql(self, offset: int) -> list[str]:
        """The SQL of each query in the server log (log_statement=all) after `offset`, as sent (empty
        ones and transaction control included); a query spanning lines is one (its later lines start
        with a tab)."""
        with open(self.dir + "/log", "rb") as log:
            log.seek(offset)
            entries = log.read().decode(errors="replace").replace("\n\t", " ").splitlines()
        found = []
        for entry in entries:
            for marker in ("LOG:  statement: ", "LOG:  execute "):
                if marker in entry:
                    sql = entry.split(marker, 1)[1]
                    found.append(sql.partition(": ")[2] if marker.endswith("execute ") else sql)
        return found

    def statements(self, offset: int) -> list[str]:
        """The SQL of each statement in the server log after `offset` (see `logged_sql`), transaction
        control left out, and empty queries: the pool's health check of a connection it hands out
        (core/pool_check.py), a round trip, not a statement."""
        return [sql for sql in self.logged_sql(offset) if sql.strip() and not sql.lstrip().upper().startswith(
            ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"))]

    def statements_since(self, offset: int) -> int:
        """How many statements the server log holds after `offset` (see `statements`)."""
        return len(self.statements(offset))

    def halt(self) -> None:
        """Stops the server the way a failover or restart does: open connections are cut."""
        _as_pg(f"{self.bin}/pg_ctl -D {shlex.quote(self.dir + '/data')} -m fast -w stop")

    def resume(self) -> None:
        _as_pg(self._start)

    def stop(self) -> None:
        try:
            _as_pg(f"{self.bin}/pg_ctl -D {shlex.quote(self.dir + '/data')} -m immediate stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def migrated_cluster(project_file: str | None = None, **options) -> Iterator[tuple[PgCluster, str]]:
    """A throwaway cluster (`PgCluster(**options)`), migrated, with a project key: (cluster, key);
    stopped afterwards. `project_file`: see `PgCluster.migrate_and_key`."""
    cluster = PgCluster(**options)
    try:
        yield cluster, cluster.migrate_and_key(project_file)
    finally:
        cluster.stop()
