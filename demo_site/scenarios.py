"""The demo upstream's scenarios, as one table of data, plus the route-neutral answer they describe.

A scenario says *what* the fake model answers and *how the transport misbehaves*; it says nothing
about any route's wire format. :mod:`demo_site.upstream` turns the neutral answer built here into
each route's events (OpenAI Chat, OpenAI Responses, Anthropic Messages, Gemini) and writes them.

Vocabulary of the table (every field is plain data):

``text``
    The answer, with ``{prompt}`` standing for a sanitized short prefix of the user's prompt.
``tools``
    Tool calls after the text, each streamed as the given argument fragments.
``stop``
    Why the model stopped, route-neutral: ``"stop"`` (end of turn), ``"tool"`` (wants tools),
    ``"length"`` (output token limit) or ``"refusal"`` (the model declined: the text goes out on the
    route's refusal channel, Chat ``delta.refusal`` and Responses ``refusal`` parts; Anthropic sends
    it as text with ``stop_reason: "refusal"``; Gemini, which has no refusal channel, as text with
    ``finishReason: "SAFETY"``, its filter stop). Each route spells it its own way.
``ending``
    How the response ends:

    * ``"terminal"``: the route's terminal event(s), then a clean end of the body;
    * ``"eof"``: the body ends (connection closed) in the middle of the answer, before any
      terminal event;
    * ``"cut_tool"``: the output token limit hits inside the last tool call's JSON: its block is
      never closed, the stop reason is the route's length stop, then the terminal event (Gemini
      streams that call with ``partialArgs`` and never sends its closing part);
    * ``"error"``: after part of the answer, the route's mid-stream provider error;
    * ``"stall"``: headers and part of the answer, then silence until the client gives up or the
      stall period ends (then the body ends without a terminal event);
    * ``"endless"``: part of the answer, then one ``data:`` line that keeps growing and never ends,
      until the client disconnects or a safety cap is reached;
    * ``"http_502_html"``: HTTP 502 with an HTML error page (a gateway in front of the API);
    * ``"json_200"``: HTTP 200 with the route's *non-streaming* JSON body.
``chunking``
    How the body is cut into transport writes: ``"event"`` (one write per SSE event),
    ``"split"`` (CRLF line endings, and writes cut inside multi-byte characters and between the
    CR and LF of line terminators) or ``"batch"`` (many events per write, for the big answer).
``delay``
    Seconds between writes, before the server's time scale is applied.
``expected``
    The outcome the webclient library must report for this scenario (documentation for the page and
    the tests; the tests state their expectations independently).

A scenario built with a word outside this vocabulary (a stop, ending, chunking or outcome), or without a
title, raises ``ValueError``, and so does a table with a slug or a title twice: the upstream would otherwise
play an unknown ending as ``"terminal"``, and the picker would show an empty or ambiguous choice.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal, get_args

Stop = Literal["stop", "tool", "length", "refusal"]
Ending = Literal["terminal", "eof", "cut_tool", "error", "stall", "endless", "http_502_html", "json_200"]
Chunking = Literal["event", "split", "batch"]
#: The outcomes webclient reports (its ``Outcome`` values; the tests check that the two agree).
Expected = Literal["complete", "truncated", "protocol_error", "decode_error", "payload_error", "buffer_limit",
                   "upstream_error", "timeout", "cancelled"]

#: The tools the demo's model "knows". Served at ``GET /demo/tools.json`` as a mapping of tool name
#: to the JSON Schema of its arguments (the shape ``StreamSession(tools=...)`` and
#: ``python -m webclient replay --tools`` take). Only simple, widely supported keywords are used.
TOOLS: dict[str, dict[str, object]] = {
    "get_weather": {
        "type": "object",
        "description": "Current weather for a place.",
        "properties": {
            "location": {"type": "string", "description": "City and country, e.g. 'Paris, France'."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["location"],
        "additionalProperties": False,
    },
    "get_local_time": {
        "type": "object",
        "description": "Current local time in an IANA time zone.",
        "properties": {"timezone": {"type": "string", "description": "IANA zone, e.g. 'Europe/Paris'."}},
        "required": ["timezone"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call: the tool's name and its argument text as the model streams it.

    ``fragments`` joined is the raw argument text. Routes that stream arguments (Chat, Responses,
    Anthropic) send the fragments as they are. Gemini sends a whole ``functionCall`` with an
    ``args`` *object*, so it sends ``whole_args`` when given, else the fragments parsed; a call whose
    text is not JSON is expressed for Gemini by ``whole_args`` breaking the tool's schema instead. A
    call with ``partial_args`` is streamed by Gemini path by path instead (the only way a call can be
    cut by the token limit there).
    """

    name: str
    fragments: tuple[str, ...]
    whole_args: dict[str, object] | None = None
    #: How a route that streams arguments by JSON path (Gemini 3's ``streamFunctionCallArguments``:
    #: ``functionCall.partialArgs``) sends this call: ``(jsonPath, string fragment)`` pairs. Empty: such a
    #: route sends the call whole.
    partial_args: tuple[tuple[str, str], ...] = ()

    @property
    def arguments(self) -> str:
        """The complete argument text."""
        return "".join(self.fragments)

    @property
    def is_whole(self) -> bool:
        """Whether a whole-call answer (Gemini's JSON array, a whole message) can hold this call: its ``whole_args``
        are given or its argument text is a JSON object. A call a scenario cuts by the token limit
        (``max_tokens_in_tool``) is not: such an answer leaves it out, as the model never finished it."""
        if self.whole_args is not None:
            return True
        try:
            return isinstance(json.loads(self.arguments), dict)
        except ValueError:
            return False

    def whole_arguments(self) -> dict[str, object]:
        """The ``args`` object a whole-call route (Gemini) sends for this call (see :attr:`is_whole`)."""
        if self.whole_args is not None:
            return self.whole_args
        value = json.loads(self.arguments)
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


