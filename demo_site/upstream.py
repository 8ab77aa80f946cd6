"""The embedded CometAPI-shaped upstream: four streaming routes that play the scenarios of
:mod:`demo_site.scenarios` in each route's exact wire format.

Routes (the same paths CometAPI serves)::

    POST /v1/chat/completions                                  OpenAI Chat Completions chunks, data: [DONE]
    POST /v1/responses                                         OpenAI Responses events with sequence_number
    POST /v1/messages                                          Anthropic Messages events with ping
    POST /v1beta/models/{model}:streamGenerateContent?alt=sse  Gemini data-only chunks, CRLF framing
    GET  /v1/responses/{id}?stream=true&starting_after=N       a background response's events after N (resume)

**Scenario selection.** The request header ``x-demo-scenario: <slug>`` picks the scenario (slugs in
:data:`demo_site.scenarios.SCENARIOS`); without the header the scenario is ``plain``; an unknown slug
is answered ``400`` with a JSON error. The request body is read only for a short, sanitized prefix
of the last user message (echoed in the answer), the ``model`` field (echoed, sanitized) and, on the
Chat route, ``stream_options.include_usage`` (adds the usage-only chunk before ``[DONE]``, as the
real API does). On the Gemini route a request without ``alt=sse`` gets the non-SSE JSON array, as
the real API does.

**Transport control.** Every reply is planned as an explicit list of byte writes with the delay
before each (:class:`Reply`), and played with one ``StreamResponse.write`` (which hands the bytes to
the socket, ``TCP_NODELAY`` on) per planned write, so the chunk boundaries the scenario asks for
(inside a multi-byte character, between CR and LF) are the ones that reach the client, give or take
coalescing by a slow reader.

**Resume (background responses).** A Responses request whose body says ``"background": true`` is kept, as
OpenAI keeps background responses, in a small store (:class:`ResumeStore`: :data:`RESUME_STORE_ENTRIES`
responses and :data:`RESUME_STORE_BYTES` framed bytes at most, oldest dropped first; nothing else of the
request). ``GET /v1/responses/{id}?stream=true&starting_after=N`` then streams that response's events
numbered above ``N`` (all of them without ``starting_after``). When the scenario cuts the answer (``eof``)
or stalls, what is kept is the *whole* answer, continued by :data:`RESUMED_TAIL`: the POST delivers the
scenario's cut prefix, a resume delivers the rest, and a client that resumes ends ``complete``. An unknown
id is a JSON ``404``, a malformed query a JSON ``400``.

**Disconnects.** Each stream is counted in :class:`StreamStats` as ``started``, then ``finished``
(the server wrote everything it meant to) or ``disconnected`` (the client went away first: a write
failed or the handler was cancelled on connection loss). ``GET /__demo/stats`` returns the counters;
no content is kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import json
import logging
import math
import random
import re
import string
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from aiohttp import web

from demo_site.scenarios import (
    BY_SLUG,
    DEFAULT_SCENARIO,
    SCENARIOS,
    TOOLS,
    Scenario,
    Stop,
    ToolCallSpec,
    answer_text,
    sanitize_prompt,
    text_deltas,
)

log = logging.getLogger("demo_site.upstream")

#: Request header that selects the scenario.
SCENARIO_HEADER = "x-demo-scenario"

#: Bytes per write while an endless event grows.
ENDLESS_WRITE_BYTES = 64 * 1024
#: Events per write in ``batch`` chunking.
BATCH_EVENTS = 32
#: How often a stalled stream checks whether its client is still there (seconds).
STALL_POLL_SECONDS = 0.2
#: Background responses kept for resuming: enough for a few tabs' worth of recent attempts ...
RESUME_STORE_ENTRIES = 32
#: ... within this many framed bytes in all (the ~1 MB ``big`` answer frames to ~2.4 MB; a few fit).
RESUME_STORE_BYTES = 16 * 1024 * 1024
#: How a cut or stalled background answer goes on when it is resumed.
RESUMED_TAIL = " … and the rest of the answer arrived on the resumed stream."
#: Endings that stop mid-answer without an error (the connection closes, or the stream stalls): a background
#: response's resume continues them.
CUT_ENDINGS = ("eof", "stall")
#: ``starting_after`` as the resume request sends it: a sequence number.
_SEQUENCE_NUMBER = re.compile(r"[0-9]{1,9}")


@dataclass(frozen=True)
class UpstreamConfig:
    """Knobs of the embedded upstream. Tests shrink the timings; the demo uses the defaults."""

    #: Multiplies every scenario delay (0.02 makes a 5 s slow drip take 0.1 s).
    time_scale: float = 1.0
    #: How long a ``stall`` stays silent before ending the body by itself (not scaled).
    stall_seconds: float = 60.0
    #: Safety cap on the bytes of an ``endless`` event if the client never gives up.
    endless_cap_bytes: int = 24 * 1024 * 1024
    #: Overrides the ``big`` scenario's answer size in characters (``None``: the table's ~1 MB).
    big_chars: int | None = None
    #: Overrides the ``big`` scenario's delay between writes in seconds, before ``time_scale`` (``None``: the
    #: table's). Tests that watch a shortened answer mid-stream slow it down so it spans many frames.
    big_delay: float | None = None


# --- framing -------------------------------------------------------------------------------------


class Frame(NamedTuple):
    """One SSE event before framing: its ``data`` text and optional ``event`` name."""

    data: str
    event: str | None = None


def encode_frame(frame: Frame, eol: str) -> bytes:
    """The bytes of one SSE event: optional ``event:`` line, one ``data:`` line, blank line."""
    head = f"event: {frame.event}{eol}" if frame.event else ""
    return f"{head}data: {frame.data}{eol}{eol}".encode()


def compact_json(obj: object) -> str:
    """JSON as OpenAI and Anthropic send it: no spaces, raw UTF-8 (not ``\\u`` escapes)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


