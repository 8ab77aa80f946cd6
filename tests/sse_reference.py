"""A deliberately naive, character-at-a-time reading of the WHATWG event-stream rules.

It exists only as an oracle for differential tests: slow, obvious, and written straight from the
spec text (no fast paths, no normalisation tricks), so that the real parser's optimisations are
checked against the rules rather than against themselves.
"""

from __future__ import annotations

import codecs

from webclient import RetryField, SSEEvent


def reference_parse(data: bytes) -> list[object]:
    """The items a complete stream dispatches."""
    return reference_state(data, final=True)[0]


def reference_state(data: bytes, final: bool = False) -> tuple[list[object], int, int, bool, str]:
    """What a stream (prefix) has done after ``data``: the items dispatched, the pending partial
    line's length, the data buffer's length (values plus one LF each), whether a blank line would
    act on something (data or an event type), and the last event ID string. Bytes of a character
    not finished yet are not read (unless ``final``)."""
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final)
    if text.startswith("\ufeff"):
        text = text[1:]
    lines: list[str] = []
    current: list[str] = []
    i = 0
    complete = []
    while i < len(text):
        ch = text[i]
        if ch == "\r":
            complete.append("".join(current))
            current = []
            if i + 1 < len(text) and text[i + 1] == "\n":
                i += 1
        elif ch == "\n":
            complete.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    lines = complete  # the unterminated remainder is pending (discarded at EOF)
    out: list[object] = []
    data_buf = ""
    event_type = ""
    id_buf = ""
    last_event_id = ""
    for line in lines:
        if line == "":
            last_event_id = id_buf
            if data_buf == "":
                event_type = ""
                continue
            if data_buf.endswith("\n"):
                data_buf = data_buf[:-1]
            out.append(SSEEvent(event_type or "message", data_buf, id_buf))
            data_buf = ""
            event_type = ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "event":
            event_type = value
        elif field == "data":
            data_buf += value + "\n"
        elif field == "id":
            if "\x00" not in value:
                id_buf = value
        elif field == "retry" and value and all(c in "0123456789" for c in value) and len(value) <= 16:
            out.append(RetryField(int(value)))
    return out, len(current), len(data_buf), bool(data_buf) or bool(event_type), last_event_id
