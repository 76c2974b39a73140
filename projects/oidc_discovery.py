"""OpenID Connect discovery: a project's user-token JWKS found from its issuer alone (docs/abuse-and-limits.md).

Clerk, Auth0, Google or Keycloak apps know their issuer, not its JWKS URL: the URL is the `jwks_uri` of
`<issuer>/.well-known/openid-configuration` (OpenID Connect Discovery 1.0, section 4). The document is
fetched once per issuer and process and kept `DISCOVERY_LIFESPAN` seconds; the key set itself is then
fetched and cached like a configured JWKS URL (projects/user_tokens.py).

Only https issuers are followed (plain http is allowed for loopback addresses, which tests and local
identity providers use): a discovery document over plain http could be replaced on the way and name an
attacker's keys. Every failure is a clear refusal of the exchange, never a hang or a 500.

A stalling issuer costs one wait, as a stalling JWKS does (projects/user_tokens.py `_GuardedJWKClient`):
the fetch runs on a thread of its own, one at a time per issuer (single flight: exchanges that come
meanwhile wait for the same fetch), each caller waits at most USER_TOKEN_JWKS_TIMEOUT for the whole of it
(requests' timeout is per read: an issuer sending a byte every 2 s held an exchange past 100 s), and a
failure is remembered for USER_TOKEN_JWKS_RETRY_SECONDS, during which exchanges are refused at once (20
exchanges against a hanging issuer made 21 fetches).
"""
from __future__ import annotations

import ipaddress
import json
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from urllib.parse import urlsplit

import requests
from django.conf import settings

from core.runtime import process_runtime

DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_LIFESPAN = 300.0
MAX_DOCUMENT_BYTES = 100_000

_cache: dict[str, tuple[float, str]] = {}
_flights: dict[str, Future] = {}  # issuer -> the fetch under way
_failed: dict[str, tuple[float, str]] = {}  # issuer -> (refused until, why)
_lock = threading.Lock()
# The documents and refusals; a fetch under way fills the cache when it ends.
process_runtime.cache_register("OIDC discovery", lambda: (_cache.clear(), _failed.clear()))
LATE = "The issuer's discovery document did not arrive in time; try again later."


class DiscoveryFailed(Exception):
    """Discovery did not give a usable JWKS URL; the message is safe to show the caller."""


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_allowed(url: str) -> bool:
    """https, or http to a loopback address."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(parts.hostname))


def jwks_url_discover(issuer: str) -> str:
    """The JWKS URL the issuer's discovery document names. Raises DiscoveryFailed."""
    issuer = issuer.strip()
    if not url_allowed(issuer):
        raise DiscoveryFailed("The project's user-token issuer must be an https:// URL for discovery.")
    now = time.monotonic()
    with _lock:
        hit = _cache.get(issuer)
        if hit is not None and hit[0] > now:
            return hit[1]
        failed = _failed.get(issuer)
        if failed is not None and failed[0] > now:
            raise DiscoveryFailed(failed[1])
        flight = _flights.get(issuer)
        if flight is None or flight.done():
            flight = _flights[issuer] = Future()
            threading.Thread(target=_fetch_into, args=(issuer, flight), name="oidc-discovery", daemon=True).start()
    try:
        return flight.result(timeout=float(getattr(settings, "USER_TOKEN_JWKS_TIMEOUT", 3)))
    except FutureTimeout:
        _remember_failure(issuer, LATE)
        raise DiscoveryFailed(LATE) from None
    except DiscoveryFailed as exc:
        _remember_failure(issuer, str(exc))
        raise


def _fetch_into(issuer: str, flight: Future) -> None:
    """The fetch, on its own thread: a late answer still fills the cache for the next exchange."""
    try:
        url = _fetch(issuer)
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting callers
        flight.set_exception(exc)
        return
    with _lock:
        _cache[issuer] = (time.monotonic() + DISCOVERY_LIFESPAN, url)
        _failed.pop(issuer, None)
    flight.set_result(url)


def _remember_failure(issuer: str, why: str) -> None:
    remembered = float(getattr(settings, "USER_TOKEN_JWKS_RETRY_SECONDS", 5))
    with _lock:
        if issuer not in _cache:
            _failed[issuer] = (time.monotonic() + remembered, why)


def _fetch(issuer: str) -> str:
    where = issuer.rstrip("/") + DISCOVERY_PATH
    timeout = float(getattr(settings, "USER_TOKEN_JWKS_TIMEOUT", 3))
    try:
        # No redirects: the document must be the issuer's own.
        response = requests.get(where, timeout=timeout, allow_redirects=False, stream=True,
                                headers={"Accept": "application/json"})
        try:
            body = response.raw.read(MAX_DOCUMENT_BYTES + 1, decode_content=True)
        finally:
            response.close()
    except (requests.Timeout, TimeoutError):
        raise DiscoveryFailed(LATE) from None
    except (requests.RequestException, OSError) as exc:
        if "timed out" in str(exc).lower():
            raise DiscoveryFailed(LATE) from None
        raise DiscoveryFailed("The issuer's discovery document could not be fetched; try again later.") from None
    if response.status_code != 200:
        raise DiscoveryFailed(f"The issuer's discovery document answered HTTP {response.status_code}.")
    if len(body) > MAX_DOCUMENT_BYTES:
        raise DiscoveryFailed("The issuer's discovery document is too large.")
    try:
        document = json.loads(body)
    except ValueError:
        raise DiscoveryFailed("The issuer's discovery document is not JSON (an HTML page?).") from None
    if not isinstance(document, dict):
        raise DiscoveryFailed("The issuer's discovery document is not a JSON object.")
    if document.get("issuer") not in (None, issuer, issuer.rstrip("/"), issuer.rstrip("/") + "/"):
        # OpenID Connect Discovery 4.3: the document must be for this very issuer.
        raise DiscoveryFailed("The issuer's discovery document names another issuer.")
    jwks_uri = document.get("jwks_uri")
    if not isinstance(jwks_uri, str) or not jwks_uri.strip():
        raise DiscoveryFailed("The issuer's discovery document has no jwks_uri.")
    if not url_allowed(jwks_uri.strip()):
        raise DiscoveryFailed("The issuer's jwks_uri must be an https:// URL.")
    return jwks_uri.strip()
