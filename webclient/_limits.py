"""Every buffer webclient keeps has a ceiling. This module names them, with the reasons.

All ceilings count *characters* (code points of decoded text), never bytes, so the trip point is a
property of the text and does not depend on how the bytes were chunked. Each is checked at a
deterministic point: the SSE ceilings on every complete line and on the pending partial line after
each ``feed``; the route ceilings when a delta is appended. A trip ends the attempt as
``buffer_limit`` with a stage naming the ceiling; events completed before the trip are still
delivered.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import UsageError

# One SSE line, complete or still pending. Bounds a peer that never sends a line terminator (the
# "slowloris line"). An LLM delta line is a few hundred characters; a whole tool call or a
# Gemini inline image part in one ``data:`` line can reach a few MiB. Precedents: h11 16 KiB
# for a header block; aiohttp 128 KiB (old) / 512 KiB (new) per line; sseclient-py's
# ``max_event_size`` 1 MiB; eventsource-parser and the official SDKs: unbounded.
DEFAULT_MAX_LINE_CHARS = 4 * 1024 * 1024

# The data buffer of one event that has not been dispatched yet (the joined ``data:`` lines).
# Bounds a peer that sends data lines forever without the blank line that dispatches them.
# Twice the line ceiling so a legitimate event of one maximal line plus a few more still fits.
# Precedents: undici ``maxEventSize`` (data bytes only), eventsource-parser ``maxBufferSize``.
DEFAULT_MAX_EVENT_CHARS = 8 * 1024 * 1024

# Accumulated text of one choice / content block / output item. Bounds a stream that never stops
# sending deltas. 16 Mi characters is far above any model's output limit (the largest documented
# max output is ~128k tokens, roughly 0.5 Mi characters) while staying a bounded memory cost.
DEFAULT_MAX_TEXT_CHARS = 16 * 1024 * 1024

# Accumulated input (JSON text) of one tool call. Tool arguments are small structured objects;
# 1 Mi characters leaves room for a tool that takes a document while bounding a runaway call.
DEFAULT_MAX_TOOL_INPUT_CHARS = 1024 * 1024

# Tool calls in one response. Parallel tool calling yields a handful; 128 matches OpenAI's
# documented maximum number of tools per request.
DEFAULT_MAX_TOOL_CALLS = 128

# Choices, content blocks or output items in one response (keys of the accumulators). Bounds a
# stream that invents a new index per delta.
DEFAULT_MAX_BLOCKS = 1024

# Provider objects kept verbatim for the caller and the next turn: Responses output items, Anthropic
# tool-result / opaque blocks, Gemini non-text parts and grounding metadata, citations, Chat logprobs.
# Each SSE event whose content is kept is charged once, by the length of its data (an upper bound of
# what it can add, and the same for every chunking). The largest legitimate contributors are
# generated images (a 1536x1024 PNG is ~3 MB of base64 in an ``image_generation_call`` or an
# ``inlineData`` part) and a Responses ``message`` item repeating its text (bounded by the text
# ceiling); 32 Mi characters leaves room for several images while bounding a stream that invents
# items forever. Precedent: the official SDKs keep whole snapshots with no bound at all.
DEFAULT_MAX_ITEM_CHARS = 32 * 1024 * 1024

# Opaque reasoning signatures kept for the next turn, in total: Anthropic ``signature`` (a few
# hundred to a few thousand characters per thinking block) and ``redacted_thinking`` data, Gemini
# ``thoughtSignature`` (one per signed part). 4 Mi characters is three orders of magnitude above a
# long agentic turn while bounding a stream that signs every fragment.
DEFAULT_MAX_SIGNATURE_CHARS = 4 * 1024 * 1024

# Citations / annotations in one response (Anthropic ``citations_delta``, Responses
# ``output_text.annotation.added``, Gemini ``citationSources``, Chat ``annotations``). A web-search
# answer cites tens of sources; 4096 bounds a stream that cites forever (their characters count
# against the item ceiling too).
DEFAULT_MAX_CITATIONS = 4096

# Digits in a ``retry`` value before ``int()`` is attempted. CPython refuses ``int()`` on more
# than 4300 digits; 16 digits is already beyond any useful reconnection time in milliseconds.
MAX_RETRY_DIGITS = 16

# Nesting depth of any JSON webclient parses (envelopes, tool inputs). Real LLM envelopes nest
# about 6 levels (chunk -> choices -> delta -> tool_calls -> function) and tool arguments rarely
# beyond 10 (OpenAI strict mode allows 10 levels of objects). 512 is far above both and far below
# the ~4000 levels Pyodide's WebAssembly stack survives in ``json.loads`` (8000 kill the runtime;
# measured with Pyodide 314.0.7). See ``webclient/_json.py``.
MAX_JSON_DEPTH = 512


@dataclass(frozen=True, slots=True)
class Limits:
    """The ceilings of one attempt. Every field must be a positive integer."""

    #: Characters in one SSE line, excluding its terminator (stage ``"line"``).
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS
    #: Characters in the data buffer of one pending event (stage ``"event"``).
    max_event_chars: int = DEFAULT_MAX_EVENT_CHARS
    #: Characters of accumulated text per choice/block/item (stage ``"text"``).
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    #: Characters of accumulated tool input per call (stage ``"tool_input"``).
    max_tool_input_chars: int = DEFAULT_MAX_TOOL_INPUT_CHARS
    #: Tool calls per response (stage ``"tool_calls"``).
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    #: Choices/blocks/items per response (stage ``"blocks"``).
    max_blocks: int = DEFAULT_MAX_BLOCKS
    #: Characters of provider objects kept verbatim per response (stage ``"items"``).
    max_item_chars: int = DEFAULT_MAX_ITEM_CHARS
    #: Characters of opaque reasoning signatures kept per response (stage ``"signatures"``).
    max_signature_chars: int = DEFAULT_MAX_SIGNATURE_CHARS
    #: Citations / annotations per response (stage ``"citations"``).
    max_citations: int = DEFAULT_MAX_CITATIONS

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"limit {name} must be a positive integer")


DEFAULT_LIMITS = Limits()
