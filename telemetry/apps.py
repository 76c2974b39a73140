from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "telemetry"
    verbose_name = "Usage and telemetry"

    def ready(self) -> None:
        # Tracing is set up once per process, and only when an OTLP endpoint is configured: with none,
        # nothing of the OpenTelemetry SDK is imported and the hot path pays one boolean test.
        from telemetry import tracing

        tracing.configure()
        # The limits sit below telemetry in the layers: they tell of their refusals to whoever listens.
        from projects import limits
        from telemetry import metrics

        limits.on_refusal(metrics.rate_limited)
