"""`manage.py rotate_secrets` for the MCP vault (tools/mcp_vault.py): its stored values re-encrypted
with the first SECRETS_KEYS key. Apart from the vault so that registering it (tools/apps.py) does not
import the MCP SDK when Django starts."""
from __future__ import annotations

from django.db import transaction

from projects.secrets import STORED_PREFIX, secret_rotate
from tools.models import McpAuthorization, McpServer, McpToken


# The vault's columns that hold keyring values (`fernet:` tokens, or `env:NAME` for a client secret).
_VAULT_COLUMNS = ((McpToken, "tokens"), (McpServer, "oauth_client"), (McpServer, "oauth_client_secret"),
                  (McpAuthorization, "flow"))


def vault_rotate(batch: int) -> dict[str, int]:
    """Re-encrypts the vault's tokens, registered clients, client secrets and flows in progress with
    the first SECRETS_KEYS key (`manage.py rotate_secrets`), `batch` rows per transaction; returns the
    rows re-encrypted per table. A row written meanwhile is encrypted with the first key already."""
    counts: dict[str, int] = {}
    for model, column in _VAULT_COLUMNS:
        after = 0
        while True:
            with transaction.atomic():
                stored = {f"{column}__startswith": STORED_PREFIX}
                rows = list(model.objects.select_for_update().filter(pk__gt=after, **stored)
                            .order_by("pk").values_list("pk", column)[:batch])
                for pk, value in rows:
                    model.objects.filter(pk=pk).update(**{column: secret_rotate(value)})
            counts[f"{model._meta.label}.{column}"] = counts.get(f"{model._meta.label}.{column}", 0) + len(rows)
            if len(rows) < batch:
                break
            after = rows[-1][0]
    return counts
