from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """The gateway has no models; it is an app so that its error shape is registered when Django starts."""

    name = "gateway"

    def ready(self) -> None:
        # The gateway's callers are OpenAI clients: what is answered before a gateway view runs (the
        # body limit, the input check, a database outage) takes OpenAI's shape too.
        from core.error_shapes import ErrorShape, error_shape_register
        from gateway.errors import openai_error_for

        error_shape_register("/api", ErrorShape("openai", openai_error_for))