@dataclass(frozen=True)
class Scenario:
    """One row of :data:`SCENARIOS` (see the module docstring for the vocabulary)."""

    slug: str
    title: str
    expected: Expected
    text: str
    tools: tuple[ToolCallSpec, ...] = ()
    stop: Stop = "stop"
    ending: Ending = "terminal"
    chunking: Chunking = "event"
    delay: float = 0.04
    #: Size in characters the answer is grown to by repeating ``text`` (0: use ``text`` once).
    repeat_to_chars: int = 0
    #: Characters per text delta (0: split on words, one to three words per delta).
    delta_chars: int = 0
    #: Routes on which the scenario ends otherwise than :attr:`expected`: ``(route, outcome)`` pairs.
    expected_on: tuple[tuple[str, Expected], ...] = ()

    def __post_init__(self) -> None:
        # The table is data that nothing else checks: a misspelt word would otherwise fall through to a default
        # branch of the upstream (an unknown ending plays as "terminal") or show an empty option in the picker.
        fields = {"stop": (self.stop, Stop), "ending": (self.ending, Ending), "chunking": (self.chunking, Chunking),
                  "expected": (self.expected, Expected)}
        fields.update({f"expected_on[{route}]": (outcome, Expected) for route, outcome in self.expected_on})
        for name, (value, vocabulary) in fields.items():
            if value not in get_args(vocabulary):
                raise ValueError(f"scenario {self.slug!r}: {name} {value!r} is not one of {get_args(vocabulary)}")
        if not self.slug or not self.title.strip():
            raise ValueError("a scenario needs a slug and a title (the picker shows the title)")

    def expected_for(self, route: str) -> str:
        """The outcome this scenario ends in on ``route``."""
        return dict(self.expected_on).get(route, self.expected)


_WEATHER_PARIS = ToolCallSpec(
    "get_weather", ('{"loca', 'tion": "Pa', 'ris, France"', ', "unit": "cel', 'sius"}')
)
_TIME_PARIS = ToolCallSpec("get_local_time", ('{"time', 'zone": "Europe/', 'Paris"}'))

_MARKUP = (
    'Markup in model output must stay text: <img src=x onerror=alert(1)> '
    '<script>alert("xss")</script> <b>not bold</b> <a href="javascript:alert(3)">not a link</a> '
    "&lt;escaped&gt; &amp; </textarea><iframe src=//example.invalid></iframe> "
    "You wrote: “{prompt}”."
)

_MULTIBYTE = (
    "Échos de « {prompt} » — Grüße aus Zürich, naïve café, crème brûlée. "
    "東京の天気は晴れです。☀️ Ελληνικά, עברית, हिन्दी, 한국어. "
    "Emoji: 👩🏽‍💻🚀🎉🇫🇷 and math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑√∞ ✓."  # noqa: RUF001 (deliberately non-ASCII)
)

_BIG_PARAGRAPH = (
    "Paragraph about “{prompt}”: a long answer streams as thousands of small deltas, and the page must "
    "append each one without re-rendering what is already on screen. Numbers, commas, quotes \"like "
    "these\" and a few accents (é, ü, ñ) keep the encoder honest. "
)

