"""Every buffer webclient keeps has a ceiling. This module names them, with the reasons.

All ceilings count *characters* (code points of decoded text), never bytes, so the trip point is a
property of the text and does not depend on how the bytes were chunked. Each is checked at a
deterministic point: the SSE ceilings on every complete line and on the pending partial line after
each ``feed``; the route ceilings when a delta is appended. A trip ends the attempt as
``buffer_limit`` with a stage naming the ceiling; events completed before the trip are still
delivered.

Two kinds of route ceiling: one per structure (a text channel, a tool input, the count of calls,
blocks, citations ...) and one over everything a session retains (``max_retained_chars``, stage
``retained``). Every structure a route keeps is charged to the second as it grows, in O(1) per
fragment or entry (see ``RouteAccumulator`` in ``_routes/_base.py`` for what is charged how), so
no combination of structures can grow past it.
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

# Everything one session retains, in total (stage ``retained``): every text channel of every
# choice / block / item, every tool input (client calls, server tools, Gemini streamed-argument
# paths) and its parsed arguments, provider objects kept verbatim (items, citations, logprobs, usage
# and metadata), signatures, ids, stop reasons, BLOCK_CHARS for every choice, block and item and
# ENTRY_CHARS for every other per-index entry (calls, call-index aliases, argument paths, message
# parts). A resumed session continues its predecessor's count. The SSE line and event buffers are
# not in it: they have their own ceilings above, and what they hold depends on the chunking, which a
# trip point must not.
#
# The number comes from Pyodide's real memory, measured with ``build_scripts/bench_memory.py`` (npm
# pyodide 314.0.7 / Python 3.14.2; Node 20.20.2 and Debian Chromium 156 on a 24 GB machine):
#
# * The wasm32 heap stops at 4 GiB - 64 KiB (``HEAPU8.length`` 4294901760 after ``MemoryError``) in
#   Node, in a Chromium page and in a Chromium worker alike, and never shrinks. Python strings of
#   1 MiB held until ``MemoryError``: 4071 Mi ASCII characters (also in Chromium page and worker),
#   2035 Mi BMP characters (2 bytes each), 1017 Mi astral characters (4 bytes each); as 16-character
#   fragments only 1253 Mi characters (52 bytes a fragment: header and list slot outweigh the text).
#   A phone or a small laptop gives a tab less than that.
# * A session holds text as the fragments the deltas brought until the result joins them. Traced
#   bytes per retained character of a Chat answer (ceilings lifted): while streaming 7.3 (ASCII in
#   4-character deltas), 19 (CJK, 2-character deltas), 40 (emoji, 1-character deltas), 1.4
#   (64-character deltas); at the peak through ``finish()`` and ``to_dict()`` 9.3 / 23 / 48 / 2.5.
# * The browser bridge then serializes the result (``json.dumps``, ASCII-escaped; the text appears
#   four times: text, choice 0, and both assistant messages): 4 JSON characters per retained ASCII
#   character, 24 per CJK and 48 per emoji character; peak 9.3 / 38 / 76 / 7.0 bytes per retained
#   character. The longest string V8 accepts is 2**29 - 24 = 536870888 characters (Node and Chromium).
#
# 16 Mi characters keeps one session's worst measured case (one emoji per delta, result serialized
# for the page: 76 bytes a character) at 1.2 GiB, under a third of the heap, with room for the
# runtime and another session; an ordinary answer (ASCII tokens, 9.3 bytes a character) stays near
# 150 MB. The page's JSON of a full ASCII or CJK answer (64 Mi / 384 Mi characters) fits in one V8
# string; an all-emoji one (768 Mi) would not, which the bridge, not this ceiling, has to solve
# (unescaped JSON, the text once). 16 Mi is 32 times the largest documented model output (~0.5 Mi
# characters) and leaves room for a few generated images (a 1536x1024 PNG is ~3 MB of base64). The
# issue's 200 choices x 1 MB trip it at the sixteenth choice.
DEFAULT_MAX_RETAINED_CHARS = 16 * 1024 * 1024

# What one per-index entry costs against the retained ceiling besides its characters: a dict slot
# and the small object behind it. Measured in Pyodide (traced bytes per entry, 20000 of each): a
# Chat call-index alias 32, a Gemini argument path with an empty value 70, a Gemini message part 60,
# a Chat tool call 177 (charged 200: the call, its id entry and its index entry). Measured with
# tracemalloc in Pyodide under Node; a text fragment's own overhead is in the rationale above.
ENTRY_CHARS = 64

# What a new choice, content block or output item costs: the object with its text buffers and
# per-choice tables (a Chat choice measured 460 bytes the same way).
BLOCK_CHARS = 512

# Provider objects stored from events larger than this are measured (their JSON length, once,
# when stored); smaller events charge their own data length, an upper bound, in O(1).
MEASURE_ABOVE_CHARS = 4096

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
    #: Characters (plus :data:`BLOCK_CHARS` / :data:`ENTRY_CHARS` per entry) of everything a
    #: session retains (stage ``"retained"``).
    max_retained_chars: int = DEFAULT_MAX_RETAINED_CHARS

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"limit {name} must be a positive integer")


DEFAULT_LIMITS = Limits()