_ALNUM = string.ascii_letters + string.digits


def _rand(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _hex(rng: random.Random, n: int) -> str:
    return _rand(rng, n, "0123456789abcdef")


def _tokens(chars: int) -> int:
    """A plausible token count for ``chars`` characters (about four characters per token)."""
    return max(1, math.ceil(chars / 4))


@dataclass
class Totals:
    """What the answer contained, for terminal events, usage and non-streaming bodies."""

    text: str
    calls: list[ToolCallSpec]
    prompt_tokens: int
    #: Chat only: the request asked for the usage-only chunk.
    include_usage: bool = False

    @property
    def output_tokens(self) -> int:
        return _tokens(len(self.text) + sum(len(c.arguments) for c in self.calls))


# --- route encoders ------------------------------------------------------------------------------
#
# One small class per route. The driver (`answer_frames`) calls the hooks in answer order:
# start, text_open, text_delta*, text_close, (tool_open, tool_delta*, tool_close)*, finish — or
# error / nothing for the broken endings. Each hook returns the route's events for that step. An
# encoder keeps only its own wire state (ids, indexes, sequence numbers).


class RouteEncoder:
    """Base: shared identity (model, ids, clock, rng) and no-op hooks."""

    route: ClassVar[str]
    default_model: ClassVar[str]
    eol: ClassVar[str] = "\n"
    stream_content_type: ClassVar[str] = "text/event-stream; charset=utf-8"

    def __init__(self, model: str, rng: random.Random, prompt_tokens: int) -> None:
        self.model = model
        self.rng = rng
        self.prompt_tokens = prompt_tokens
        self.created = int(time.time())
        #: The answer is a refusal (stop ``"refusal"``): text goes out on the route's refusal channel, if any.
        self.refusal = False
        #: Responses only: the request asked for background mode (its events say so; the store keeps them).
        self.background = False

    @staticmethod
    def prompt_of(body: Any) -> str:
        """The last user message's text in a request body of this route."""
        return _text_of(_last_user(body.get("messages") if isinstance(body, dict) else None))

    def dumps(self, obj: object) -> str:
        return compact_json(obj)

    def start(self) -> list[Frame]:
        return []

    def text_open(self) -> list[Frame]:
        return []

    def text_delta(self, delta: str) -> list[Frame]:
        raise NotImplementedError

    def text_close(self, text: str) -> list[Frame]:
        return []

    def tool_open(self, i: int, call: ToolCallSpec) -> list[Frame]:
        return []

    def tool_delta(self, i: int, fragment: str) -> list[Frame]:
        return []

    def tool_close(self, i: int, call: ToolCallSpec) -> list[Frame]:
        return []

    def finish(self, stop: Stop, totals: Totals) -> list[Frame]:
        raise NotImplementedError

    def error(self) -> list[Frame]:
        raise NotImplementedError

    def json_body(self, stop: Stop, totals: Totals) -> object:
        raise NotImplementedError


class OpenAIChat(RouteEncoder):
    """``chat.completion.chunk`` objects; ``data: [DONE]`` ends the stream."""

    route = "openai-chat"
    default_model = "gpt-4o-mini-2024-07-18"
    _FINISH: ClassVar[dict[str, str]] = {"stop": "stop", "tool": "tool_calls", "length": "length", "refusal": "stop"}

    def __init__(self, model: str, rng: random.Random, prompt_tokens: int) -> None:
        super().__init__(model, rng, prompt_tokens)
        self.id = "chatcmpl-" + _rand(rng, 29)
        self.fingerprint = "fp_" + _hex(rng, 10)

    def _chunk(self, delta: dict[str, object], finish: str | None = None) -> Frame:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return Frame(self.dumps({**self._head(), "choices": [choice]}))

    def _head(self) -> dict[str, object]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "system_fingerprint": self.fingerprint}

    def _usage(self, totals: Totals) -> dict[str, object]:
        out = totals.output_tokens
        return {"prompt_tokens": totals.prompt_tokens, "completion_tokens": out,
                "total_tokens": totals.prompt_tokens + out, "completion_tokens_details": {"reasoning_tokens": 0}}

    def start(self) -> list[Frame]:
        return [self._chunk({"role": "assistant", "content": "", "refusal": None})]

    def text_delta(self, delta: str) -> list[Frame]:
        return [self._chunk({"refusal" if self.refusal else "content": delta})]

    def tool_open(self, i: int, call: ToolCallSpec) -> list[Frame]:
        head = {"index": i, "id": "call_" + _rand(self.rng, 24), "type": "function",
                "function": {"name": call.name, "arguments": ""}}
        return [self._chunk({"tool_calls": [head]})]

    def tool_delta(self, i: int, fragment: str) -> list[Frame]:
        return [self._chunk({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]})]

    def finish(self, stop: Stop, totals: Totals) -> list[Frame]:
        frames = [self._chunk({}, self._FINISH[stop])]
        if totals.include_usage:
            frames.append(Frame(self.dumps({**self._head(), "choices": [], "usage": self._usage(totals)})))
        return [*frames, Frame("[DONE]")]

    def error(self) -> list[Frame]:
        # Groq/OpenAI-compatible form: `event: error` with the CometAPI error envelope; no [DONE].
        err = {"message": "The upstream provider is overloaded, please retry later "
                          f"(request id: {_hex(self.rng, 32)})",
               "type": "comet_api_error", "param": "", "code": "upstream_overloaded"}
        return [Frame(self.dumps({"error": err}), event="error")]

    def json_body(self, stop: Stop, totals: Totals) -> object:
        message: dict[str, object] = {"role": "assistant", "content": None if self.refusal else totals.text,
                                      "refusal": totals.text if self.refusal else None}
        if totals.calls:
            message["tool_calls"] = [
                {"id": "call_" + _rand(self.rng, 24), "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}} for c in totals.calls]
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "system_fingerprint": self.fingerprint,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": self._FINISH[stop]}],
                "usage": self._usage(totals)}


class OpenAIResponses(RouteEncoder):
    """``response.*`` events, each with ``event:`` equal to its ``type`` and a ``sequence_number``."""

    route = "openai-responses"
    default_model = "gpt-5-mini-2025-08-07"

    def __init__(self, model: str, rng: random.Random, prompt_tokens: int) -> None:
        super().__init__(model, rng, prompt_tokens)
        self.id = "resp_" + _hex(rng, 50)
        self.seq = 0
        self.output: list[dict[str, object]] = []  # items in output_index order, updated in place
        self.msg_id = ""
        self.tool_items: dict[int, tuple[int, dict[str, object]]] = {}  # call -> (output_index, item)

    @staticmethod
    def prompt_of(body: Any) -> str:
        value = body.get("input") if isinstance(body, dict) else None
        return value if isinstance(value, str) else _text_of(_last_user(value))

    def _event(self, type_: str, **fields: object) -> Frame:
        frame = Frame(self.dumps({"type": type_, "sequence_number": self.seq, **fields}), event=type_)
        self.seq += 1
        return frame

    def _response(self, status: str, totals: Totals | None = None, **fields: object) -> dict[str, object]:
        usage = None
        if totals is not None:
            out = totals.output_tokens
            usage = {"input_tokens": totals.prompt_tokens, "input_tokens_details": {"cached_tokens": 0},
                     "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": totals.prompt_tokens + out}
        # Every field the live API's response object carries (as recorded in ../shared/fixtures: the request's
        # settings echoed, null where the request set none; the service tier "auto" until the answer ends).
        return {"id": self.id, "object": "response", "created_at": self.created, "status": status,
                "background": self.background, "error": None, "incomplete_details": None, "instructions": None,
                "max_output_tokens": None, "max_tool_calls": None, "model": self.model, "output": list(self.output),
                "parallel_tool_calls": True, "previous_response_id": None, "prompt_cache_key": None,
                "prompt_cache_retention": None, "reasoning": {"effort": None, "summary": None},
                "safety_identifier": None, "service_tier": "auto" if status == "in_progress" else "default",
                "store": self.background, "temperature": 1.0, "text": {"format": {"type": "text"}},
                "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
                "usage": usage, "user": None, "metadata": {}, **fields}

    def start(self) -> list[Frame]:
        return [self._event("response.created", response=self._response("in_progress")),
                self._event("response.in_progress", response=self._response("in_progress"))]

    def text_open(self) -> list[Frame]:
        self.msg_id = "msg_" + _hex(self.rng, 50)
        item: dict[str, object] = {"id": self.msg_id, "type": "message", "status": "in_progress", "content": [],
                                   "role": "assistant"}
        self.output.append(item)
        part = self._part("")
        where = {"item_id": self.msg_id, "output_index": len(self.output) - 1}
        return [self._event("response.output_item.added", output_index=where["output_index"], item=item),
                self._event("response.content_part.added", **where, content_index=0, part=part)]

    def _part(self, text: str) -> dict[str, object]:
        if self.refusal:
            return {"type": "refusal", "refusal": text}
        return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}

    def text_delta(self, delta: str) -> list[Frame]:
        where = {"item_id": self.msg_id, "output_index": len(self.output) - 1, "content_index": 0}
        if self.refusal:
            return [self._event("response.refusal.delta", **where, delta=delta)]
        return [self._event("response.output_text.delta", **where, delta=delta, logprobs=[],
                            obfuscation=self._obfuscation(delta))]

    def _obfuscation(self, delta: str) -> str:
        """The padding the live API adds to each text and argument delta (``stream_options.include_obfuscation``,
        on by default) so that the event sizes do not give the delta's length away: random letters and digits."""
        return _rand(self.rng, max(2, 16 - len(delta)))

    def text_close(self, text: str) -> list[Frame]:
        index = len(self.output) - 1
        part = self._part(text)
        item = {**self.output[index], "status": "completed", "content": [part]}
        self.output[index] = item
        where = {"item_id": self.msg_id, "output_index": index}
        done = (self._event("response.refusal.done", **where, content_index=0, refusal=text) if self.refusal else
                self._event("response.output_text.done", **where, content_index=0, text=text, logprobs=[]))
        return [done,
                self._event("response.content_part.done", **where, content_index=0, part=part),
                self._event("response.output_item.done", output_index=index, item=item)]

    def tool_open(self, i: int, call: ToolCallSpec) -> list[Frame]:
        item: dict[str, object] = {"id": "fc_" + _hex(self.rng, 50), "type": "function_call",
                                   "status": "in_progress", "arguments": "",
                                   "call_id": "call_" + _rand(self.rng, 24), "name": call.name}
        self.output.append(item)
        self.tool_items[i] = (len(self.output) - 1, item)
        return [self._event("response.output_item.added", output_index=len(self.output) - 1, item=item)]

    def tool_delta(self, i: int, fragment: str) -> list[Frame]:
        index, item = self.tool_items[i]
        item["arguments"] = str(item["arguments"]) + fragment  # the incomplete response shows it
        return [self._event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                            delta=fragment, obfuscation=self._obfuscation(fragment))]

    def tool_close(self, i: int, call: ToolCallSpec) -> list[Frame]:
        index, item = self.tool_items[i]
        item.update(status="completed", arguments=call.arguments)
        return [self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                            name=call.name, arguments=call.arguments),
                self._event("response.output_item.done", output_index=index, item=dict(item))]

    def finish(self, stop: Stop, totals: Totals) -> list[Frame]:
        if stop == "length":
            for item in self.output:
                if item["status"] == "in_progress":
                    item["status"] = "incomplete"
            response = self._response("incomplete", totals, incomplete_details={"reason": "max_output_tokens"})
            return [self._event("response.incomplete", response=response)]
        return [self._event("response.completed", response=self._response("completed", totals))]

    def error(self) -> list[Frame]:
        # The recorded live form: a nested `error` event, then `response.failed`.
        message = "The server had an error while processing your request. Sorry about that!"
        return [self._event("error", error={"type": "server_error", "code": "server_error", "message": message,
                                            "param": None}),
                self._event("response.failed", response=self._response(
                    "failed", error={"code": "server_error", "message": message}))]

    def json_body(self, stop: Stop, totals: Totals) -> object:
        status = "incomplete" if stop == "length" else "completed"  # (the last item is the one the limit cut)
        self.output = [{"id": "msg_" + _hex(self.rng, 50), "type": "message", "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                                     "text": totals.text}]}]
        self.output += [{"id": "fc_" + _hex(self.rng, 50), "type": "function_call", "status": "completed",
                         "arguments": c.arguments, "call_id": "call_" + _rand(self.rng, 24), "name": c.name}
                        for c in totals.calls]
        if status == "incomplete":
            self.output[-1]["status"] = "incomplete"
            return self._response(status, totals, incomplete_details={"reason": "max_output_tokens"})
        return self._response(status, totals)


class AnthropicMessages(RouteEncoder):
    """``message_start`` … ``content_block_*`` … ``message_delta``, ``message_stop``; ``event:`` = ``type``."""

    route = "anthropic-messages"
    default_model = "claude-sonnet-4-5-20250929"
    _STOP: ClassVar[dict[str, str]] = {"stop": "end_turn", "tool": "tool_use", "length": "max_tokens",
                                       "refusal": "refusal"}

    def __init__(self, model: str, rng: random.Random, prompt_tokens: int) -> None:
        super().__init__(model, rng, prompt_tokens)
        self.id = "msg_01" + _rand(rng, 22)
        self.block = -1
        self.pinged = False

    def _event(self, type_: str, **fields: object) -> Frame:
        return Frame(self.dumps({"type": type_, **fields}), event=type_)

    def _message(self, content: list[object], stop: str | None, usage: dict[str, object]) -> dict[str, object]:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": content,
                "stop_reason": stop, "stop_sequence": None, "usage": usage}

    def start(self) -> list[Frame]:
        usage = {"input_tokens": self.prompt_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": 1, "service_tier": "standard"}
        return [self._event("message_start", message=self._message([], None, usage))]

    def _open(self, block: dict[str, object]) -> list[Frame]:
        self.block += 1
        frames = [self._event("content_block_start", index=self.block, content_block=block)]
        if not self.pinged:  # the API sends a ping after the first block starts
            self.pinged = True
            frames.append(Frame('{"type": "ping"}', event="ping"))
        return frames

    def text_open(self) -> list[Frame]:
        return self._open({"type": "text", "text": ""})

    def text_delta(self, delta: str) -> list[Frame]:
        return [self._event("content_block_delta", index=self.block, delta={"type": "text_delta", "text": delta})]

    def text_close(self, text: str) -> list[Frame]:
        return [self._event("content_block_stop", index=self.block)]

    def tool_open(self, i: int, call: ToolCallSpec) -> list[Frame]:
        block: dict[str, object] = {"type": "tool_use", "id": "toolu_01" + _rand(self.rng, 22), "name": call.name,
                                    "input": {}}
        return [*self._open(block), *self.tool_delta(i, "")]  # the first input_json_delta is empty

    def tool_delta(self, i: int, fragment: str) -> list[Frame]:
        delta = {"type": "input_json_delta", "partial_json": fragment}
        return [self._event("content_block_delta", index=self.block, delta=delta)]

    def tool_close(self, i: int, call: ToolCallSpec) -> list[Frame]:
        return [self._event("content_block_stop", index=self.block)]

    def finish(self, stop: Stop, totals: Totals) -> list[Frame]:
        usage = {"input_tokens": totals.prompt_tokens, "output_tokens": totals.output_tokens}
        return [self._event("message_delta", delta={"stop_reason": self._STOP[stop], "stop_sequence": None},
                            usage=usage),
                self._event("message_stop")]

    def error(self) -> list[Frame]:
        return [Frame('{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
                      event="error")]

    def json_body(self, stop: Stop, totals: Totals) -> object:
        content: list[object] = [{"type": "text", "text": totals.text}]
        content += [{"type": "tool_use", "id": "toolu_01" + _rand(self.rng, 22), "name": c.name,
                     "input": c.whole_arguments()} for c in totals.calls if c.is_whole]
        usage: dict[str, object] = {"input_tokens": totals.prompt_tokens, "output_tokens": totals.output_tokens}
        return self._message(content, self._STOP[stop], usage)


class Gemini(RouteEncoder):
    """Data-only ``GenerateContentResponse`` chunks with CRLF framing; ``finishReason`` ends it."""

    route = "gemini"
    default_model = "gemini-2.5-flash"
    eol = "\r\n"
    stream_content_type = "text/event-stream"
    _FINISH: ClassVar[dict[str, str]] = {"stop": "STOP", "tool": "STOP", "length": "MAX_TOKENS", "refusal": "SAFETY"}

    def __init__(self, model: str, rng: random.Random, prompt_tokens: int) -> None:
        super().__init__(model, rng, prompt_tokens)
        self.id = _rand(rng, 22)

    @staticmethod
    def prompt_of(body: Any) -> str:
        return _text_of(_last_user(body.get("contents") if isinstance(body, dict) else None))

    def dumps(self, obj: object) -> str:
        # The spacing of the live recording: ": " after keys, "," between items.
        return json.dumps(obj, ensure_ascii=False, separators=(",", ": "))

    def _response(self, parts: list[object], finish: str | None = None,
                  totals: Totals | None = None) -> dict[str, object]:
        candidate: dict[str, object] = {"content": {"parts": parts, "role": "model"}}
        if finish:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        usage: dict[str, object] = {"promptTokenCount": self.prompt_tokens, "totalTokenCount": self.prompt_tokens}
        if totals is not None:
            usage = {"promptTokenCount": totals.prompt_tokens, "candidatesTokenCount": totals.output_tokens,
                     "totalTokenCount": totals.prompt_tokens + totals.output_tokens}
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": self.model,
                "responseId": self.id}

    def text_delta(self, delta: str) -> list[Frame]:
        return [Frame(self.dumps(self._response([{"text": delta}])))]

    def _call_part(self, call: dict[str, object]) -> Frame:
        return Frame(self.dumps(self._response([{"functionCall": call}])))

    def tool_open(self, i: int, call: ToolCallSpec) -> list[Frame]:
        # A call with partial_args streams as Gemini 3 does (streamFunctionCallArguments, the recorded form): the
        # name with willContinue, then one partialArgs piece per part; the closing part is tool_close's.
        if not call.partial_args:
            return []
        frames = [self._call_part({"name": call.name, "willContinue": True})]
        for path, fragment in call.partial_args:
            piece = {"jsonPath": path, "stringValue": fragment, "willContinue": True}
            frames.append(self._call_part({"partialArgs": [piece], "willContinue": True}))
        return frames

    def tool_close(self, i: int, call: ToolCallSpec) -> list[Frame]:
        # Otherwise Gemini sends each functionCall whole.
        if call.partial_args:
            return [self._call_part({})]
        return [self._call_part({"name": call.name, "args": call.whole_arguments()})]

    def finish(self, stop: Stop, totals: Totals) -> list[Frame]:
        return [Frame(self.dumps(self._response([{"text": ""}], self._FINISH[stop], totals)))]

    def error(self) -> list[Frame]:
        err = {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}
        return [Frame(self.dumps({"error": err}))]

    def json_body(self, stop: Stop, totals: Totals) -> object:
        parts: list[object] = [{"text": totals.text}]
        parts += [{"functionCall": {"name": c.name, "args": c.whole_arguments()}} for c in totals.calls if c.is_whole]
        return [self._response(parts, self._FINISH[stop], totals)]


#: Route path -> encoder. The Gemini model is a path segment.
ROUTES: tuple[tuple[str, type[RouteEncoder]], ...] = (
    ("/v1/chat/completions", OpenAIChat),
    ("/v1/responses", OpenAIResponses),
    ("/v1/messages", AnthropicMessages),
    ("/v1beta/models/{model:[^/:]+}:streamGenerateContent", Gemini),
)


def _last_user(items: object) -> object:
    """The last item of a message list whose role is ``user`` (or that has no role)."""
    if not isinstance(items, list):
        return None
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role", "user") == "user":
            return item
    return None


def _text_of(value: object) -> str:
    """The text inside a message, content string, content-part list or Gemini ``parts`` list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(t for t in (_text_of(v) for v in value) if t)
    if isinstance(value, dict):
        for key in ("text", "content", "parts"):
            if key in value:
                return _text_of(value[key])
    return ""


# --- the driver: scenario + encoder -> frames ------------------------------------------------------

_ENDLESS_MARK = "\x00endless\x00"  # escaped by JSON to \u0000endless\u0000, found in the framed bytes
_ENDLESS_MARK_JSON = json.dumps(_ENDLESS_MARK)[1:-1]


def answer_frames(scenario: Scenario, enc: RouteEncoder, deltas: list[str], totals: Totals) -> list[Frame]:
    """Every event of the streamed answer, in order, for ``scenario``'s ending.

    For the ``endless`` ending the last frame is a text delta whose text is a marker; the caller cuts
    the framed bytes at the marker to get the head of the event that never ends.
    """
    frames = enc.start()
    if deltas or scenario.ending == "endless":
        frames += enc.text_open()
    for delta in deltas:
        frames += enc.text_delta(delta)
    if scenario.ending in CUT_ENDINGS:
        return frames
    if scenario.ending == "error":
        return frames + enc.error()
    if scenario.ending == "endless":
        return frames + enc.text_delta(_ENDLESS_MARK)
    if deltas:
        frames += enc.text_close(totals.text)
    for i, call in enumerate(scenario.tools):
        frames += enc.tool_open(i, call)
        for fragment in call.fragments:
            frames += enc.tool_delta(i, fragment)
        cut_here = scenario.ending == "cut_tool" and i == len(scenario.tools) - 1
        if not cut_here:
            frames += enc.tool_close(i, call)
    return frames + enc.finish(scenario.stop, totals)


# --- the reply plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """Everything the server writes for one request: status, headers and timed byte writes."""

    status: int
    content_type: str
    #: ``(delay_seconds_before, bytes)`` in order; delays are already scaled.
    writes: tuple[tuple[float, bytes], ...]
    #: After the writes: ``"end"`` the body, ``"stall"`` then end, or grow an ``"endless"`` event.
    tail: str = "end"
    #: ``endless`` tail: seconds between the event's growth writes.
    tail_delay: float = 0.0
    #: Close the connection after the body (the ``eof`` ending: "socket closed mid-answer").
    close_connection: bool = False
    #: A background response to keep for resuming: its id and its whole stream.
    kept: tuple[str, KeptResponse] | None = None


@dataclass(frozen=True)
class KeptResponse:
    """A background response as the resume route replays it: one framed event per sequence number."""

    #: ``events[n]`` is the bytes of the event numbered ``n``.
    events: tuple[bytes, ...]
    #: Scaled seconds between the events of a resumed stream.
    delay: float

    @functools.cached_property
    def size(self) -> int:
        """Framed bytes in all (the store's budget)."""
        return sum(map(len, self.events))


_HTML_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)


def split_points(body: bytes) -> list[int]:
    """Cut offsets for ``split`` chunking: between every CR and LF, and inside multi-byte characters.

    Every second multi-byte character is cut after its first byte, and every 4-byte character also
    after its third byte, so the client sees characters split at several positions.
    """
    cuts = {m.start() + 1 for m in re.finditer(rb"\r\n", body)}
    lead = 0
    for i, byte in enumerate(body):
        if byte >= 0xC0:  # a multi-byte character starts here
            if lead % 2 == 0:
                cuts.add(i + 1)
            if byte >= 0xF0:
                cuts.add(i + 3)
            lead += 1
    return sorted(c for c in cuts if 0 < c < len(body))


def _writes(scenario: Scenario, chunks: list[bytes], scale: float) -> tuple[tuple[float, bytes], ...]:
    """Timed writes for ``chunks`` (one framed event each) per the scenario's chunking."""
    delay = scenario.delay * scale
    if scenario.chunking == "split":
        body = b"".join(chunks)
        cuts = [0, *split_points(body), len(body)]
        chunks = [body[a:b] for a, b in itertools.pairwise(cuts)]
    elif scenario.chunking == "batch":
        chunks = [b"".join(chunks[i : i + BATCH_EVENTS]) for i in range(0, len(chunks), BATCH_EVENTS)]
    return tuple((delay if n else 0.0, chunk) for n, chunk in enumerate(chunks))


_MODEL_CHARS = re.compile(r"[^A-Za-z0-9._:/@-]")


def _is_background(enc_cls: type[RouteEncoder], body: Any) -> bool:
    """A Responses request in background mode (the response is kept for resuming)."""
    return enc_cls is OpenAIResponses and isinstance(body, dict) and body.get("background") is True


def _kept_events(enc: RouteEncoder, scenario: Scenario, frames: list[Frame], deltas: list[str], totals: Totals,
                 rng_state: tuple[Any, ...], eol: str, delay: float) -> KeptResponse:
    """What a background response's resume replays: ``frames``, or for a cut or stalled answer the whole
    answer continued by :data:`RESUMED_TAIL`, encoded again from the same random state (same ids, same
    numbers), so the cut prefix the POST delivered is exactly its head."""
    if scenario.ending in CUT_ENDINGS:
        rng = random.Random()
        rng.setstate(rng_state)
        whole = type(enc)(enc.model, rng, enc.prompt_tokens)
        whole.created, whole.refusal, whole.background = enc.created, enc.refusal, True
        more = text_deltas(scenario, RESUMED_TAIL)
        frames = answer_frames(dataclasses.replace(scenario, ending="terminal"), whole, deltas + more,
                               dataclasses.replace(totals, text=totals.text + RESUMED_TAIL))
    return KeptResponse(tuple(encode_frame(f, eol) for f in frames), delay)


def plan_reply(enc_cls: type[RouteEncoder], scenario: Scenario, body: Any, *, path_model: str | None,
               sse: bool, config: UpstreamConfig, rng: random.Random) -> Reply:
    """The full reply of route ``enc_cls`` to a request with JSON ``body`` under ``scenario``.

    A streamed background Responses request also gets :attr:`Reply.kept` (see "Resume" above).
    """
    if scenario.slug == "big" and config.big_chars is not None:
        scenario = dataclasses.replace(scenario, repeat_to_chars=config.big_chars)
    if scenario.slug == "big" and config.big_delay is not None:
        scenario = dataclasses.replace(scenario, delay=config.big_delay)
    requested = path_model or (body.get("model") if isinstance(body, dict) else None)
    model = _MODEL_CHARS.sub("", requested)[:64] if isinstance(requested, str) else ""
    prompt = enc_cls.prompt_of(body)
    text = answer_text(scenario, sanitize_prompt(prompt))
    deltas = text_deltas(scenario, text)
    options = body.get("stream_options") if isinstance(body, dict) else None
    totals = Totals(text=text, calls=list(scenario.tools), prompt_tokens=12 + _tokens(len(prompt)),
                    include_usage=isinstance(options, dict) and options.get("include_usage") is True)
    rng_state = rng.getstate()
    enc = enc_cls(model or enc_cls.default_model, rng, totals.prompt_tokens)
    enc.refusal = scenario.stop == "refusal"
    enc.background = _is_background(enc_cls, body)

    if scenario.ending == "http_502_html":
        return Reply(502, "text/html", ((0.0, _HTML_502.encode()),))
    if scenario.ending == "json_200" or not sse:
        payload = json.dumps(enc.json_body(scenario.stop, totals), ensure_ascii=False, indent=2)
        return Reply(200, "application/json", ((0.0, payload.encode()),))

    eol = "\r\n" if scenario.chunking == "split" else enc.eol
    frames = answer_frames(scenario, enc, deltas, totals)
    chunks = [encode_frame(f, eol) for f in frames]
    tail = scenario.ending if scenario.ending in ("stall", "endless") else "end"
    kept = None
    if isinstance(enc, OpenAIResponses) and enc.background and tail != "endless":
        kept = (enc.id, _kept_events(enc, scenario, frames, deltas, totals, rng_state, eol,
                                     scenario.delay * config.time_scale))
    if tail == "endless":
        cut = chunks[-1].index(_ENDLESS_MARK_JSON.encode())
        chunks[-1] = chunks[-1][:cut]  # the head of the event that never ends
    return Reply(200, enc.stream_content_type, _writes(scenario, chunks, config.time_scale), tail=tail,
                 tail_delay=scenario.delay * config.time_scale, close_connection=scenario.ending == "eof",
                 kept=kept)


# --- stats ----------------------------------------------------------------------------------------


class StreamStats:
    """Per-key counters of streams ``started``, ``finished`` and ``disconnected``. No content."""

    EVENTS = ("started", "finished", "disconnected")

    def __init__(self, keys: list[str]) -> None:
        self._counts: dict[str, dict[str, int]] = {k: dict.fromkeys(self.EVENTS, 0) for k in keys}

    def record(self, key: str, event: str) -> None:
        self._counts.setdefault(key, dict.fromkeys(self.EVENTS, 0))[event] += 1

    def snapshot(self) -> dict[str, object]:
        counts = {k: dict(v) for k, v in self._counts.items()}
        active = sum(v["started"] - v["finished"] - v["disconnected"] for v in counts.values())
        return {"streams": counts, "active": active}


async def play(request: web.Request, reply: Reply, stats: StreamStats, key: str, config: UpstreamConfig,
               *, describe: str) -> web.StreamResponse:
    """Write ``reply`` to the client and record the stream's fate in ``stats`` under ``key``."""
    resp = web.StreamResponse(status=reply.status, headers={
        "Content-Type": reply.content_type, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    if reply.close_connection:
        resp.force_close()
    stats.record(key, "started")
    sent = 0
    try:
        await resp.prepare(request)
        for delay, data in reply.writes:
            if delay:
                await asyncio.sleep(delay)
            await resp.write(data)
            sent += len(data)
        if reply.tail == "stall":
            await _stall(request, config.stall_seconds)
        elif reply.tail == "endless":
            sent += await _grow_endless(resp, reply.tail_delay, config.endless_cap_bytes)
        await resp.write_eof()
    except (ConnectionError, asyncio.CancelledError):
        stats.record(key, "disconnected")
        log.info("%s: client disconnected after %d bytes", describe, sent)
        raise
    stats.record(key, "finished")
    log.info("%s: finished, status %d, %d bytes", describe, reply.status, sent)
    return resp


async def _stall(request: web.Request, seconds: float) -> None:
    """Stay silent for ``seconds``; raise ``ConnectionResetError`` as soon as the client is gone."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        transport = request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("client went away during the stall")
        await asyncio.sleep(min(STALL_POLL_SECONDS, left))


_FILLER = ("and it goes on, and on, without ever closing the event; " * 2048).encode()[:ENDLESS_WRITE_BYTES]


async def _grow_endless(resp: web.StreamResponse, delay: float, cap: int) -> int:
    """Append to the open data line until the client disconnects or ``cap`` bytes were sent."""
    sent = 0
    while sent < cap:
        await asyncio.sleep(delay)
        await resp.write(_FILLER)
        sent += len(_FILLER)
    return sent


# --- the aiohttp side -----------------------------------------------------------------------------


class ResumeStore:
    """The background responses kept for resuming, newest last (bounded: see the module docstring)."""

    def __init__(self, max_entries: int = RESUME_STORE_ENTRIES, max_bytes: int = RESUME_STORE_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._kept: OrderedDict[str, KeptResponse] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def put(self, response_id: str, kept: KeptResponse) -> None:
        """Keep ``kept`` under ``response_id``, dropping the oldest until both bounds hold (one too big: not kept)."""
        old = self._kept.pop(response_id, None)
        if old is not None:
            self._bytes -= old.size
        if kept.size > self.max_bytes:
            return
        self._kept[response_id] = kept
        self._bytes += kept.size
        while len(self._kept) > self.max_entries or self._bytes > self.max_bytes:
            self._bytes -= self._kept.popitem(last=False)[1].size

    def get(self, response_id: str) -> KeptResponse | None:
        return self._kept.get(response_id)


def _error_reply(status: int, code: str, message: str) -> web.Response:
    """A JSON error in the OpenAI shape (the message never echoes the request)."""
    return web.json_response({"error": {"message": message, "type": "invalid_request_error", "code": code}},
                             status=status)


#: The resume route's path (aiohttp pattern); ids outside the pattern never match it.
RESUME_PATH = "/v1/responses/{response_id:[A-Za-z0-9_-]{1,256}}"


class EmbeddedUpstream:
    """The four routes and the Responses resume route; one instance per app."""

    def __init__(self, config: UpstreamConfig | None = None, stats: StreamStats | None = None) -> None:
        self.config = config or UpstreamConfig()
        self.stats = stats or StreamStats([s.slug for s in SCENARIOS])
        self.rng = random.Random()
        self.kept = ResumeStore()

    async def handle(self, enc_cls: type[RouteEncoder], request: web.Request) -> web.StreamResponse:
        slug = request.headers.get(SCENARIO_HEADER, DEFAULT_SCENARIO).strip()
        scenario = BY_SLUG.get(slug)
        if scenario is None:
            return _error_reply(400, "unknown_scenario", "unknown demo scenario (see /demo/config.json)")
        try:
            body = json.loads(await request.read() or b"{}")
        except ValueError:
            body = {}
        sse = enc_cls is not Gemini or request.query.get("alt") == "sse"
        reply = plan_reply(enc_cls, scenario, body, path_model=request.match_info.get("model"), sse=sse,
                           config=self.config, rng=self.rng)
        if reply.kept is not None:
            self.kept.put(*reply.kept)
        return await play(request, reply, self.stats, scenario.slug, self.config,
                          describe=f"{enc_cls.route}/{scenario.slug}")

    async def resume(self, request: web.Request) -> web.StreamResponse:
        """``GET /v1/responses/{id}?stream=true[&starting_after=N]``: a kept response's events after ``N``."""
        kept = self.kept.get(request.match_info.get("response_id", ""))
        if kept is None:
            return _error_reply(404, "not_found", "no background response with this id (the demo keeps the "
                                                  "most recent ones only)")
        if request.query.get("stream") != "true":
            return _error_reply(400, "stream_required", "the demo serves background responses as streams only "
                                                        "(stream=true)")
        after = request.query.get("starting_after")
        if after is not None and not _SEQUENCE_NUMBER.fullmatch(after):
            return _error_reply(400, "invalid_starting_after", "starting_after must be a sequence number")
        events = kept.events[int(after) + 1 if after is not None else 0:]
        reply = Reply(200, OpenAIResponses.stream_content_type,
                      tuple((kept.delay if n else 0.0, event) for n, event in enumerate(events)))
        return await play(request, reply, self.stats, "resume", self.config, describe="openai-responses/resume")


def demo_config_document(mode: str) -> dict[str, object]:
    """``GET /demo/config.json``: the mode, the routes and the scenario picker's entries."""
    return {
        "mode": mode,
        "scenario_header": SCENARIO_HEADER,
        "routes": [{"route": enc.route, "path": path.replace("{model:[^/:]+}", "{model}"),
                    "default_model": enc.default_model} for path, enc in ROUTES],
        "scenarios": [{"slug": s.slug, "title": s.title, "expected": s.expected,
                       "expected_by_route": {enc.route: s.expected_for(enc.route) for _, enc in ROUTES},
                       "resumable": s.ending in CUT_ENDINGS} for s in SCENARIOS],
    }


def tools_document() -> dict[str, dict[str, object]]:
    """``GET /demo/tools.json``: tool name -> JSON Schema of its arguments."""
    return TOOLS
