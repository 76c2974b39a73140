"""Python client for the Tambo v1 API (and the chat-completions message engine)."""
