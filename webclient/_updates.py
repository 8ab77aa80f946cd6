"""What a :class:`~webclient.StreamSession` hands back: updates while streaming, a result at the end.

Updates (``StreamSession.feed`` / ``finish`` / ``abort`` return ``list[Update]``)::

    TextDelta        provisional   text for display; channel "text" | "refusal" | "reasoning"
    ToolInputDelta   provisional   a raw tool-input fragment; inert, for display only
    ToolCallUpdate   state change  streaming -> closed -> valid | invalid (ready only at commit)
    Committed        final         the attempt is complete; carries the StreamResult
    Failed           final         any other outcome; carries the outcome, stage and StreamResult

Exactly one final update ends every attempt. Provisional updates are never evidence that the
answer is usable: only ``Committed`` is. Within one ``feed`` call consecutive deltas for the same
channel/index (or the same tool call) are merged into one update, so the number of updates, but
never their concatenated content, depends on how the transport chunked the bytes. A delta's text never
holds a surrogate, so each one encodes as UTF-8 on its own: a pair the provider split across two events
reaches the caller whole in the later delta (a high half that ends a delta waits for the next delta of
its channel or call), and a half that stays unpaired is shown as U+FFFD (the answer does not commit then).

Every class is a frozen dataclass with ``to_dict()`` giving a JSON-able dict with a ``"kind"`` key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, TypeVar

from ._outcome import Outcome
from ._resume import ResumePoint
from ._telemetry import Telemetry
from ._values import shown_value

_T = TypeVar("_T")


def slot_builder(cls: type[_T]) -> Callable[..., _T]:
    """A constructor of the frozen, slotted dataclass ``cls`` that takes every field positionally, in
    declaration order, and builds the object ``cls(*values)`` builds: the same class, the same
    values. It sets each slot through its descriptor, where the generated frozen ``__init__`` calls
    ``object.__setattr__``, which looks each name up first (about twice the cost). Used for the
    objects every response builds: the result, its telemetry, each choice and the updates."""
    if not (cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__):  # type: ignore[attr-defined]
        raise AssertionError(f"{cls.__name__}: not a frozen, slotted dataclass")
    if hasattr(cls, "__post_init__") or not all(f.init for f in fields(cls)):  # type: ignore[arg-type]
        raise AssertionError(f"{cls.__name__}: its __init__ does more than set the fields")
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    lines = [f"def build({', '.join(names)}):", "    obj = new(cls)"]
    lines += [f"    set_{name}(obj, {name})" for name in names]
    lines.append("    return obj")
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    namespace.update({f"set_{name}": getattr(cls, name).__set__ for name in names})  # the slots' descriptors
    exec("\n".join(lines), namespace)  # generated from the field names, as dataclasses does
    build: Callable[..., _T] = namespace["build"]
    return build


@dataclass(frozen=True, slots=True)
class ProviderError:
    """The sanitized identity of an error the provider reported inside the stream.

    Only the error's type and code survive (allow-listed characters, length-capped); the
    provider's message text is never kept.
    """

    #: e.g. ``"overloaded_error"``, ``"invalid_request_error"``; ``None`` when absent.
    type: str | None
    #: e.g. ``"tool_use_failed"``, ``"429"``; ``None`` when absent.
    code: str | None

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "code": ...}``."""
        return {"type": self.type, "code": self.code}


@dataclass(frozen=True, slots=True)
class _ToolCallFields:
    """Which tool call, and where it stands: the fields :class:`ToolCall` (a view of the call) and
    :class:`ToolCallUpdate` (the update announcing a state change) share, in this order."""

    #: Position of the call in the attempt (0, 1, ...), stable across updates.
    call: int
    #: The provider's call id (``call_...``, ``toolu_...``), if it sent one.
    id: str | None
    #: The tool name, if it arrived.
    name: str | None
    #: ``"streaming"``, ``"closed"``, ``"valid"`` or ``"invalid"``.
    state: str
    #: The parsed argument object once the input closed and parsed to an object, else ``None``.
    arguments: dict[str, Any] | None
    #: Valid and the attempt complete.
    ready: bool