#: The scenario table. Order is the order of the page's picker.
SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "plain", "Plain answer", "complete",
        "You asked: “{prompt}”. Here is a plain streamed answer. Each piece arrives as its own "
        "server-sent event and stays provisional until the stream completes.",
    ),
    Scenario(
        "tool", "One tool call", "complete",
        "You asked: “{prompt}”. Let me look up the weather for you.", tools=(_WEATHER_PARIS,), stop="tool",
    ),
    Scenario(
        "parallel_tools", "Parallel tool calls", "complete",
        "About “{prompt}”: I'll check the weather and the local time at once.",
        tools=(_WEATHER_PARIS, _TIME_PARIS), stop="tool",
    ),
    Scenario(
        "multibyte", "Multibyte text, split characters and CRLF", "complete",
        _MULTIBYTE, chunking="split", delay=0.01, delta_chars=7,
    ),
    Scenario(
        "slow_drip", "Slow drip", "complete",
        "Thinking slowly about “{prompt}”… one word at a time, so you can watch the provisional text grow.",
        delay=0.35,
    ),
    Scenario(
        "truncated", "Truncated mid-answer (connection closed)", "truncated",
        "Here is an answer to “{prompt}” that will be cut off in the middle of a sen",
        ending="eof",
    ),
    Scenario(
        "max_tokens_in_tool", "max_tokens inside tool JSON", "truncated",
        "Checking the forecast.",
        tools=(ToolCallSpec("get_weather", ('{"loca', 'tion": "San Fr'),
                            partial_args=(("$.location", "San"), ("$.location", " Fr"))),),
        stop="length", ending="cut_tool",
    ),
    Scenario(
        "invalid_tool_json", "Invalid tool JSON", "payload_error",
        "Checking the weather.",
        tools=(ToolCallSpec(
            "get_weather", ('{"location": "Pa', 'ris", "unit": ', "celsius}"),
            whole_args={"location": "Paris", "unit": "kelvin"},
        ),),
        stop="tool",
    ),
    Scenario(
        "upstream_error", "Mid-stream provider error", "upstream_error",
        "Starting an answer to “{prompt}”, but the provider",
        ending="error",
    ),
    Scenario("http_502_html", "HTTP 502 with an HTML body", "protocol_error", "", ending="http_502_html"),
    Scenario(
        "json_200", "200 with application/json", "protocol_error",
        "A complete answer to “{prompt}”, delivered as one JSON document instead of a stream.",
        ending="json_200",
    ),
    Scenario(
        "endless_event", "An event that never ends (buffer ceiling)", "buffer_limit",
        "This answer begins normally, and then one event never ends:",
        ending="endless",
    ),
    Scenario(
        "stall", "Stall (idle timeout)", "timeout",
        "The first words arrive, and then",
        ending="stall",
    ),
    Scenario("markup", "HTML/script markup in the output", "complete", _MARKUP),
    Scenario(
        "refusal", "Refusal", "complete",
        "I can't help with “{prompt}”: that request is outside what I'm allowed to do.", stop="refusal",
        expected_on=(("gemini", "truncated"),),  # (SAFETY, Gemini's filter stop: a cut answer, stage stop_reason)
    ),
    Scenario(
        "big", "Big answer (~1 MB)", "complete",
        _BIG_PARAGRAPH, chunking="batch", delay=0.002, repeat_to_chars=1_000_000, delta_chars=240,
    ),
)


def check_unique(scenarios: tuple[Scenario, ...]) -> None:
    """Raise ``ValueError`` unless slugs and titles are unique (requests name a slug; the picker shows titles)."""
    if len({s.slug for s in scenarios}) != len(scenarios) or len({s.title for s in scenarios}) != len(scenarios):
        raise ValueError("scenario slugs and titles must be unique (the picker tells them apart by title)")


check_unique(SCENARIOS)
BY_SLUG: dict[str, Scenario] = {s.slug: s for s in SCENARIOS}
DEFAULT_SCENARIO = "plain"

# --- prompt handling ---------------------------------------------------------------------------

#: Characters of the user's prompt echoed back in answers.
PROMPT_ECHO_CHARS = 40
_SPACES = re.compile(r"\s+")


def sanitize_prompt(prompt: str) -> str:
    """A short, single-line, printable prefix of ``prompt`` for echoing in answers.

    Control and format characters are dropped, whitespace runs become one space, and the result is
    cut to :data:`PROMPT_ECHO_CHARS` characters (with an ellipsis). An empty prompt becomes
    ``"(empty prompt)"``.
    """
    kept = "".join(" " if ch.isspace() else ch for ch in prompt if unicodedata.category(ch)[0] != "C"
                   or ch.isspace())
    text = _SPACES.sub(" ", kept).strip()
    if len(text) > PROMPT_ECHO_CHARS:
        text = text[: PROMPT_ECHO_CHARS - 1].rstrip() + "…"
    return text or "(empty prompt)"


# --- the route-neutral answer --------------------------------------------------------------------

_WORDS = re.compile(r"\s*\S+")


def answer_text(scenario: Scenario, prompt: str) -> str:
    """The full answer text of ``scenario`` for ``prompt`` (already sanitized)."""
    text = scenario.text.replace("{prompt}", prompt)
    if scenario.repeat_to_chars and text:
        parts, size, n = [], 0, 1
        while size < scenario.repeat_to_chars:
            piece = f"[{n}] {text}"
            parts.append(piece)
            size += len(piece)
            n += 1
        text = "".join(parts)
    return text


def text_deltas(scenario: Scenario, text: str) -> list[str]:
    """Cut ``text`` into the deltas the fake model streams (deterministic).

    With ``delta_chars`` the text is cut every that many characters; otherwise on words, grouping
    one, two or three words per delta in a fixed rotation so deltas vary in size like tokens do.
    """
    if not text:
        return []
    if scenario.delta_chars:
        n = scenario.delta_chars
        return [text[i : i + n] for i in range(0, len(text), n)]
    words = _WORDS.findall(text)
    tail = text[sum(len(w) for w in words):]
    deltas, i, turn = [], 0, 0
    while i < len(words):
        take = (1, 2, 1, 3)[turn % 4]
        deltas.append("".join(words[i : i + take]))
        i += take
        turn += 1
    if tail:
        deltas[-1] += tail
    return deltas
