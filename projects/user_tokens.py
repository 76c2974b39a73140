"""Identity by token (docs/protocol.md#identity-by-token): an app's own user tokens in, this server's access tokens out.

Two kinds of JWT meet here, both handled by PyJWT alone:

- the *subject token* an application signs for its end user (or gets from its identity provider),
  verified with the project's user-token settings: an HS256 secret, a PEM public key, or a JWKS URL;
- the *access token* this server issues in exchange, which names the project, the end user and the
  API key it was issued through, and is checked on every request that carries it (projects/auth.py).

The accepted algorithms are always fixed by the key, never read from the token: that is what keeps out
`alg: none` and algorithm confusion (an HS256 token "signed" with the text of a public key).
"""
from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from django.conf import settings

from core.runtime import process_runtime
from core.sanity import InputError, check_text
from projects import oidc_discovery
from projects.identities import USER_KEY_MAX_LENGTH

LEEWAY_SECONDS = 60
ACCESS_TOKEN_MAX_SECONDS = 3600
ACCESS_TOKEN_LEEWAY_SECONDS = 5
# Marks a JWT as this server's access token, so no other JWT it might sign is ever taken for one.
ACCESS_TOKEN_AUDIENCE = "urn:tambo-django:access-token"
MIN_HS256_SECRET_BYTES = 32  # RFC 7518 3.2: an HS256 key at least as long as the hash output
MIN_RSA_BITS = 2048

RSA_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
EC_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
# What a JWKS key may be used with: public-key algorithms only (a symmetric `oct` key in a public
# JWKS would let anyone sign).
JWKS_ALGORITHMS = frozenset(RSA_ALGORITHMS) | frozenset(EC_ALGORITHMS.values()) | {"EdDSA"}


class TokenRefused(Exception):
    """The exchange is refused; `error` is the OAuth error code (RFC 6749 5.2)."""

    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error = error
        self.description = description


class AccessTokenInvalid(Exception):
    """A bearer access token that is forged, expired or malformed; the message is safe to show."""


@dataclass(frozen=True)
class Subject:
    user_key: str
    expires_at: int


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_in: int


@dataclass(frozen=True)
class AccessClaims:
    project_id: str
    user_key: str
    api_key_id: int


# --- The project's settings -------------------------------------------------------------------

def public_key_load(pem: str) -> tuple[object, list[str]]:
    """A PEM public key and the algorithms it verifies. Raises ValueError saying what is wrong with it."""
    try:
        key = serialization.load_pem_public_key(pem.strip().encode())
    except (ValueError, TypeError, UnicodeError):
        raise ValueError("Not a PEM public key (expected -----BEGIN PUBLIC KEY-----).") from None
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise ValueError(f"An RSA key must have at least {MIN_RSA_BITS} bits.")
        return key, RSA_ALGORITHMS
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in EC_ALGORITHMS:
            raise ValueError("An EC key must be on P-256, P-384 or P-521.")
        return key, [EC_ALGORITHMS[key.curve.name]]
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return key, ["EdDSA"]
    raise ValueError("Use an RSA, EC (P-256/384/521) or Ed25519/Ed448 public key.")


def user_token_settings_errors(*, hs256_secret: str, public_key: str, jwks_url: str, claim: str) -> dict[str, str]:
    """What is wrong with a set of user-token settings, by field name (empty when they are fine)."""
    errors: dict[str, str] = {}
    sources = [name for name, value in (("user_token_hs256_secret", hs256_secret),
                                        ("user_token_public_key", public_key),
                                        ("user_token_jwks_url", jwks_url)) if value.strip()]
    if len(sources) > 1:
        message = "Set at most one of the HS256 secret, the public key and the JWKS URL."
        errors.update({name: message for name in sources})
    if hs256_secret.strip() and len(hs256_secret.encode()) < MIN_HS256_SECRET_BYTES:
        errors["user_token_hs256_secret"] = f"An HS256 secret must be at least {MIN_HS256_SECRET_BYTES} bytes."
    if public_key.strip():
        try:
            public_key_load(public_key)
        except ValueError as exc:
            errors["user_token_public_key"] = str(exc)
    if jwks_url.strip() and not jwks_url.strip().lower().startswith(("http://", "https://")):
        errors["user_token_jwks_url"] = "The JWKS URL must be http:// or https://."
    if not claim.strip():
        errors["user_token_claim"] = "Name the claim that holds the end user (usually `sub`)."
    return errors


