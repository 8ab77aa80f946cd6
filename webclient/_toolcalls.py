"""Tool calls: inert input buffers, the state machine that gates them, and caller validation.

State machine (the only transitions there are)::

    STREAMING --close--> CLOSED --parse + validate--> VALID | INVALID

A call is *ready to execute* only when it is ``VALID`` **and** the whole attempt is ``complete``;
the session decides the second half. Until then its input is a list of raw fragments, exposed
only as provisional display text, never parsed: fragments are appended with a running length
and joined once, at close, and parsed once with the standard library ``json`` (no partial-JSON
re-parse per delta, which is what makes the official SDKs quadratic).

Validation at close, in this order (the first problem decides the stage of a ``payload_error``):

``tool_unknown``     the call has no name (whatever is registered: nobody can run it), or tools
                     were registered and the name is not one of them
``tool_json``        the joined input is not strict JSON (``NaN``/``Infinity`` are refused);
                     an empty or all-whitespace input means "no arguments" and parses as ``{}``
``tool_not_object``  it parsed to something other than an object
``non_finite_number``  a number in it is not finite (``1e999`` parses as ``inf``)
``unpaired_surrogate`` a string or key in it holds a surrogate with no partner (``"\\ud800"``);
                     a pair split across two fragments is combined first (:mod:`webclient._values`)
``tool_schema``      the registered validator reported problems (or raised)

Validators: ``tools`` maps a tool name to a JSON Schema ``dict`` (compiled by
:func:`webclient._schema.validator_for`, which refuses keywords it does not implement, so a
``UsageError`` is raised when the session is built) or any callable
``(arguments: dict) -> list[str] | bool`` (an empty list or ``True`` means valid; see
``validator_for`` for the rest). Validators never raise into the session.

Call kinds (``ToolCall.kind``) are gated the same way, with these differences:

* ``custom`` (free-text input): nothing is parsed; the validator registered under the call's name
  receives the input **string** (a JSON Schema applies to the string, e.g. ``{"type": "string",
  "maxLength": 4096, "pattern": "..."}``; a grammar is checked by a callable the caller supplies,
  returning its problems). Stages: ``tool_unknown``, ``unpaired_surrogate``, ``tool_schema``.
* calls that arrive as a whole item (``computer``, ``local_shell``, ``shell``, ``apply_patch``)
  are registered under the kind itself (``tools={"shell": validator}``); the validator receives
  the action object (see ``_updates.TOOL_CALL_KINDS``).
* ``mcp_approval`` is validated like a function call, under the MCP tool's name.

With tools registered, a call whose name (or kind) is not registered is ``tool_unknown``: a
client that did not declare a tool never gets a runnable call for it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from ._errors import UsageError
from ._json import loads_strict
from ._schema import Validator, validator_for
from ._updates import ToolCall
from ._values import NON_FINITE_NUMBER, UNPAIRED_SURROGATE, clean_text, combine_surrogates, shown_text, value_problem


class ToolCallState(enum.Enum):
    """Where a tool call is in its life. ``value`` is the wire spelling used in updates."""

    #: Input fragments are still arriving; the input is inert display text.
    STREAMING = "streaming"
    #: The route's close signal arrived; the input is complete but not yet checked.
    CLOSED = "closed"
    #: Parsed to an object that passed the tool's validator.
    VALID = "valid"
    #: Failed to parse, was not an object, named an unknown tool, or failed validation.
    INVALID = "invalid"


#: The allowed transitions; anything else is a programming error in a route.
TRANSITIONS: dict[ToolCallState, frozenset[ToolCallState]] = {
    ToolCallState.STREAMING: frozenset({ToolCallState.CLOSED}),
    ToolCallState.CLOSED: frozenset({ToolCallState.VALID, ToolCallState.INVALID}),
    ToolCallState.VALID: frozenset(),
    ToolCallState.INVALID: frozenset(),
}

#: ``(arguments or None, failing stage or None, problems)``
Verdict = tuple[dict[str, Any] | None, str | None, tuple[str, ...]]

#: The verdict for a name outside the registered tools (checked before the input is parsed).
_UNKNOWN_TOOL: Verdict = (None, "tool_unknown", ("unknown tool",))
#: The verdict for a call whose name never arrived (absent, null or empty on the wire).
_NAMELESS_TOOL: Verdict = (None, "tool_unknown", ("tool call has no name",))

#: Value stage -> the (content-free) problem reported with it.
_VALUE_PROBLEMS = {
    NON_FINITE_NUMBER: "input holds a number that is not finite",
    UNPAIRED_SURROGATE: "input holds an unpaired surrogate",
}


def parse_tool_input(text: str) -> tuple[object, str | None]:
    """Parse a closed tool input: ``(value, None)`` or ``(None, "tool_json")``.

    Empty or all-whitespace input is the no-argument call and parses as ``{}``. Surrogate pairs
    split across fragments are combined before parsing.
    """
    if not text or text.isspace():
        return {}, None
    try:
        return loads_strict(combine_surrogates(text)), None
    except (ValueError, RecursionError):
        return None, "tool_json"


class ToolRegistry:
    """The caller's tools: name -> validator. ``None`` means "any name; JSON object check only"."""

    __slots__ = ("_validators",)

    def __init__(self, tools: Mapping[str, object] | None = None) -> None:
        self._validators: dict[str, Validator] | None = None
        if tools is None:
            return
        if not isinstance(tools, Mapping):
            raise UsageError("tools must be a mapping of tool name to JSON Schema or validator")
        validators: dict[str, Validator] = {}
        for name, spec in tools.items():
            if not isinstance(name, str) or not name:
                raise UsageError("tool names must be non-empty strings")
            validators[name] = validator_for(spec)
        self._validators = validators

    def _lookup(self, name: str | None) -> tuple[Verdict | None, Validator | None]:
        """``(refusal, validator)``: a call without a name is refused whatever is registered; with no
        tools registered every other name is known (no validator); otherwise only a registered name is."""
        if not name:
            return _NAMELESS_TOOL, None
        if self._validators is None:
            return None, None
        validator = self._validators.get(name)
        return (None if validator is not None else _UNKNOWN_TOOL), validator

    def check(self, name: str | None, text: str) -> Verdict:
        """Validate a closed input: ``(arguments or None, failing stage or None, problems)``."""
        refusal, validator = self._lookup(name)
        if refusal is not None:
            return refusal
        value, stage = parse_tool_input(text)
        if stage is not None:
            return None, stage, ("input is not valid JSON",)
        return self.check_object(value, validator)

    def check_text(self, name: str | None, text: str) -> Verdict:
        """Validate a closed free-text input (``custom`` calls): the validator gets the string;
        the verdict's arguments are always ``None``."""
        refusal, validator = self._lookup(name)
        if refusal is not None:
            return refusal
        cleaned = clean_text(text)
        if cleaned is None:
            return None, UNPAIRED_SURROGATE, (_VALUE_PROBLEMS[UNPAIRED_SURROGATE],)
        if validator is not None:
            problems = validator(cleaned)
            if problems:
                return None, "tool_schema", tuple(problems)
        return None, None, ()

    def check_value(self, name: str | None, value: object) -> Verdict:
        """Validate input that arrived already parsed (Gemini ``functionCall.args``)."""
        refusal, validator = self._lookup(name)
        if refusal is not None:
            return refusal
        return self.check_object(value, validator)

    @staticmethod
    def check_object(value: object, validator: Validator | None) -> Verdict:
        if not isinstance(value, dict):
            return None, "tool_not_object", ("input is not a JSON object",)
        stage = value_problem(value)
        if stage is not None:
            return None, stage, (_VALUE_PROBLEMS[stage],)
        if validator is not None:
            problems = validator(value)
            if problems:
                return value, "tool_schema", tuple(problems)
        return value, None, ()