@dataclass(frozen=True, slots=True)
class ToolCall(_ToolCallFields):
    """A tool call as it stood when the attempt ended (or at a state change).

    ``ready`` is true only when the call is ``valid`` *and* the whole attempt is ``complete``:
    that is the only state in which it may be executed.

    ``kind`` says what the client must do (see :data:`TOOL_CALL_KINDS`); ``arguments`` is the
    validated object for every kind but ``custom``, whose input is free text (``input_text``).
    """

    #: The raw accumulated input text (provisional; kept so a truncated call can be shown). For
    #: calls that arrive as a whole item (computer, shell, apply_patch ...) the JSON of
    #: ``arguments`` once the item closed.
    input_text: str
    #: Content-free validation problems when ``state == "invalid"``.
    problems: tuple[str, ...] = ()
    #: One of :data:`TOOL_CALL_KINDS`.
    kind: str = "function"

    def to_dict(self) -> dict[str, Any]:
        """``{"call", "id", "name", "kind", "state", "arguments", "input", "ready"}``."""
        return {"call": self.call, "id": self.id, "name": self.name, "kind": self.kind, "state": self.state,
                "arguments": self.arguments, "input": self.input_text, "ready": self.ready}


#: What a client-executed call asks for (``ToolCall.kind``). Hosted tools never appear here: they
#: are result ``items``.
#:
#: ``function``      Chat ``tool_calls`` / legacy ``function_call``, Responses ``function_call``,
#:                   Anthropic ``tool_use``, Gemini ``functionCall``: arguments are a JSON object
#: ``custom``        Responses ``custom_tool_call``, Chat ``type: "custom"``: free-text input
#: ``computer``      Responses ``computer_call``: ``{action | actions, pending_safety_checks}``
#: ``local_shell``   Responses ``local_shell_call``: ``{action}``
#: ``shell``         Responses ``shell_call`` (local environment): ``{action, environment}``
#: ``apply_patch``   Responses ``apply_patch_call``: ``{operation}``
#: ``mcp_approval``  Responses ``mcp_approval_request``: the MCP tool's arguments (JSON object);
#:                   the client approves or rejects the call
#: ``tool_search``   Responses ``tool_search_call`` with ``execution: "client"``: ``{arguments}``; the client
#:                   answers with a ``tool_search_output`` quoting the call's id
TOOL_CALL_KINDS: tuple[str, ...] = ("function", "custom", "computer", "local_shell", "shell", "apply_patch",
                                    "mcp_approval", "tool_search")

#: JSON values (what ``items``, ``citations``, ``assistant_message`` and ``logprobs`` hold).
JSON = Any


@dataclass(frozen=True, slots=True)
class ChoiceResult:
    """One choice (Chat ``n>1``) or candidate (Gemini); the single message on other routes.

    Everything here is provisional unless the attempt is ``complete``. ``items``, ``citations``,
    ``logprobs`` and ``assistant_message`` hold the provider's own objects as they arrived (see
    :class:`StreamResult`); they never enter telemetry.
    """

    index: int
    text: str
    refusal: str
    reasoning: str
    stop_reason: str | None
    tool_calls: tuple[ToolCall, ...]
    #: Hosted-tool results and other non-runnable output objects, verbatim, in stream order.
    items: tuple[JSON, ...] = ()
    #: Citations / annotations, verbatim, in stream order.
    citations: tuple[JSON, ...] = ()
    #: Chat only: ``{"content": [...], "refusal": [...]}`` token logprobs, else ``None``.
    logprobs: JSON = None
    #: The route-native assistant turn to append to the next request (see
    #: :attr:`StreamResult.assistant_message`), or ``None`` when nothing arrived.
    assistant_message: JSON = None

    def to_dict(self) -> dict[str, Any]:
        """The per-choice fields, JSON-able."""
        return {"index": self.index, "text": self.text, "refusal": self.refusal, "reasoning": self.reasoning,
                "stop_reason": self.stop_reason, "tool_calls": [call.to_dict() for call in self.tool_calls],
                "items": list(self.items), "citations": list(self.citations), "logprobs": self.logprobs,
                "assistant_message": self.assistant_message}


