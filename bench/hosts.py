"""Hosts for `bin/bench cluster`, simulated on one machine: Linux network namespaces on one bridge.

Each host is a namespace with its own address on 10.77.0.0/24 (the bridge, in the root namespace, is
10.77.0.1, where the load generator runs): a process started in a host listens on that host's address
only and reaches the others through the bridge, as a process on another machine of a LAN would. Needs
root (`ip netns`); everything made here is removed by `close()`, also after a failure.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

SUBNET = "10.77.0"
BRIDGE = "tbc0"
PREFIX = "tbc-"


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Hosts:
    def __init__(self) -> None:
        if os.getuid() != 0 or shutil.which("ip") is None:
            raise SystemExit("bin/bench cluster needs root and iproute2 (`ip netns`) to make its hosts")
        self.names: list[str] = []
        self._remove_left_overs()
        # Traffic between two hosts crosses the bridge; with br_netfilter loaded it would also cross the
        # machine's firewall (whose FORWARD policy may drop it), which a LAN switch does not.
        _ip("link", "add", BRIDGE, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0",
            "nf_call_arptables", "0")
        _ip("addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")

    def add(self, name: str, octet: int) -> str:
        """Makes host `name` with address 10.77.0.<octet>; returns the address."""
        ns, veth, address = PREFIX + name, f"tbcv{octet}", f"{SUBNET}.{octet}"
        _ip("netns", "add", ns)
        self.names.append(name)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", BRIDGE, "up")
        for command in (["addr", "add", f"{address}/24", "dev", "eth0"], ["link", "set", "eth0", "up"],
                        ["link", "set", "lo", "up"], ["route", "add", "default", "via", f"{SUBNET}.1"]):
            _ip("netns", "exec", ns, "ip", *command)
        return address

    def argv(self, name: str, argv: list[str]) -> list[str]:
        """`argv` run inside host `name`."""
        return ["ip", "netns", "exec", PREFIX + name, *argv]

    def popen(self, name: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.argv(name, argv), **kwargs)

    def sockets_by_pid(self, name: str, port: int) -> dict[int, int]:
        """Established TCP connections to `port` inside host `name`, counted by the owning process."""
        out = subprocess.run(self.argv(name, ["ss", "-Htnp", "state", "established", f"( sport = :{port} )"]),
                             capture_output=True, text=True).stdout
        counts: dict[int, int] = {}
        for line in out.splitlines():
            for part in line.split("pid=")[1:]:
                pid = int(part.split(",", 1)[0])
                counts[pid] = counts.get(pid, 0) + 1
        return counts

    def close(self) -> None:
        for name in self.names:
            _ip("netns", "del", PREFIX + name, check=False)
        _ip("link", "del", BRIDGE, check=False)
        self.names = []

    def _remove_left_overs(self) -> None:
        """A run that was killed leaves its namespaces and bridge; the next one starts clean."""
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for line in listed.splitlines():
            if line.startswith(PREFIX):
                _ip("netns", "del", line.split()[0], check=False)
        _ip("link", "del", BRIDGE, check=False)
        # A host end whose namespace a killed process still held outlives the namespace's name.
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        for line in links.splitlines():
            name = line.split(": ")[1].split("@")[0] if ": " in line else ""
            if name.startswith(BRIDGE[:-1] + "v"):
                _ip("link", "del", name, check=False)


class PostgresHost:
    """PostgreSQL on its own host, trusting the hosts' subnet (a throwaway cluster, default settings but
    `max_connections`; with BENCH_PG_STATEMENTS set, `pg_stat_statements` loaded, to see where its time goes)."""

    PORT = 5432

    def __init__(self, hosts: Hosts, name: str, address: str, max_connections: int = 200):
        from tests.support.pg_cluster import pg_bin

        binaries = pg_bin()
        if binaries is None:
            raise SystemExit("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.dir = tempfile.mkdtemp(prefix="tambo-cluster-pg.")
        shutil.chown(self.dir, "postgres")
        data = Path(self.dir) / "data"
        self._as_pg(hosts, name, f"{binaries}/initdb -D {data} -U postgres -A trust --no-sync")
        with open(data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 trust\n")
        options = (f"-p {self.PORT} -k {self.dir} -c listen_addresses={address} "
                   f"-c max_connections={max_connections}"
                   + (" -c shared_preload_libraries=pg_stat_statements" if os.environ.get("BENCH_PG_STATEMENTS") else ""))
        self._as_pg(hosts, name, f"{binaries}/pg_ctl -D {data} -l {self.dir}/log -w -o {shlex.quote(options)} start")
        self._as_pg(hosts, name, f"{binaries}/createdb -h {address} -p {self.PORT} -U postgres tambo")
        self.url = f"postgres://postgres@{address}:{self.PORT}/tambo"
        self._stop = f"{binaries}/pg_ctl -D {data} -m immediate stop"
        self._hosts, self._name = hosts, name

    @staticmethod
    def _as_pg(hosts: Hosts, name: str, command: str) -> None:
        subprocess.run(hosts.argv(name, ["su", "postgres", "-s", "/bin/bash", "-c", command]), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def connections_by_address(self) -> dict[str, int]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            rows = conn.execute("SELECT host(client_addr), count(*) FROM pg_stat_activity "
                                "WHERE datname = 'tambo' AND client_addr IS NOT NULL GROUP BY 1").fetchall()
        return {address: count for address, count in rows}

    def stop(self) -> None:
        subprocess.run(self._hosts.argv(self._name, ["su", "postgres", "-s", "/bin/bash", "-c", self._stop]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


NGINX_CONF = """\
# As docs/deployment.md#behind-a-reverse-proxy configures nginx, without TLS (the bench's hosts are one LAN).
user root;
worker_processes 2;
worker_rlimit_nofile 100000;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 40000; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    upstream tambo {{
{servers}
        keepalive 32;
    }}
    server {{
        listen {address}:80 backlog=4096;
        client_max_body_size 2m;
        location / {{
            proxy_pass http://tambo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
        }}
    }}
}}
"""


class NginxHost:
    """nginx from Debian's packages in front of the app hosts, configured as docs/deployment.md says."""

    def __init__(self, hosts: Hosts, name: str, address: str, upstreams: list[str]):
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(binary):
            subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if not os.path.exists(binary):
            raise SystemExit("nginx is not installed and could not be (apt-get install nginx-light)")
        self.dir = tempfile.mkdtemp(prefix="tambo-cluster-lb.")
        servers = "\n".join(f"        server {upstream};" for upstream in upstreams)
        conf = Path(self.dir) / "nginx.conf"
        conf.write_text(NGINX_CONF.format(dir=self.dir, servers=servers, address=address))
        self.process = hosts.popen(name, [binary, "-c", str(conf), "-p", self.dir, "-g", "daemon off;"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://{address}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
