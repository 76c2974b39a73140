"""Secrets in project settings (provider API keys): `env:NAME` references and values stored encrypted.

A value typed into the admin (or written literally in a project file) is stored as `fernet:<token>`,
encrypted with `cryptography`'s MultiFernet over the keys in `SECRETS_KEYS` (comma-separated Fernet
keys; the first encrypts, all decrypt, so a key is rotated by putting a new one first and running
`manage.py rotate_secrets`). An `env:NAME` value is stored as written and read from the environment
when the call is made (docs/projects.md). Neither is ever shown back in full: `secret_hint`.
"""
from __future__ import annotations

import os

from typing import Callable

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from projects.config import ENV_REF
from providers.base import MissingSecret

STORED_PREFIX = "fernet:"


# What else `manage.py rotate_secrets` re-encrypts: (label, step) registered by the apps that store
# values with this keyring (tools/apps.py: the MCP vault; threads/apps.py: encrypted content); a step
# takes the batch size and returns {what: rows re-encrypted}. A registry, so this layer imports none.
rotation_steps: list[tuple[str, Callable[[int], dict[str, int]]]] = []


def rotation_register(label: str, step: Callable[[int], dict[str, int]]) -> None:
    if all(existing != label for existing, _ in rotation_steps):
        rotation_steps.append((label, step))


class SecretUnreadable(Exception):
    """A stored secret that none of the configured keys decrypts (a key was removed too early)."""


# The keyring of the current SECRETS_KEYS: building it decodes every key, which the content of an
# encrypting project (threads/sealing.py) would otherwise pay on every value.
_keyring: tuple[tuple[str, ...], MultiFernet] | None = None


def _fernet() -> MultiFernet:
    global _keyring
    keys = tuple(k.strip() for k in settings.SECRETS_KEYS if k.strip())
    if _keyring is not None and _keyring[0] == keys:
        return _keyring[1]
    if not keys:
        raise ImproperlyConfigured(
            "Storing a secret needs SECRETS_KEYS (a Fernet key: python -c 'from cryptography.fernet import "
            "Fernet; print(Fernet.generate_key().decode())'); or give the value as env:NAME.")
    try:
        ring = MultiFernet([Fernet(k.encode()) for k in keys])
    except ValueError as exc:
        raise ImproperlyConfigured("SECRETS_KEYS holds a value that is not a Fernet key.") from exc
    _keyring = (keys, ring)
    return ring


def keys_configured() -> bool:
    return any(k.strip() for k in settings.SECRETS_KEYS)


def is_stored(value: str | None) -> bool:
    return bool(value) and value.startswith(STORED_PREFIX)


def secret_store(value: str | None) -> str | None:
    """The form a secret is stored in: env references and already-stored values unchanged, anything
    else encrypted."""
    if not value or ENV_REF.match(value) or is_stored(value):
        return value or None
    return STORED_PREFIX + _fernet().encrypt(value.encode()).decode()


def secret_resolve(value: str | None) -> str | None:
    """The usable secret. Raises MissingSecret for an unset `env:` variable and SecretUnreadable for a
    stored value no configured key decrypts."""
    if not value:
        return None
    ref = ENV_REF.match(value)
    if ref:
        resolved = os.environ.get(ref.group(1))
        if not resolved:
            raise MissingSecret(ref.group(1))
        return resolved
    if is_stored(value):
        try:
            return _fernet().decrypt(value[len(STORED_PREFIX):].encode()).decode()
        except InvalidToken as exc:
            raise SecretUnreadable("A stored secret cannot be decrypted with SECRETS_KEYS.") from exc
    return value


def seal(text: str) -> str:
    """`text` encrypted with the first key, in the stored form (`fernet:<token>`), whatever it looks
    like: the content of an encrypting project (threads/sealing.py), where no `env:` form exists."""
    return STORED_PREFIX + _fernet().encrypt(text.encode()).decode()


def unseal(value: str) -> str:
    """The text of a value `seal` stored. Raises SecretUnreadable when no configured key decrypts it."""
    try:
        return _fernet().decrypt(value[len(STORED_PREFIX):].encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("Stored content cannot be decrypted with SECRETS_KEYS.") from exc


def secret_rotate(value: str | None) -> str | None:
    """A stored value re-encrypted with the first key (MultiFernet.rotate); others unchanged."""
    if not is_stored(value):
        return value
    return STORED_PREFIX + _fernet().rotate(value[len(STORED_PREFIX):].encode()).decode()


def secret_hint(value: str | None) -> str:
    """What the admin and apply_projects show: the variable a value comes from, or that it is stored
    (with its last 4 characters when it decrypts), never the value."""
    if not value:
        return "(none: the server's default)"
    if ENV_REF.match(value):
        return value
    try:
        plain = secret_resolve(value) or ""
    except (SecretUnreadable, ImproperlyConfigured):
        return "stored (cannot be decrypted with SECRETS_KEYS)"
    return f"stored (…{plain[-4:]})" if len(plain) >= 12 else "stored"