@dataclass(frozen=True, slots=True)
class StreamResult:
    """How one attempt ended, with everything accumulated (provisional unless ``committed``).

    ``text`` is choice 0's (or the message's) text as accumulated, always present and only to be
    trusted when ``committed``. Every text channel of a result encodes as UTF-8: in a committed one a
    surrogate pair split across deltas is combined and an unpaired surrogate keeps it from committing;
    in one that does not commit (the text that arrived before a cut or a failure) pairs are combined
    as well and an unpaired surrogate, such as half a pair at the cut, is shown as U+FFFD.
    ``stage`` names the check that decided a non-complete outcome and is ``None`` when complete.
    ``tool_calls``, ``items``, ``citations``, ``logprobs`` and ``assistant_message`` are choice 0's as
    well (``choices`` has every choice).

    ``assistant_message`` is the route-native assistant turn, faithful to what the provider needs
    back: Chat ``{"role": "assistant", "content", "tool_calls"?, "refusal"?, "reasoning_content"?}``;
    Responses the list of output items as ``response.output_item.done`` sent them (``reasoning``
    items with their ``encrypted_content``); Anthropic ``{"role": "assistant", "content": [blocks]}``
    with thinking ``signature`` and ``redacted_thinking`` ``data``; Gemini ``{"role": "model",
    "parts": [...]}`` with every ``thoughtSignature`` on the part it arrived on.
    """

    route: str
    outcome: Outcome
    stage: str | None
    http_status: int | None
    stop_reason: str | None
    committed: bool
    text: str
    refusal: str
    reasoning: str
    tool_calls: tuple[ToolCall, ...]
    usage: dict[str, Any] | None
    provider_error: ProviderError | None
    choices: tuple[ChoiceResult, ...]
    telemetry: Telemetry
    #: Choice 0's hosted-tool result items (never runnable), verbatim.
    items: tuple[JSON, ...] = ()
    #: Choice 0's route-native assistant turn, or ``None``.
    assistant_message: JSON = None
    #: The provider's response id (``chatcmpl-…``, ``resp_…``, ``msg_…``, Gemini ``responseId``).
    response_id: str | None = None
    #: The model the provider says answered.
    model: str | None = None
    #: Choice 0's citations / annotations, verbatim.
    citations: tuple[JSON, ...] = ()
    #: Chat only: choice 0's token logprobs, else ``None``.
    logprobs: JSON = None

    #: Where a later stream may continue this unfinished answer (``StreamSession.resume``): the response id
    #: and the last sequence number delivered (``openai-responses``), else ``None``.
    resume: ResumePoint | None = None
    #: The message-level facts the provider sent beside the content, verbatim, for the caller and the next request
    #: (``anthropic-messages``: ``stop_sequence``, the matched stop sequence; ``stop_details``, a refusal's
    #: ``category`` and ``explanation`` and the fallback credit; ``container``, the code execution container to
    #: reuse; ``context_management``), only the keys the stream set, else ``None``.
    details: JSON = None

    def to_dict(self) -> dict[str, Any]:
        """The one full serializer of a result (``replay`` prints it; the JS kit passes it on):
        ``route, outcome, stage, http_status, stop_reason, committed, text, refusal, reasoning, usage,
        provider_error, tool_calls, choices, items, assistant_message, response_id, model, citations,
        logprobs, resume, details, telemetry``."""
        return {
            "route": self.route,
            "outcome": self.outcome.value,
            "stage": self.stage,
            "http_status": self.http_status,
            "stop_reason": self.stop_reason,
            "committed": self.committed,
            "text": self.text,
            "refusal": self.refusal,
            "reasoning": self.reasoning,
            "usage": self.usage,
            "provider_error": None if self.provider_error is None else self.provider_error.to_dict(),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "choices": [choice.to_dict() for choice in self.choices],
            "items": list(self.items),
            "assistant_message": self.assistant_message,
            "response_id": self.response_id,
            "model": self.model,
            "citations": list(self.citations),
            "logprobs": self.logprobs,
            "resume": None if self.resume is None else self.resume.to_dict(),
            "details": self.details,
            "telemetry": self.telemetry.to_dict(),
        }

    def with_telemetry(self, telemetry: Telemetry) -> StreamResult:
        """A copy carrying ``telemetry`` (for transports that add timing or a retry decision)."""
        return replace(self, telemetry=telemetry)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Provisional text. ``index`` is the choice (Chat), block (Anthropic), output item
    (Responses) or candidate (Gemini) it belongs to. ``text`` holds no surrogate (module docstring)."""

    kind: ClassVar[str] = "text_delta"
    provisional: ClassVar[bool] = True
    channel: str
    index: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "channel": self.channel, "index": self.index, "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolInputDelta:
    """A provisional, inert fragment of a tool call's raw input (display only); it holds no surrogate
    (module docstring)."""

    kind: ClassVar[str] = "tool_input_delta"
    provisional: ClassVar[bool] = True
    call: int
    id: str | None
    name: str | None
    fragment: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "call": self.call, "id": self.id, "name": self.name,
                "fragment": self.fragment}


@dataclass(frozen=True, slots=True)
class ToolCallUpdate(_ToolCallFields):
    """A tool call changed state (or, at commit, became ready); the fields are
    :class:`ToolCall`'s first six."""

    kind: ClassVar[str] = "tool_call"
    provisional: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "call": self.call, "id": self.id, "name": self.name,
                "state": self.state, "arguments": self.arguments, "ready": self.ready}


