from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The token exchange's callers read OAuth's error object (RFC 6749, section 5.2), also for
        # what is refused before its view runs (the body limit, the input check).
        from core.error_shapes import ErrorShape, error_shape_register
        from projects.oauth import oauth_error_for

        error_shape_register("/oauth", ErrorShape("oauth", oauth_error_for))
