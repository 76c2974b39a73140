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

        # The live thread streams hear of a thread's changes from the threads' services, the event
        # log's notifications and runs starting here (runs/stream/thread_watch.py).
        from runs.stream.feeds import flusher
        from runs.stream.follow import follower
        from runs.stream.thread_watch import thread_changed_notify, thread_watch
        from threads.changes import thread_changes_register

        thread_changes_register(thread_changed_notify)
        follower.listeners.append(thread_watch.heard)
        flusher.thread_listeners.append(thread_watch.heard)

        # `manage.py rotate_secrets` re-encrypts the encrypted rows of runs too (threads/sealing.py).
        from projects.secrets import rotation_register
        from runs.rotation import runs_rotate

        rotation_register("runs", runs_rotate)
