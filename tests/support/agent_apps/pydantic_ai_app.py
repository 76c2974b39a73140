"""A PydanticAI agent served by its own AG-UI adapter (`pydantic_ai.ui.ag_ui.AGUIAdapter`).

The agent has a tool of its own (`get_weather`); the tools the AG-UI caller offers become PydanticAI's
deferred (external) tools, whose calls end the agent's run for the caller to answer.
"""
from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from tests.support.agent_apps.counting import Counting

model = OpenAIChatModel("agent-model", provider=OpenAIProvider(base_url=os.environ["FAKE_OPENAI_URL"],
                                                               api_key="agent-key"))
agent = Agent(model, instructions="You are the weather agent.")


@agent.tool_plain
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny and 21 degrees in {city}"


async def run(request: Request):
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Counting(Starlette(routes=[Route("/agent", run, methods=["POST"])]))  # how its requests ended
