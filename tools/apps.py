from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # `/mcp` (the browser's MCP gateway) is an API route: CORS, and problem+json for what is refused
        # before its view (the body limit, the input check).
        from core.error_shapes import PROBLEM_JSON, error_shape_register

        error_shape_register("/mcp", PROBLEM_JSON)
        # `manage.py rotate_secrets` re-encrypts the MCP vault too (projects/secrets.py).
        from projects.secrets import rotation_register
        from tools.vault_rotation import vault_rotate

        rotation_register("MCP vault", vault_rotate)