class Fragments:
    """Fragments appended with a running size and joined once, when read.

    The shared storage of everything a route accumulates piecewise: a text channel
    (``_routes._base.TextBuffer``) and a tool call's raw input (:class:`ToolCallBuffer`). The
    route appends to ``parts`` and adds to ``size`` (its ceiling reads it); nothing is joined
    until :meth:`joined` is called.
    """

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        #: The fragments, in arrival order.
        self.parts: list[str] = []
        #: Characters appended so far.
        self.size = 0

    def joined(self) -> str:
        """The fragments so far, joined (and cached as a single fragment)."""
        parts = self.parts
        if len(parts) > 1:
            joined = "".join(parts)
            parts[:] = [joined]
            return joined
        return parts[0] if parts else ""


class ToolCallBuffer(Fragments):
    """One tool call's accumulating input (raw fragments, joined once at close) and state. Owned
    by a route accumulator."""

    __slots__ = ("arguments", "call", "id", "kind", "name", "problems", "state")

    def __init__(self, call: int, call_id: str | None, name: str | None, kind: str) -> None:
        super().__init__()
        #: Position in the attempt.
        self.call = call
        self.id = call_id
        self.name = name
        #: What the client must do (``_updates.TOOL_CALL_KINDS``).
        self.kind = kind
        self.state = ToolCallState.STREAMING
        self.arguments: dict[str, Any] | None = None
        self.problems: tuple[str, ...] = ()

    @property
    def open(self) -> bool:
        """Still streaming."""
        return self.state is ToolCallState.STREAMING

    def move(self, state: ToolCallState) -> None:
        """Apply a transition from :data:`TRANSITIONS`."""
        if state not in TRANSITIONS[self.state]:
            raise AssertionError(f"tool call transition {self.state.value} -> {state.value}")
        self.state = state

    def settle(self, arguments: dict[str, Any] | None, stage: str | None, problems: tuple[str, ...]) -> None:
        """Record the validation verdict of a CLOSED call."""
        self.arguments = arguments
        self.problems = problems
        self.move(ToolCallState.VALID if stage is None else ToolCallState.INVALID)

    def snapshot(self, ready: bool) -> ToolCall:
        """An immutable view (``ready`` is decided by the session). Its ``input`` encodes: a call that
        was validated has its surrogate pairs combined already, and in one that was not (cut, refused)
        pairs are combined and what is left unpaired is shown as U+FFFD (:func:`~webclient._values.shown_text`)."""
        return ToolCall(self.call, self.id, self.name, self.state.value, self.arguments,
                        ready and self.state is ToolCallState.VALID, shown_text(self.joined()), self.problems,
                        self.kind)