def user_tokens_configured(project) -> bool:
    # An issuer alone is enough: its JWKS is discovered (projects/oidc_discovery.py).
    return bool(project.user_token_hs256_secret or project.user_token_public_key or project.user_token_jwks_url
                or project.user_token_issuer)


# --- Subject tokens ---------------------------------------------------------------------------

_jwks_clients: dict[tuple[str, float, float], jwt.PyJWKClient] = {}
_jwks_clients_lock = threading.Lock()
process_runtime.cache_register("user tokens' JWKS clients", _jwks_clients.clear)


class _GuardedJWKClient(jwt.PyJWKClient):
    """PyJWKClient whose fetch has a deadline over the whole exchange, and remembers a failure.

    PyJWKClient's own timeout is urllib's, per socket operation: a JWKS that trickles a byte every
    2 s held an exchange for over 40 s with a 3 s timeout. Here the fetch runs on a thread of its own
    and the caller waits at most `timeout` for all of it; a fetch still running is not started again
    (its late answer still fills the cache). Fetches are already one at a time: PyJWKClient holds its
    lock around them.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._failed_at: float | None = None
        self._flight: Future | None = None

    def fetch_data(self):
        # A failed fetch is remembered for USER_TOKEN_JWKS_RETRY_SECONDS: exchanges meanwhile are refused at
        # once instead of each fetching again (10 exchanges against a hanging JWKS took 3, 6 … 30 s).
        remembered = float(getattr(settings, "USER_TOKEN_JWKS_RETRY_SECONDS", 5))
        if self._failed_at is not None and time.monotonic() - self._failed_at < remembered:
            raise jwt.PyJWKClientConnectionError("The JWKS URL failed moments ago.")
        if self._flight is None or self._flight.done():
            self._flight = Future()
            threading.Thread(target=self._fetch_into, args=(self._flight,), name="jwks-fetch", daemon=True).start()
        try:
            return self._flight.result(timeout=self.timeout)
        except FutureTimeout:
            self._failed_at = time.monotonic()
            raise jwt.PyJWKClientConnectionError(f"The JWKS URL did not answer within {self.timeout} s.") from None
        except jwt.PyJWKClientConnectionError:
            self._failed_at = time.monotonic()
            raise

    def _fetch_into(self, flight: Future) -> None:
        try:
            flight.set_result(super().fetch_data())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            flight.set_exception(exc)


def _jwks_client(url: str) -> jwt.PyJWKClient:
    """One client per JWKS URL and process, so its cache of the key set is shared by all requests.

    PyJWKClient re-fetches the set when a token names an unknown `kid` (a rotated key), but not within
    the cooldown of the last fetch, so tokens with made-up `kid`s cannot make us hammer the provider.
    A short timeout keeps a provider that is down from holding requests for long.
    """
    cooldown = float(getattr(settings, "USER_TOKEN_JWKS_COOLDOWN", 60))
    timeout = float(getattr(settings, "USER_TOKEN_JWKS_TIMEOUT", 3))
    cache_key = (url, cooldown, timeout)
    with _jwks_clients_lock:
        client = _jwks_clients.get(cache_key)
        if client is None:
            client = _GuardedJWKClient(url, cache_jwk_set=True, lifespan=300, timeout=timeout,
                                       cooldown_duration=cooldown)
            _jwks_clients[cache_key] = client
        return client


def _jwks_key(url: str, token: str) -> tuple[object, list[str]]:
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError:
        raise TokenRefused("invalid_grant", "The subject token is not a well-formed JWT.") from None
    if not kid:
        # Without a `kid` there is nothing to look up, and no reason to fetch the key set again.
        raise TokenRefused("invalid_grant", "The subject token names no `kid`, which a JWKS needs.")
    try:
        signing_key = _jwks_client(url).get_signing_key(kid)
    except jwt.PyJWKClientConnectionError:
        raise TokenRefused("invalid_grant", "The project's JWKS URL could not be reached; try again later.") from None
    except (jwt.PyJWKSetError, ValueError):
        # ValueError: an answer that is not JSON, which PyJWKClient lets through.
        raise TokenRefused("invalid_grant", "The project's JWKS URL did not answer a valid JWK Set.") from None
    except jwt.PyJWKClientError:
        raise TokenRefused("invalid_grant", "No key of the project's JWKS matches the token's `kid`.") from None
    if signing_key.algorithm_name not in JWKS_ALGORITHMS:
        raise TokenRefused("invalid_grant", "The matching JWKS key is not a public signing key.")
    return signing_key.key, [signing_key.algorithm_name]


def _verification_key(project, token: str) -> tuple[object, list[str]]:
    if project.user_token_hs256_secret:
        return project.user_token_hs256_secret, ["HS256"]
    if project.user_token_public_key:
        try:
            return public_key_load(project.user_token_public_key)
        except ValueError as exc:
            # Settings saved around the admin's validation (e.g. straight into the database).
            raise TokenRefused("invalid_request", f"The project's user-token public key is unusable: {exc}") from None
    # The key set (and the issuer's discovery document) may have to be fetched: an outbound fetch never
    # holds a database connection while it waits. Thirty exchanges against a hanging issuer held the
    # pool's ten, and /healthz and every other request of the process answered 503.
    _connection_release()
    return _jwks_key(project.user_token_jwks_url or _discovered_jwks_url(project.user_token_issuer), token)


def _connection_release() -> None:
    """Gives this thread's database connection back (to the pool, with DB_POOL_SIZE) unless a
    transaction needs it; the next query takes one again."""
    from django.db import connection

    if not connection.in_atomic_block:
        connection.close()


def _discovered_jwks_url(issuer: str) -> str:
    try:
        return oidc_discovery.jwks_url_discover(issuer)
    except oidc_discovery.DiscoveryFailed as exc:
        raise TokenRefused("invalid_grant", str(exc)) from None


_REFUSALS: list[tuple[type[Exception], str]] = [
    (jwt.ExpiredSignatureError, "The subject token has expired."),
    (jwt.ImmatureSignatureError, "The subject token is not valid yet."),
    (jwt.InvalidIssuerError, "The subject token's `iss` is not the configured issuer."),
    (jwt.InvalidAudienceError, "The subject token's `aud` is not the configured audience."),
    (jwt.InvalidAlgorithmError, "The subject token's algorithm is not accepted for this project's key."),
    (jwt.InvalidSignatureError, "The subject token's signature does not verify."),
    (jwt.DecodeError, "The subject token is not a well-formed JWT."),
]


def subject_token_verify(*, project, token: str) -> Subject:
    """Verifies an app's user token with the project's settings. Raises TokenRefused; writes nothing."""
    if not user_tokens_configured(project):
        raise TokenRefused("invalid_request", "This project has no user-token settings, so it does not accept "
                                              "token exchange; configure them in the admin or with "
                                              "`manage.py configure_user_tokens`.")
    key, algorithms = _verification_key(project, token)
    audience = project.user_token_audience or None
    try:
        claims = jwt.decode(token, key, algorithms=algorithms, issuer=project.user_token_issuer or None,
                            audience=audience, leeway=LEEWAY_SECONDS,
                            options={"require": ["exp"], "verify_aud": audience is not None})
    except jwt.MissingRequiredClaimError as exc:
        raise TokenRefused("invalid_grant", f"The subject token lacks the required `{exc.claim}` claim.") from None
    except jwt.PyJWTError as exc:
        reason = next((text for kind, text in _REFUSALS if isinstance(exc, kind)), "The subject token is not valid.")
        raise TokenRefused("invalid_grant", reason) from None
    user = claims.get(project.user_token_claim)
    if not isinstance(user, str) or not user.strip() or len(user.strip()) > USER_KEY_MAX_LENGTH:
        raise TokenRefused("invalid_grant", f"The subject token's `{project.user_token_claim}` claim must be a "
                                            f"non-empty string of at most {USER_KEY_MAX_LENGTH} characters.")
    try:
        # The same checks as a userKey: a NUL or a lone surrogate, once in an access token, would
        # make every later call with it fail (it can be neither stored nor encoded).
        check_text(user, project.user_token_claim)
    except InputError as exc:
        raise TokenRefused("invalid_grant", f"The subject token's {exc.detail}") from None
    # PyJWT has checked that `exp` is a number.
    return Subject(user_key=user.strip(), expires_at=int(claims["exp"]))


# --- Access tokens ----------------------------------------------------------------------------

def _access_key(project) -> bytes:
    # The project's own random secret (Project.access_token_secret), stored and rotatable
    # (`manage.py rotate_access_token_secret`): never derived from SECRET_KEY, whose development
    # default is public, so knowing the code and a token's claims never lets anyone sign another.
    # A token minted for one project cannot verify under another's key.
    return project.access_token_secret.encode()


def access_token_issue(*, project, user_key: str, api_key_id: int, subject_expires_at: int) -> IssuedToken:
    """Signs an access token for (project, user) through one API key; never outlives the subject token."""
    now = int(time.time())
    expires_at = min(now + ACCESS_TOKEN_MAX_SECONDS, subject_expires_at)
    if expires_at <= now:
        # Accepted within the leeway, but an access token must never run past the subject token.
        raise TokenRefused("invalid_grant", "The subject token has expired.")
    claims = {"iss": project.pk, "aud": ACCESS_TOKEN_AUDIENCE, "sub": user_key, "akid": api_key_id,
              "iat": now, "exp": expires_at, "jti": uuid.uuid4().hex}
    token = jwt.encode(claims, _access_key(project), algorithm="HS256")
    return IssuedToken(token=token, expires_in=expires_at - now)


_NOT_OURS = "The bearer token is not a valid access token of this server."


def access_token_peek(token: str) -> AccessClaims:
    """The claims an access token says it has, NOT verified: only to find the key to verify it with
    (`access_token_verify`). Raises AccessTokenInvalid; reads no database."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise AccessTokenInvalid(_NOT_OURS) from None
    project_id, user, api_key_id = claims.get("iss"), claims.get("sub"), claims.get("akid")
    if not isinstance(project_id, str) or not 0 < len(project_id) <= 40:
        raise AccessTokenInvalid("The bearer token is not an access token of this server.")
    if not isinstance(user, str) or not user or not isinstance(api_key_id, int) or isinstance(api_key_id, bool):
        raise AccessTokenInvalid(_NOT_OURS)
    return AccessClaims(project_id=project_id, user_key=user, api_key_id=api_key_id)


