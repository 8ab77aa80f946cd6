"""The route table: route name -> (contract, accumulator class).

One module per route holds its contract (plain data) and its accumulator. The session looks a
route up here and nowhere else; adding a route means adding one module and one line.
"""

from __future__ import annotations

from typing import NamedTuple

from .._errors import UsageError
from ._base import RouteAccumulator, RouteContract, StopCategory, stop_table
from .anthropic_messages import AnthropicMessagesAccumulator
from .gemini import GeminiAccumulator
from .openai_chat import OpenAIChatAccumulator
from .openai_responses import OpenAIResponsesAccumulator


class Route(NamedTuple):
    """A table entry."""

    contract: RouteContract
    accumulator: type[RouteAccumulator]


ROUTES: dict[str, Route] = {
    cls.contract.name: Route(cls.contract, cls)
    for cls in (OpenAIChatAccumulator, OpenAIResponsesAccumulator, AnthropicMessagesAccumulator, GeminiAccumulator)
}

#: The route names, in table order (``openai-chat``, ``openai-responses``, ``anthropic-messages``, ``gemini``).
ROUTE_NAMES: tuple[str, ...] = tuple(ROUTES)


def route(name: str) -> Route:
    """Look a route up; an unknown name is a caller bug (:class:`~webclient.UsageError`)."""
    try:
        return ROUTES[name]
    except (KeyError, TypeError):
        raise UsageError(f"unknown route; expected one of {', '.join(ROUTE_NAMES)}") from None


__all__ = ["ROUTES", "ROUTE_NAMES", "Route", "RouteAccumulator", "RouteContract", "StopCategory", "route", "stop_table"]
