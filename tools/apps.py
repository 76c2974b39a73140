from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # `/mcp` (the browser's MCP gateway) is an API route: CORS, and problem+json for what is refused
        # before its view (the body limit, the input check).
        from core.error_shapes import PROBLEM_JSON, error_shape_register

        error_shape_register("/mcp", PROBLEM_JSON)
