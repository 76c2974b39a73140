"""What a project remembers about each of its end users, across threads (docs/memory.md)."""
