"""The shipped server tools: the time in a time zone, and a safe arithmetic evaluator."""
from __future__ import annotations

import ast
import math
import operator
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field

from tools.registry import server_tool


class CurrentTimeArgs(BaseModel):
    timezone: str = Field("UTC", description="IANA time zone name, e.g. Europe/Paris")


@server_tool("current_time", "The current date and time in a given IANA time zone.")
def current_time(args: CurrentTimeArgs) -> str:
    try:
        zone = ZoneInfo(args.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"Unknown time zone: {args.timezone}") from None
    return datetime.now(zone).isoformat(timespec="seconds")


class CalculateArgs(BaseModel):
    expression: str = Field(description="Arithmetic expression, e.g. (2 + 3) * 4 / sqrt(16)", max_length=500)


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max,
              "sin": math.sin, "cos": math.cos, "tan": math.tan, "log": math.log, "exp": math.exp}
_CONSTANTS = {"pi": math.pi, "e": math.e}


@server_tool("calculate", "Evaluates an arithmetic expression (+ - * / // % **, parentheses, sqrt, log, …).")
def calculate(args: CalculateArgs) -> str:
    # A whitelist walk of the syntax tree: no names, attributes or calls beyond the table above,
    # and a bound on exponents so `9**9**9` cannot eat the server.
    tree = ast.parse(args.expression, mode="eval")
    return repr(_eval(tree.body))


def _eval(node: ast.AST) -> float | int:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 1000 or abs(left) > 1e6):
            raise ValueError("Exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
            and not node.keywords and len(node.args) <= 4):
        return _FUNCTIONS[node.func.id](*[_eval(a) for a in node.args])
    raise ValueError("Unsupported expression")
