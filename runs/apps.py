from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Crash recovery tells the lock what taking over an expired lease records: the lock never
        # imports recovery (an import contract in pyproject.toml), and every process that can take
        # a lock has Django set up, so it is always registered.
        from runs import lock
        from runs.recovery.leases import dead_run_record

        lock.lock_takeover_register(dead_run_record)