@dataclass(frozen=True, slots=True)
class Committed:
    """Final: the attempt is complete; ``result.committed`` is true."""

    kind: ClassVar[str] = "committed"
    provisional: ClassVar[bool] = False
    result: StreamResult

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "result": self.result.to_dict()}


@dataclass(frozen=True, slots=True)
class Failed:
    """Final: the attempt ended with any outcome other than complete."""

    kind: ClassVar[str] = "failed"
    provisional: ClassVar[bool] = False
    outcome: Outcome
    stage: str
    result: StreamResult

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "outcome": self.outcome.value, "stage": self.stage,
                "result": self.result.to_dict()}


Update = TextDelta | ToolInputDelta | ToolCallUpdate | Committed | Failed


def shown_result(result: StreamResult) -> StreamResult:
    """``result``, one that does not commit, with every stop reason and every object it kept verbatim
    (items, citations, logprobs, usage, the assistant message, the details) shown without a surrogate
    (:func:`~webclient._values.shown_value`), as its texts and tool inputs already are: the session
    builds it when the result would not encode otherwise (a lone surrogate escaped in a refused stop
    reason, or in an object kept before the attempt failed)."""
    choices = tuple(
        replace(c, stop_reason=shown_value(c.stop_reason), items=shown_value(c.items),
                citations=shown_value(c.citations), logprobs=shown_value(c.logprobs),
                assistant_message=shown_value(c.assistant_message))
        for c in result.choices)
    return replace(result, stop_reason=shown_value(result.stop_reason), usage=shown_value(result.usage),
                   choices=choices, items=shown_value(result.items), citations=shown_value(result.citations),
                   logprobs=shown_value(result.logprobs), assistant_message=shown_value(result.assistant_message),
                   details=shown_value(result.details))


#: Positional constructors (:func:`slot_builder`) of the objects every response builds.
new_choice = slot_builder(ChoiceResult)
new_result = slot_builder(StreamResult)
new_telemetry = slot_builder(Telemetry)
#: ... and of the updates every stream emits.
new_text_delta = slot_builder(TextDelta)
new_input_delta = slot_builder(ToolInputDelta)
new_call_update = slot_builder(ToolCallUpdate)
new_committed = slot_builder(Committed)
