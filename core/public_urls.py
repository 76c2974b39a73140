"""Only public addresses in the URLs the server hands to a model (docs/images-and-voice.md).

An image URL in a message is passed to the model endpoint as it is, and a vendor that fetches URLs
(or a self-hosted model inside the operator's network) fetches it from where it runs: a URL to
169.254.169.254 or 127.0.0.1 would make it read the cloud's metadata or a local service for a caller
who holds only a copied public key. So the host is resolved here, and a URL any of whose addresses is
loopback, link-local, private, shared, reserved, multicast or unspecified (anything `ipaddress` does
not call global) is refused. Resolved, not string-matched: `0x7f.1`, `[::ffff:127.0.0.1]` and a name
that points at 10.0.0.5 are caught like `127.0.0.1`. The operator may allow hosts or networks of
their own (MEDIA_URL_ALLOWED_HOSTS: names, addresses or CIDR networks).

What this cannot see: a name this server cannot resolve is passed on (the model's side resolves it,
if anything does), and a name whose address changes after the check (DNS rebinding). Runs in a worker
thread (the run views check parts off the event loop): resolving blocks.
"""
from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from core.sanity import InputError


def check_public_url(url: str, field: str) -> None:
    """Raises InputError naming `field` when `url`'s host is, or resolves to, a non-public address."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise InputError(field, f"{field}: the URL is malformed.") from None
    if not host:
        raise InputError(field, f"{field}: the URL has no host.")
    if _allowed(host, None):
        return
    for address in _addresses(host, port or (443 if parts.scheme == "https" else 80)):
        if _allowed(host, address):
            continue
        if not _public(address):
            raise InputError(field, f"{field}: the URL's host {host} is a loopback, link-local, private or "
                             "otherwise non-public address, which is not sent to the model (an operator can "
                             "allow it with MEDIA_URL_ALLOWED_HOSTS).")


def _addresses(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        # getaddrinfo also reads the forms a string match misses (`0x7f.1`, `2130706433`).
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        return []  # not resolvable here: see the module's docstring
    return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return _public(mapped)
    return address.is_global and not address.is_multicast


def _allowed(host: str, address) -> bool:
    for entry in settings.MEDIA_URL_ALLOWED_HOSTS:
        if address is None:
            if entry.lower() == host.lower().rstrip("."):
                return True
            continue
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name: matched above
    return False
