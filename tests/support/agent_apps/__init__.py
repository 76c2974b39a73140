"""Real agents nobody here wrote, served over AG-UI for the agent-mode tests (docs/models.md#agents).

Each module is an ASGI app (`app`) that `tests/support/agents.py` runs under uvicorn in its own
process; its model is our fake OpenAI server at `FAKE_OPENAI_URL`, so a test scripts what the
agent's model says and reads what it was asked.
"""
