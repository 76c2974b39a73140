"""Opaque, prefixed, URL-safe, unguessable ids (`thr_…`, `msg_…`, `run_…`, `comp_…`, `call_…`)."""
import secrets


def new_id(prefix: str) -> str:
    # 16 random bytes: unguessable, and short enough to read in logs.
    return f"{prefix}_{secrets.token_urlsafe(16).replace('-', 'x').replace('_', 'y')}"
