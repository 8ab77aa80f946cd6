"""OpenAI Chat Completions (``POST /v1/chat/completions``, ``stream: true``).

Wire facts (``route-contracts.md`` §1):

* data-only events, each a ``chat.completion.chunk`` with ``choices[]``; the stream ends with
  ``data: [DONE]`` and then EOF. Some providers send ``event: error`` (Groq) or put an
  ``error`` object in a chunk (OpenRouter): both are ``upstream_error``.
* choices interleave by ``choices[].index`` (``n > 1``); choice 0's text is the result's text.
* a choice ends with a non-empty ``finish_reason`` (Ollama's ``""`` means "not yet"). Later chunks
  for a finished choice may only be empty (OpenRouter repeats the finish chunk); content
  for it is ``protocol_error`` ``closed_block``.
* tool calls are keyed by ``tool_calls[].index`` **in a dict** (the first index may be 1), falling
  back to ``id``: a fragment with an id but no index starts a new call (or continues the call
  with that id); a fragment with neither continues the latest call of the choice; a fragment
  whose index is known but whose non-empty id differs starts a new call. The legacy
  ``delta.function_call`` is one call per choice. A call's name may come late (it is taken once)
  or again; a fragment naming another tool is ``item_mismatch``, and a call that never gets a name
  is never valid (``tool_unknown``).
* ``tool_calls[].type`` is ``"function"`` (or absent) or ``"custom"`` (a free-text
  ``custom: {name, input}`` call, kind ``custom``); any other type is ``unknown_type``.
* tool calls close when their choice's ``finish_reason`` arrives. If that stop reason commits
  they are parsed and validated there and then; if not (``length``) they stay ``closed`` and the
  attempt ends with the stop reason's outcome at ``[DONE]``.
* a finished choice that gets a *different* finish reason that does not commit takes it (a
  ``stop`` re-finished with ``content_filter`` is filtered); other repeats are ignored.
* ``delta.executed_tools`` (Groq's compound models: tools the server ran, such as a web search) are kept in the
  choice's ``items``, one ``{"executed_tools": [tool]}`` per ``index``, each later entry's fields replacing the
  earlier ones' (the output arrives in a second entry). Never calls to run; after the choice's ``finish_reason``
  they are not read.
* ``delta.annotations`` (OpenRouter, web search) are citations; ``choices[].logprobs`` content
  and refusal entries are kept per choice (item ceiling). Audio (``delta.audio``) and generated
  images (``delta.images``) are content this route does not accumulate: ``unknown_type``, unless
  unknown items are kept (:data:`UNREAD_CONTENT`).
* terminal: ``[DONE]`` after every choice seen has a ``finish_reason``; ``[DONE]`` without one is
  ``truncated`` (``missing_stop``). A usage-only chunk (``choices: []``) and Azure's leading
  ``prompt_filter_results`` chunk carry no choices and are fine anywhere before ``[DONE]``.
* ``delta.content`` may be a list of content chunks (Mistral's reasoning models, :data:`CONTENT_CHUNKS`):
  ``text`` chunks join the text and ``thinking`` chunks' text parts the reasoning; another chunk type is
  ``unknown_type`` (kept verbatim with ``keep_unknown_items``), a malformed chunk ``envelope``.
* OpenRouter's ``delta.reasoning_details`` (:data:`DETAIL_FIELDS`): the entries of one type and
  ``index`` are one entry, its text (``text``, ``summary`` or encrypted ``data``) joined from their
  fragments (text ceiling, ``retained``, surrogate pairs as for text), its ``id`` and ``format`` the
  latest non-empty ones, its ``signature`` through the signature ceiling. They are sent back, never
  shown (the reasoning text also arrives as ``reasoning``). An entry type outside the three is
  ``unknown_type`` (kept verbatim in ``items`` with ``keep_unknown_items``); a malformed entry is
  ``envelope``; after the choice's ``finish_reason`` one is ``closed_block``.
* assistant message: ``{"role": "assistant", "content", "refusal"?, "tool_calls"? |
  "function_call"?, "reasoning_content"?, "reasoning_details"?}`` (``reasoning_content`` with the
  session's ``include_reasoning_content``, for servers such as DeepSeek that want it back with tool
  calls; ``reasoning_details``, in ``index`` order, whenever the stream carried them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._limits import ENTRY_CHARS
from .._outcome import Outcome
from .._toolcalls import ToolCallBuffer
from .._updates import JSON, ToolCall
from ._base import ChoiceState, RouteAccumulator, RouteContract, TextBuffer, stop_table

#: ``finish_reason`` by category: OpenAI Chat and the OpenAI-compatible servers and gateways.
#:
#: * OpenAI (and Azure OpenAI, which sends ``content_filter`` when its filter withholds output):
#:   openai-python 3.57.0 ``src/openai/types/chat/chat_completion_chunk.py`` ``Choice.finish_reason``
#:   = ``stop | length | tool_calls | content_filter | function_call``.
#: * DeepSeek (https://api-docs.deepseek.com/api/create-chat-completion): the same plus
#:   ``insufficient_system_resource`` ("interrupted due to insufficient resource of the inference
#:   system": a provider failure).
#: * Mistral (Mistral OpenAPI ``CompletionResponseStreamChoice.finish_reason``): ``stop | length |
#:   model_length | error | tool_calls``; ``model_length`` is the model's context length.
#: * OpenRouter (https://openrouter.ai/docs/api-reference/overview, "normalized" finish reasons):
#:   ``tool_calls | stop | length | content_filter | error`` (+ ``function_call`` in its SDK's
#:   ``FinishReason``); the provider's own value is in ``native_finish_reason`` (not read).
#: * vLLM (``vllm/v1/engine/__init__.py`` ``FINISH_REASON_STRINGS``): ``stop | length | abort |
#:   error | repetition`` (+ ``tool_calls`` from its tool parsers); ``abort``, ``error`` and
#:   ``repetition`` (a repetitive pattern was detected) are failures.
#: * Ollama (``openai/openai.go``: ``done_reason`` -> ``stop`` / ``length``, ``tool_calls`` when it
#:   returns calls) and Groq / xAI (recordings ``vercel-ai/groq__groq-tool-call``,
#:   ``openai-compatible__xai-tool-call``, ``pydantic-ai/test_groq__*``) use values of the OpenAI set.
#:
#: Anything else (Ollama's ``""`` means "not finished yet" and is not a value) fails closed; a caller
#: whose server documents another success value passes ``accepted_stop_reasons``.
STOP_REASONS = stop_table(
    success=("stop", "tool_calls", "function_call"),
    length=("length", "model_length"),
    filter=("content_filter",),
    failure=("insufficient_system_resource", "error", "abort", "repetition"),
)

#: ``tool_calls[].type`` values (openai-python ``ChatCompletionMessageToolCallUnion``: function,
#: custom) -> the call kind. A fragment without a type continues its call.
CONTENT_TYPES = {"function": "call:function", "custom": "call:custom"}

CONTRACT = RouteContract(
    name="openai-chat",
    endpoint="/v1/chat/completions",
    success_status=200,
    start_event=None,
    text_delta=("choices[].delta.content", "choices[].delta.refusal", "choices[].delta.reasoning_content",
                "choices[].delta.reasoning"),
    tool_input_delta=("choices[].delta.tool_calls[].function.arguments", "choices[].delta.function_call.arguments"),
    block_open=("choices[].index", "choices[].delta.tool_calls[].index|id"),
    block_close=("choices[].finish_reason",),
    terminal=("[DONE]",),
    error=("event: error", "chunk.error"),
    usage=("chunk.usage",),
    keep_alive=(": comment",),
    accumulator_key="choices[].index, then tool_calls[].index (dict) falling back to id, then the latest call",
    close_condition="a choice and its tool calls close at the choice's non-empty finish_reason",
    terminal_condition="data: [DONE] after every choice seen has a finish_reason, then EOF",
    stop_reasons=STOP_REASONS,
    content_types=CONTENT_TYPES,
    dispatch_key=None,
    before_start=frozenset(),
    choices_key="choices",
    cross_check_event_name=False,
    done_sentinel="terminal",
)


class _Detail:
    """One OpenRouter ``reasoning_details`` entry of a choice as it accumulates: its fields taken whole
    (``type``, ``index``, then ``id``, ``format``, ``signature`` as they come, the latest non-empty value
    standing) and the text of its streamed field."""

    __slots__ = ("field", "fields", "text")

    def __init__(self, kind: str, index: int, field: str) -> None:
        self.fields: dict[str, Any] = {"type": kind, "index": index}
        #: Which field streams (:data:`DETAIL_FIELDS`).
        self.field = field
        self.text = TextBuffer("reasoning_details", index)

    def native(self) -> dict[str, Any]:
        """The entry as the assistant message sends it back."""
        return {**self.fields, self.field: self.text.joined()}


def _detail_index(detail: _Detail) -> int:
    """The sort key of the entries sent back: their ``index`` (arrival order among equal ones)."""
    index: int = detail.fields["index"]
    return index


class _Choice(ChoiceState):
    """Per-choice accumulation, plus how tool-call fragments find their call."""

    __slots__ = ("by_id", "by_index", "details", "executed", "kept", "latest", "legacy", "logprobs")

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.by_index: dict[int, ToolCallBuffer] = {}
        self.by_id: dict[str, ToolCallBuffer] = {}
        self.latest: ToolCallBuffer | None = None
        self.legacy: ToolCallBuffer | None = None
        #: ``{"content": [...], "refusal": [...]}`` once a chunk carried logprobs.
        self.logprobs: dict[str, list[JSON]] | None = None
        #: Tool-call fragments of unknown types kept verbatim (``keep_unknown``).
        self.kept: list[JSON] = []
        #: OpenRouter ``reasoning_details`` entries by (type, index), once a delta carried one.
        self.details: dict[tuple[str, int], _Detail] | None = None
        #: Groq's ``executed_tools`` entries by ``index``, once a delta carried one.
        self.executed: dict[int, dict[str, Any]] | None = None


#: Delta fields that carry answer content in a form this route does not accumulate: OpenAI's audio
#: output (``delta.audio``: ``id``, base64 ``data`` and ``transcript`` fragments, then ``expires_at``;
#: ``gpt-4o-audio-preview`` with ``modalities: ["text", "audio"]``, missing from the SDK's ``ChoiceDelta``)
#: and OpenRouter's generated images (``delta.images``: ``[{"type": "image_url", "image_url": {"url"}}]``,
#: ``modalities: ["image", "text"]``). A truthy one is ``unknown_type`` (kept verbatim in ``items`` with
#: the session's ``keep_unknown_items``): committed without it, the answer would be empty or partial.
UNREAD_CONTENT = ("audio", "images")

#: ``delta.content`` sent as a list of content chunks (Mistral: the reasoning models, Magistral and Mistral Small
#: with thinking, stream ``{"type": "thinking", "thinking": [{"type": "text", "text": ...}], "closed"?: bool}`` and
#: ``{"type": "text", "text": ...}``; docs.mistral.ai "Reasoning", the ``ThinkChunk`` / ``TextChunk`` models of
#: mistralai's client): chunk type -> the channel its text joins. Another type is ``unknown_type``.
CONTENT_CHUNKS = {"text": "text", "thinking": "reasoning"}

#: OpenRouter's ``delta.reasoning_details`` (https://openrouter.ai/docs/use-cases/reasoning-tokens, "Reasoning
#: Details"; "Preserving reasoning blocks": pass them back unmodified in the assistant message to continue the
#: reasoning, which some models need across tool calls): entry type -> the field whose text streams in fragments
#: (``reasoning.text`` with its ``signature``, ``reasoning.summary``, ``reasoning.encrypted`` with opaque
#: ``data``). Entries of one type and ``index`` are one entry; another type is ``unknown_type`` (kept verbatim in
#: ``items`` with ``keep_unknown_items``): committed without it, the reasoning sent back would lack it.
DETAIL_FIELDS = {"reasoning.text": "text", "reasoning.summary": "summary", "reasoning.encrypted": "data"}


def _has_payload(delta: dict[str, Any]) -> bool:
    """Whether a delta carries anything beyond empty placeholders (role, "" content, [] ...)."""
    return bool(
        delta.get("content") or delta.get("refusal") or delta.get("reasoning_content") or delta.get("reasoning")
        or delta.get("reasoning_details") or delta.get("tool_calls") or delta.get("function_call")
    )


class OpenAIChatAccumulator(RouteAccumulator):
    """Accumulates ``chat.completion.chunk`` events; see the module docstring for the rules."""

    contract = CONTRACT
    choice_state = _Choice

    __slots__ = ()

    # -- events (after the base's envelope step) -------------------------------------------

    def _chunk(self, obj: dict[str, Any], choices: object) -> None:
        if self.response_id is None or self.model is None:
            self._identity(obj.get("id"), obj.get("model"))
        usage = obj.get("usage")
        if usage:
            if usage.__class__ is not dict:
                self._protocol("envelope")
                return
            if self._charge_usage(usage):
                self.usage = usage

    def _choice(self, st: _Choice, ch: dict[str, Any]) -> None:
        delta = ch.get("delta")
        if delta is not None:
            if delta.__class__ is not dict:  # a string, a list, a number: not a delta, even when empty
                self._protocol("envelope")
                return
            if st.finish_reason is not None:
                if _has_payload(delta):
                    self._protocol("closed_block")
                    return
            else:
                content = delta.get("content")
                if content.__class__ is str:  # _optional_text, inline: the hottest field of the route
                    if content and not self._append(st.text, content, self._max_text, "text"):
                        return
                elif content.__class__ is list:  # content chunks ([] holds none)
                    if not self._each(content, self._content_chunk, st):
                        return
                elif content is not None:  # (0, false, {}: not a text, even when falsy)
                    self._protocol("envelope")
                    return
                if content is None or len(delta) > 1:
                    self._rare_fields(st, delta)
                    if self.failure is not None:
                        return
        logprobs = ch.get("logprobs")
        if logprobs and not self._logprobs(st, logprobs):
            return
        reason = ch.get("finish_reason")
        if reason:
            if reason.__class__ is not str:
                self._protocol("envelope")
                return
            if st.finish_reason is None:
                self._finish_choice(st, reason)
            else:
                self._refinish(st, reason)

    def _content_chunk(self, st: _Choice, chunk: object) -> None:
        """One element of a ``content`` list (Mistral's content chunks, :data:`CONTENT_CHUNKS`): a ``text`` chunk's
        text joins the text, a ``thinking`` chunk's ``text`` parts join the reasoning (its ``closed`` flag is read
        for its type only). A chunk of another type is ``unknown_type`` (kept verbatim in ``items`` with
        ``keep_unknown_items``); anything else malformed is ``envelope``."""
        c: dict[str, Any] = chunk if isinstance(chunk, dict) else {}  # (not an object: no type, refused below)
        kind = c.get("type")
        field = CONTENT_CHUNKS.get(kind) if kind.__class__ is str else None
        if field is None:
            if kind.__class__ is not str:
                self._protocol("envelope")
            elif self._unknown():
                st.kept.append({"content": [c]})
            return
        if field == "text":
            self._chunk_text(st.text, c)
            return
        parts, closed = c.get("thinking"), c.get("closed")
        if parts.__class__ is not list or (closed is not None and closed.__class__ is not bool):
            self._protocol("envelope")
            return
        for part in parts:
            if part.__class__ is not dict or part.get("type") != "text" or not self._chunk_text(st.reasoning, part):
                self._protocol("envelope")  # (a no-op after a ceiling's failure: the first failure stands)
                return

    def _chunk_text(self, buf: TextBuffer, chunk: dict[str, Any]) -> bool:
        """A content chunk's ``text`` (a string, possibly empty) joins ``buf``; False when it is not a string or a
        ceiling trips."""
        text = chunk.get("text")
        if text.__class__ is not str:
            self._protocol("envelope")
            return False
        return not text or self._append(buf, text, self._max_text, "text")

    def _logprobs(self, st: _Choice, logprobs: object) -> bool:
        """Keep a chunk's ``content`` / ``refusal`` logprob entries (item ceiling)."""
        if logprobs.__class__ is not dict:
            self._protocol("envelope")
            return False
        lp: dict[str, Any] = logprobs
        for key in ("content", "refusal"):
            entries = lp.get(key)
            if entries:
                if entries.__class__ is not list:
                    self._protocol("envelope")
                    return False
                if not self._retain():
                    return False
                if st.logprobs is None:
                    st.logprobs = {"content": [], "refusal": []}
                st.logprobs[key].extend(entries)
        return True

    def _rare_fields(self, st: _Choice, delta: dict[str, Any]) -> None:
        """Everything but ``content``: refusal, reasoning, tool calls, legacy function_call; first, content
        this route does not read (:data:`UNREAD_CONTENT`), which takes nothing more of the delta unless kept."""
        for key in UNREAD_CONTENT:
            value = delta.get(key)
            if value:  # the answer without it is not the answer
                if not self._unknown():
                    return
                st.kept.append({key: value})
        refusal = delta.get("refusal")
        if refusal and not self._optional_text(st.refusal, refusal):
            return
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and not self._optional_text(st.reasoning, reasoning):
            return
        details = delta.get("reasoning_details")
        if details and not self._each(details, self._detail, st):
            return
        fragments = delta.get("tool_calls")
        if fragments is not None and not self._each(fragments, self._tool_fragment, st):  # ("", 0, {}: envelope)
            return
        legacy = delta.get("function_call")
        if legacy:
            self._legacy_fragment(st, legacy)
            if self.failure is not None:
                return
        annotations = delta.get("annotations")
        if annotations and not self._each(annotations, self._cite, st.citations):
            return
        executed = delta.get("executed_tools")
        if executed:
            self._each(executed, self._executed_tool, st)

    def _executed_tool(self, st: _Choice, entry: object) -> None:
        """One ``executed_tools`` entry (Groq's compound models: a tool the server ran, such as a web search, with
        its ``arguments``, ``output`` and ``search_results``). Entries of one ``index`` are one tool: each later
        entry's fields replace the earlier ones' (the tool is sent as it starts, then again with its output). Kept
        verbatim in the choice's ``items`` as ``{"executed_tools": [tool]}``, in ``index`` order (item ceiling, and
        an entry's worth of ``retained`` for each tool): the server ran it, so it is never a call to run, and the
        answer does not depend on its type. Anything but an object with a non-negative integer ``index`` and a
        string ``type`` is ``envelope``; a later entry of one index naming another type is ``item_mismatch``."""
        e: dict[str, Any] = entry if isinstance(entry, dict) else {}  # (not an object: no type, refused below)
        index, kind = e.get("index"), e.get("type")
        if index.__class__ is not int or index < 0 or kind.__class__ is not str:
            self._protocol("envelope")
            return
        executed = st.executed
        if executed is None:
            executed = st.executed = {}
        tool = executed.get(index)
        if tool is not None and tool["type"] != kind:
            self._protocol("item_mismatch")
            return
        if not self._retain() or (tool is None and not self._hold(ENTRY_CHARS)):
            return
        if tool is None:
            executed[index] = dict(e)
        else:
            tool.update(e)

    def _detail(self, st: _Choice, entry: object) -> None:
        """One ``reasoning_details`` entry (:data:`DETAIL_FIELDS`): its streamed field's fragment joins the
        entry of its type and ``index`` (absent: 0), under the text ceiling and ``retained``; ``id`` and
        ``format`` are taken whole, the ``signature`` as a signature (ceiling ``signatures``). Anything
        but an object with a string type, a non-negative integer index and string fields is ``envelope``."""
        e: dict[str, Any] = entry if isinstance(entry, dict) else {}  # (not an object: no type, refused below)
        kind, index = e.get("type"), e.get("index", 0)
        if kind.__class__ is not str or index.__class__ is not int or index < 0:
            self._protocol("envelope")
            return
        field = DETAIL_FIELDS.get(kind)
        if field is None:
            if self._unknown():
                st.kept.append({"reasoning_details": [e]})
            return
        fragment, signature = e.get(field), e.get("signature")
        if any(v is not None and v.__class__ is not str for v in (fragment, signature, e.get("id"), e.get("format"))):
            self._protocol("envelope")
            return
        details = st.details
        if details is None:
            details = st.details = {}
        detail = details.get((kind, index))
        if detail is None:
            if not self._hold(ENTRY_CHARS):
                return
            detail = details[(kind, index)] = _Detail(kind, index, field)
        if fragment:
            if not self._held(detail.text, len(fragment), self._max_text, "text"):
                return
            detail.text.parts.append(fragment)
        fields = detail.fields
        for key in ("id", "format"):
            value = e.get(key)
            if value:
                if not self._whole_string(value) or not self._hold(len(value) - len(fields.get(key, ""))):
                    return
                fields[key] = value
        if signature:
            if not self._sign(fields.get("signature", ""), signature):
                return
            fields["signature"] = signature

    def _text_buffers(self) -> Iterable[TextBuffer]:
        """The choices' text channels, and the streamed fields of their ``reasoning_details`` entries."""
        yield from super()._text_buffers()
        for c in self._choices.values():
            details = c.details if isinstance(c, _Choice) else None  # (every choice of this route is one)
            for detail in details.values() if details else ():
                yield detail.text

    # -- tool calls ----------------------------------------------------------------------

    def _resolve(self, st: _Choice, index: int | None, call_id: str | None, name: str | None,
                 kind: str) -> ToolCallBuffer | None:
        """Find the call a fragment continues, or open a new one (see the module docstring)."""
        if call_id:
            call = st.by_id.get(call_id)
            if call is not None:
                if index is not None and index not in st.by_index and not self._alias(st, index, call):
                    return None
                return call
            if index is not None:
                call = st.by_index.get(index)
                if call is not None and call.id is None:
                    if not self._rename(call, call_id, ENTRY_CHARS + len(call_id)):  # (and its by_id entry)
                        return None
                    call.id = call_id
                    st.by_id[call_id] = call
                    return call
            call = self._open(st, call_id, name, kind)
            if call is None or not self._hold(ENTRY_CHARS):
                return None
            st.by_id[call_id] = call
            if index is not None and not self._alias(st, index, call):
                return None
            return call
        if index is not None:
            call = st.by_index.get(index)
            if call is None:
                call = self._open(st, None, name, kind)
                if call is None or not self._alias(st, index, call):
                    return None
            return call
        if st.latest is not None:
            return st.latest
        return self._open(st, None, name, kind)

    def _alias(self, st: _Choice, index: int, call: ToolCallBuffer) -> bool:
        """``index`` now names ``call`` in its choice: at most ``max_tool_calls`` indexes per choice
        (stage ``tool_calls``; a real call has one), one entry against ``retained``. False on failure."""
        if len(st.by_index) >= self._max_calls:
            self._fail(Outcome.BUFFER_LIMIT, "tool_calls")
            return False
        if not self._hold(ENTRY_CHARS):
            return False
        st.by_index[index] = call
        return True

    def _open(self, st: _Choice, call_id: str | None, name: str | None, kind: str) -> ToolCallBuffer | None:
        call = self._new_call(call_id, name, kind)
        if call is not None:
            st.calls.append(call)
            st.latest = call
        return call

    def _function(self, function: object, input_key: str = "arguments") -> tuple[str | None, str | None] | None:
        """``(name, input)`` of a ``{"name", "arguments"}`` object (``tool_calls[].function`` and
        the legacy ``function_call`` share the shape; ``tool_calls[].custom`` has ``input``);
        ``None`` after recording ``envelope``."""
        if function.__class__ is not dict:
            self._protocol("envelope")
            return None
        fn: dict[str, Any] = function
        name = fn.get("name")
        arguments = fn.get(input_key)
        if (name is not None and name.__class__ is not str) or (
            arguments is not None and arguments.__class__ is not str
        ):
            self._protocol("envelope")
            return None
        return name, arguments

    def _continue(self, call: ToolCallBuffer, name: str | None, arguments: str | None) -> None:
        """A fragment for ``call``: a late name fills a missing one, the same name again is nothing new,
        another name is ``item_mismatch`` (which tool would run?); arguments are appended."""
        if name and name != call.name:
            if call.name is not None:
                self._protocol("item_mismatch")
                return
            if not self._rename(call, name, len(name)):
                return
            call.name = name
        if arguments:
            self._tool_input(call, arguments)

    def _tool_fragment(self, st: _Choice, fragment: object) -> None:
        if fragment.__class__ is not dict:
            self._protocol("envelope")
            return
        frag: dict[str, Any] = fragment
        index = frag.get("index")
        call_id = frag.get("id")
        ftype = frag.get("type")
        if (
            (index is not None and index.__class__ is not int)
            or (call_id is not None and call_id.__class__ is not str)
            or (ftype is not None and ftype.__class__ is not str)
        ):
            self._protocol("envelope")
            return
        kind = "custom" if ftype == "custom" or "custom" in frag else "function"
        if ftype is not None and ftype not in CONTENT_TYPES:
            if self._unknown():
                st.kept.append(frag)
            return
        name = arguments = None
        body = frag.get(kind)
        if body is not None:
            fields = self._function(body, "input" if kind == "custom" else "arguments")
            if fields is None:
                return
            name, arguments = fields
        call = self._resolve(st, index, call_id or None, name or None, kind)
        if call is not None:
            self._continue(call, name, arguments)

    def _legacy_fragment(self, st: _Choice, legacy: object) -> None:
        fields = self._function(legacy)
        if fields is None:
            return
        name, arguments = fields
        call = st.legacy
        if call is None:
            call = self._new_call(None, name or None)
            if call is None:
                return
            st.legacy = call
            st.calls.append(call)
        self._continue(call, name, arguments)

    # -- ends ----------------------------------------------------------------------------

    def _finish_choice(self, st: _Choice, reason: str) -> None:
        if not self._finish(st, reason):
            return
        validate = self._stop_failure(reason) is None
        for call in st.calls:
            if call.open and not self._close_call(call, validate):
                return

    def _done(self) -> None:
        ordered = self._ordered_choices()
        if not ordered or any(c.finish_reason is None for c in ordered):
            self._terminal(None, 0)
            self.stop_reason = ordered[0].finish_reason if ordered else None
            return
        self._terminal_choices()

    # -- results (open_count and choice_results: the base's, choices in index order) ----------

    def _choice_extras(self, st: _Choice, calls: tuple[ToolCall, ...]) -> dict[str, Any]:
        text, refusal = st.text.joined(), st.refusal.joined()
        message: dict[str, Any] = {"role": "assistant", "content": text if text or not (calls or refusal) else None}
        if refusal:
            message["refusal"] = refusal
        listed = [c for c in calls if st.legacy is None or c.call != st.legacy.call]
        if listed:
            message["tool_calls"] = [
                {"id": c.id, "type": "custom", "custom": {"name": c.name, "input": c.input_text}} if c.kind == "custom"
                else {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input_text}}
                for c in listed
            ]
        if st.legacy is not None:
            message["function_call"] = {"name": st.legacy.name, "arguments": st.legacy.joined()}
        if self._reasoning_content:
            message["reasoning_content"] = st.reasoning.joined()
        if st.details:
            message["reasoning_details"] = [d.native() for d in sorted(st.details.values(), key=_detail_index)]
        items = tuple(st.kept)
        if st.executed:
            items += tuple({"executed_tools": [dict(st.executed[i])]} for i in sorted(st.executed))
        return {"items": items, "citations": tuple(st.citations), "logprobs": st.logprobs,
                "assistant_message": message}
