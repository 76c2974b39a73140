"""A throwaway PostgreSQL cluster that a test may stop and start (never the shared one).

Made with the server binaries as bin/test does (`initdb`, `pg_ctl`), in a temporary directory, on a
free port, run as the `postgres` user when the tests run as root. Migrated, with one project key.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.live import ROOT, free_port


def _pg_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    if not found:
        raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
    return found[-1]


class Cluster:
    def __init__(self) -> None:
        self.bin = _pg_bin()
        self.dir = tempfile.mkdtemp(prefix="tambo-outage-")
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/tambo"
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._as_pg(f"'{self.bin}/initdb' -D '{self.dir}/data' -U postgres -A trust --no-sync")
        self.start()
        self._as_pg(f"'{self.bin}/createdb' -h 127.0.0.1 -p {self.port} -U postgres tambo")
        env = {**os.environ, "DATABASE_URL": self.url}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        out = subprocess.run([sys.executable, "manage.py", "createapikey", "--project", "outage"], cwd=ROOT,
                             env=env, check=True, capture_output=True, text=True).stdout
        self.api_key = out.strip().splitlines()[-1]

    def _as_pg(self, command: str) -> None:
        argv = ["su", "postgres", "-s", "/bin/bash", "-c", command] if os.geteuid() == 0 else ["bash", "-c", command]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self) -> None:
        self._as_pg(f"'{self.bin}/pg_ctl' -D '{self.dir}/data' -l '{self.dir}/log' -w -o "
                    f"\"-p {self.port} -k '{self.dir}' -c listen_addresses=127.0.0.1 -c fsync=off\" start")

    def stop(self) -> None:
        """Stops the server the way a failover or restart does: open connections are cut."""
        self._as_pg(f"'{self.bin}/pg_ctl' -D '{self.dir}/data' -m fast -w stop")

    def destroy(self) -> None:
        try:
            self._as_pg(f"'{self.bin}/pg_ctl' -D '{self.dir}/data' -m immediate stop")
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(self.dir, ignore_errors=True)