def access_token_verify(token: str, project) -> AccessClaims:
    """Verifies an access token this server issued for `project`. Raises AccessTokenInvalid."""
    try:
        # The leeway is for server processes on other hosts whose clocks differ a little: PyJWT
        # refuses an `iat` in the future, which a token issued a moment ago elsewhere can have.
        claims = jwt.decode(token, _access_key(project), algorithms=["HS256"], issuer=project.pk,
                            audience=ACCESS_TOKEN_AUDIENCE, leeway=ACCESS_TOKEN_LEEWAY_SECONDS,
                            options={"require": ["iss", "aud", "sub", "akid", "iat", "exp", "jti"]})
    except jwt.ExpiredSignatureError:
        raise AccessTokenInvalid("The bearer access token has expired; exchange a new one at /oauth/token.") from None
    except jwt.PyJWTError:
        raise AccessTokenInvalid(_NOT_OURS) from None
    user, api_key_id = claims["sub"], claims["akid"]
    if not isinstance(user, str) or not user or not isinstance(api_key_id, int):
        raise AccessTokenInvalid(_NOT_OURS)
    return AccessClaims(project_id=project.pk, user_key=user, api_key_id=api_key_id)


def access_token_secret_rotate(*, project) -> None:
    """Gives the project a new random access-token secret (one UPDATE): every access token issued for
    it stops verifying at once, and its apps exchange their user tokens again."""
    from projects.models import Project, new_access_token_secret

    project.access_token_secret = new_access_token_secret()
    Project.objects.filter(pk=project.pk).update(access_token_secret=project.access_token_secret)
