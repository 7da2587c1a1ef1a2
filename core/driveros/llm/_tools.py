"""Tools defined once: a pydantic model for the arguments plus an async handler.

A :class:`Tool` renders to a :class:`ToolSpec` (and from there to OpenAI function tools and
Anthropic tools). Calling it never raises for a model's mistake: unparseable or invalid
arguments, an unknown tool and a :class:`ToolError` from the handler all become an error
``ToolResultPart`` whose text tells the model what to fix.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from driveros._errors import ToolError
from driveros.llm._types import ToolCallPart, ToolResultPart, ToolSpec

_log = logging.getLogger("driveros.llm.tools")

ArgsT = TypeVar("ArgsT", bound=BaseModel)
Handler = Callable[[ArgsT], Awaitable[Any]]


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Titles are noise to a model and cost tokens on every request.
    return {
        k: (_clean_schema(v) if isinstance(v, dict) else _clean_list(v))
        for k, v in schema.items()
        if k != "title" or not isinstance(v, str)
    }


def _clean_list(value: Any) -> Any:
    if isinstance(value, list):
        return [_clean_schema(v) if isinstance(v, dict) else v for v in value]
    return value


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "(arguments)"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str, ensure_ascii=False)


class Tool(Generic[ArgsT]):
    """One tool. ``args`` validates the model's arguments; ``handler`` does the work."""

    def __init__(
        self,
        name: str,
        args: type[ArgsT],
        handler: Handler[ArgsT],
        *,
        description: str = "",
    ) -> None:
        self.name = name
        self.args = args
        self.handler = handler
        self.description = description or (args.__doc__ or "").strip()

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    @property
    def spec(self) -> ToolSpec:
        schema = _clean_schema(self.args.model_json_schema())
        schema.setdefault("properties", {})
        return ToolSpec(name=self.name, description=self.description, parameters=schema)

    def error(self, call: ToolCallPart, message: str) -> ToolResultPart:
        return ToolResultPart(
            tool_call_id=call.id, name=call.name, content=f"Error: {message}", is_error=True
        )

    async def __call__(self, call: ToolCallPart) -> ToolResultPart:
        """Validate and run; any model-side mistake comes back as an error result."""
        if call.raw_arguments is not None:
            return self.error(
                call,
                f"the arguments for {self.name} are not a JSON object: "
                f"{call.raw_arguments[:500]!r}. Send the arguments again as one JSON object.",
            )
        try:
            args = self.args.model_validate(call.arguments)
        except ValidationError as exc:
            return self.error(
                call, f"invalid arguments for {self.name}: {_validation_message(exc)}"
            )
        try:
            value = await self.handler(args)
        except ToolError as exc:
            return self.error(call, exc.message)
        except Exception as exc:
            # A crashing handler must not take the run down; the model sees what happened.
            _log.warning("tool %s failed: %r", self.name, exc, exc_info=True)
            return self.error(call, f"{self.name} failed: {type(exc).__name__}: {exc}")
        return ToolResultPart(tool_call_id=call.id, name=call.name, content=_render(value))


def tool(
    args: type[ArgsT], *, name: str | None = None, description: str | None = None
) -> Callable[[Handler[ArgsT]], Tool[ArgsT]]:
    """Decorator: ``@tool(ReadArgs) async def read_file(args): ...`` -> a :class:`Tool`.

    The name defaults to the function's name and the description to its docstring.
    """

    def wrap(fn: Handler[ArgsT]) -> Tool[ArgsT]:
        return Tool(
            name or str(getattr(fn, "__name__", "tool")),
            args,
            fn,
            description=description if description is not None else (fn.__doc__ or "").strip(),
        )

    return wrap
