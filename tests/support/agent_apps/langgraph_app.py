"""A LangGraph ReAct graph served by `ag-ui-langgraph`, as its README builds one.

The graph binds its own tool (`get_weather`, run by the graph's ToolNode) and the tools the AG-UI
caller offers (ag-ui-langgraph puts `RunAgentInput.tools` in the state's `tools`); a call of an
offered tool ends the graph's run so that the caller runs it, as frontend tools work in AG-UI. Its
state's `model_calls` counts its model's calls, from the state the caller sends.
"""
from __future__ import annotations

import os

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from tests.support.agent_apps.counting import Counting


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny and 21 degrees in {city}"


OWN_TOOLS = [get_weather]
OWN_NAMES = {t.name for t in OWN_TOOLS}


class State(MessagesState):
    tools: list
    # The graph's own shared state (AG-UI's `state`): how often its model was called in the conversation.
    model_calls: int


model = ChatOpenAI(model="agent-model", base_url=os.environ["FAKE_OPENAI_URL"], api_key="agent-key",
                   streaming=True, stream_usage=True, max_retries=0)


async def agent(state: State, config):
    bound = model.bind_tools([*OWN_TOOLS, *(state.get("tools") or [])])
    return {"messages": [await bound.ainvoke(state["messages"], config)],
            "model_calls": (state.get("model_calls") or 0) + 1}


def route(state: State) -> str:
    calls = getattr(state["messages"][-1], "tool_calls", None) or []
    return "tools" if calls and all(call["name"] in OWN_NAMES for call in calls) else END


builder = StateGraph(State)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode(OWN_TOOLS))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", route, ["tools", END])
builder.add_edge("tools", "agent")
graph = builder.compile(checkpointer=MemorySaver())

api = FastAPI()
add_langgraph_fastapi_endpoint(api, LangGraphAgent(name="weather", graph=graph), "/agent")
app = Counting(api)  # how its requests ended, seen at the agent's side
