from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "threads"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from projects.config import settings_saved_hooks
        from projects.secrets import rotation_register
        from threads.sealing import content_rotate, threads_sealed_sync

        # A project's `encryptContent` followed by its threads, and their content re-encrypted by
        # `manage.py rotate_secrets` (threads/sealing.py).
        if threads_sealed_sync not in settings_saved_hooks:
            settings_saved_hooks.append(threads_sealed_sync)
        rotation_register("content", content_rotate)
