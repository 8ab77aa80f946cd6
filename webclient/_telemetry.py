"""One sanitized telemetry record per HTTP attempt.

The record has exactly the nineteen fields the issue fixes, in this order, and nothing else::

    observed_at, request_id, route, model_alias, http_status, content_type_valid, chunk_count,
    bytes_received, decoded_character_count, complete_sse_event_count,
    pending_line_character_count, pending_event_character_count, open_payload_accumulator_count,
    terminal_condition_seen, stop_reason, stream_outcome, buffer_limit_stage, retry_decision,
    duration_ms

What may appear in it
    Counts, sizes, booleans, the route name, the outcome and stage vocabularies, and three short
    identifiers: ``request_id`` and ``model_alias`` (supplied by the caller) and ``stop_reason``
    (supplied by the provider). Those three pass :func:`sanitize_token`: a value outside a small
    character allow-list or over its length cap is replaced by ``"[REDACTED]"`` as a whole. A stop
    reason is recorded verbatim only when it is one the route's contract lists (or the caller
    accepted); any other value is recorded as ``"unrecognized"`` (:func:`stop_reason_token`), so a
    provider cannot write arbitrary tokens into telemetry. No prompt, data field, tool argument,
    header, key, signature, citation, item or provider error message is ever copied here.

Who fills what
    The sans-I/O session fills everything it can observe. ``observed_at``, ``duration_ms`` and
    ``retry_decision`` need a clock or a retry policy, so the session leaves them ``None`` and a
    transport or caller adds them with :meth:`Telemetry.with_fields`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any

from ._errors import UsageError

#: What replaces a value that fails the allow-list.
REDACTED = "[REDACTED]"

# Identifiers seen in practice: "req_011CV...", "chatcmpl-...", "gpt-4o-2024-08-06",
# "anthropic/claude-sonnet-4.5", "end_turn", "MAX_TOKENS", "overloaded_error". Anything with
# spaces, quotes, braces or non-ASCII is not an identifier and is dropped whole.
_TOKEN_RE = re.compile(r"[A-Za-z0-9_.:/@+\-]{1,128}")
_SHORT_TOKEN_RE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def _sanitize(value: object, allowed: re.Pattern[str]) -> str | None:
    """``None`` for ``None`` / ``""``; an int as its decimal string; a string that fully matches
    ``allowed`` as itself; anything else (bools included) as ``"[REDACTED]"``."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return REDACTED
    if isinstance(value, int):
        value = str(value)
    if isinstance(value, str) and allowed.fullmatch(value):
        return value
    return REDACTED


def sanitize_token(value: object) -> str | None:
    """Return ``value`` if it is a short identifier-like string (or an int), else ``"[REDACTED]"``.

    ``None`` and ``""`` stay ``None``. Used for caller-supplied ids and provider stop reasons.
    """
    return _sanitize(value, _TOKEN_RE)


def sanitize_code(value: object) -> str | None:
    """Like :func:`sanitize_token` with a tighter allow-list (``[A-Za-z0-9_.-]``, 64 characters):
    for provider error types and codes such as ``overloaded_error`` or ``429``."""
    return _sanitize(value, _SHORT_TOKEN_RE)


#: What a stop reason outside the route's vocabulary is recorded as (the result keeps the raw value).
UNRECOGNIZED = "unrecognized"


def stop_reason_token(reason: str | None, known: bool) -> str | None:
    """The telemetry spelling of a stop reason: ``None`` stays ``None``; a reason the route (or the
    caller) knows passes :func:`sanitize_token`; any other reason is :data:`UNRECOGNIZED`."""
    if reason is None:
        return None
    return sanitize_token(reason) if known else UNRECOGNIZED


#: The retry decisions a caller may record (mirrors the retry-advice vocabulary).
_RETRY_DECISION_RE = re.compile(r"[a-z_]{1,32}")


@dataclass(frozen=True, slots=True)
class Telemetry:
    """The sanitized record of one attempt. Build it with the session; extend it with
    :meth:`with_fields`; serialize it with :meth:`to_dict` (keys in the fixed order)."""

    #: When the attempt was observed (transport-supplied; ISO 8601 string or epoch seconds).
    observed_at: str | float | None
    #: The caller's request id, sanitized.
    request_id: str | None
    #: The route name (``"openai-chat"`` ...).
    route: str
    #: The caller's model alias, sanitized.
    model_alias: str | None
    #: The HTTP status passed to ``open()``, else ``None``.
    http_status: int | None
    #: Whether the media type essence was ``text/event-stream``; ``None`` before ``open()``.
    content_type_valid: bool | None
    #: Non-empty transport chunks fed.
    chunk_count: int
    #: Body bytes fed.
    bytes_received: int
    #: Characters the UTF-8 decoder produced.
    decoded_character_count: int
    #: Complete SSE events the session consumed.
    complete_sse_event_count: int
    #: Characters of an unfinished line when the attempt ended.
    pending_line_character_count: int
    #: Characters in the data buffer of an undispatched event when the attempt ended.
    pending_event_character_count: int
    #: Choices / blocks / items / tool calls still open when the attempt ended.
    open_payload_accumulator_count: int
    #: Whether the route's terminal condition arrived.
    terminal_condition_seen: bool
    #: The provider's stop reason, sanitized.
    stop_reason: str | None
    #: The outcome value (``"complete"``, ``"truncated"`` ...).
    stream_outcome: str
    #: The ceiling that tripped when the outcome is ``buffer_limit``, else ``None``.
    buffer_limit_stage: str | None
    #: The retry decision a caller recorded, else ``None``.
    retry_decision: str | None
    #: Attempt duration in milliseconds (transport-supplied).
    duration_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-able dict with the nineteen keys in their fixed order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def with_fields(
        self,
        *,
        observed_at: str | float | None = None,
        duration_ms: float | None = None,
        retry_decision: str | None = None,
    ) -> Telemetry:
        """Return a copy with the transport/caller fields set (``None`` leaves a field as is).

        Raises :class:`~webclient.UsageError` for values of the wrong type, a duration or epoch time
        that is not finite (or a negative duration), or a retry decision outside ``[a-z_]{1,32}``.
        """
        changes: dict[str, Any] = {}
        if observed_at is not None:
            if (isinstance(observed_at, bool) or not isinstance(observed_at, (str, int, float))
                    or (isinstance(observed_at, float) and not math.isfinite(observed_at))):
                raise UsageError("observed_at must be an ISO 8601 string or epoch seconds")
            if isinstance(observed_at, str) and not re.fullmatch(r"[0-9T:.+\-Z ]{1,40}", observed_at):
                raise UsageError("observed_at must be an ISO 8601 timestamp")
            changes["observed_at"] = observed_at
        if duration_ms is not None:
            # (NaN and infinity are no duration, and would make the record invalid JSON.)
            if (isinstance(duration_ms, bool) or not isinstance(duration_ms, (int, float))
                    or not 0 <= duration_ms < math.inf):
                raise UsageError("duration_ms must be a finite non-negative number")
            changes["duration_ms"] = duration_ms
        if retry_decision is not None:
            if not isinstance(retry_decision, str) or not _RETRY_DECISION_RE.fullmatch(retry_decision):
                raise UsageError("retry_decision must match [a-z_]{1,32}")
            changes["retry_decision"] = retry_decision
        return replace(self, **changes) if changes else self


#: The field names, in order (the contract other tools check against).
TELEMETRY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Telemetry))
