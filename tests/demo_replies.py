"""The embedded upstream's replies, planned without a server: for tests that read what it would send.

:func:`planned` asks :func:`demo_site.upstream.plan_reply` what a route answers under a scenario, the way the
server does (the Gemini model from the path, the others' from the body), with no delays and a ``big`` answer of
:data:`CONFIG`'s size; :func:`as_played` is the scenario that answer was built from.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from demo_site.scenarios import Scenario
from demo_site.upstream import Gemini, OpenAIChat, OpenAIResponses, Reply, RouteEncoder, UpstreamConfig, plan_reply

#: No delays (the replies are planned, never played), and a 20,000-character ``big`` answer.
CONFIG = UpstreamConfig(time_scale=0.0, big_chars=20_000)
#: The user's question in every planned request.
PROMPT = "Weather in Paris?"
#: The Gemini model, a path segment of its route.
GEMINI_MODEL = "gemini-demo"


def request_body(enc_cls: type[RouteEncoder]) -> dict[str, Any]:
    """A streaming request of the route asking :data:`PROMPT` (Chat also asks for the usage chunk)."""
    if enc_cls is Gemini:
        return {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
    body: dict[str, Any] = {"model": "demo-model", "stream": True}
    if enc_cls is OpenAIResponses:
        body["input"] = [{"role": "user", "content": PROMPT}]
    else:
        body["messages"] = [{"role": "user", "content": PROMPT}]
    if enc_cls is OpenAIChat:
        body["stream_options"] = {"include_usage": True}
    return body


def planned(enc_cls: type[RouteEncoder], scenario: Scenario, body: dict[str, Any] | None = None, *,
            sse: bool = True) -> Reply:
    """The route's reply to ``body`` (default :func:`request_body`) under ``scenario``."""
    return plan_reply(enc_cls, scenario, request_body(enc_cls) if body is None else body,
                      path_model=GEMINI_MODEL if enc_cls is Gemini else None, sse=sse, config=CONFIG,
                      rng=random.Random(7))


def body_of(reply: Reply) -> bytes:
    """Every byte the reply writes."""
    return b"".join(data for _, data in reply.writes)


def as_played(scenario: Scenario) -> Scenario:
    """``scenario`` as :data:`CONFIG` plays it (the ``big`` answer grown to ``big_chars`` only)."""
    if scenario.slug == "big":
        return dataclasses.replace(scenario, repeat_to_chars=CONFIG.big_chars)
    return scenario
