"""Every result and every update encodes as UTF-8, whatever surrogate escapes the provider sent, and
as standard JSON, whatever ``NaN`` / ``Infinity`` the provider wrote.

Texts and tool inputs are checked by the routes when the answer would commit (``test_delta_surrogates.py``
for their deltas). The rest of what a result holds came from JSON as well, and a lone ``\\ud800`` escape in
it would make ``json.dumps(result.to_dict(), ensure_ascii=False).encode()`` (a UTF-8 JSON response, httpx's
``json=`` body of the next turn) raise:

* strings taken whole from one event (a tool call's name or id, the response id, the model, a signature)
  are refused as they arrive: ``payload_error`` ``unpaired_surrogate``, before any update announces them;
* an object kept verbatim (a citation, logprobs, usage, a part or item the route does not accumulate)
  fails an answer that would commit the same way, and one that does not commit shows it with U+FFFD, as
  it shows its texts; an escaped pair in one string is one character and commits.

``NaN``, ``Infinity`` and ``-Infinity`` are not JSON, but ``json.loads`` reads them (as Python's ``json.dumps``
writes ``nan`` and ``inf``: a server that streams its logprobs that way sends ``-Infinity``). In an object kept
verbatim one fails an answer that would commit, ``payload_error`` ``non_finite_number`` (a strict encoder,
``allow_nan=False``, would refuse the result), and a result that does not commit shows it as ``null``. So does
a number too large for a float (``1e999``), which ``json.loads`` reads as ``inf``.

Every test but the deep one runs under every chunking (``route_fixtures.check``, which also encodes every
update).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import check, replay, sse
from tests.test_edges_anthropic_messages import START, THINKING, TOOL, delta, message, start, stop, text
from tests.test_route_openai_responses import call_item, ev, message_item, stream
from webclient import StreamResult, StreamSession, UsageError

CHAT, RESPONSES, ANTHROPIC, GEMINI = "openai-chat", "openai-responses", "anthropic-messages", "gemini"
DONE = "[DONE]"
LONE = "\ud800"
EMOJI = "\U0001f600"

pytestmark = pytest.mark.usefixtures("no_safety_net")


def encoded(result: StreamResult) -> str:
    """The result as a UTF-8 JSON body would hold it (raises on a surrogate)."""
    return json.dumps(result.to_dict(), ensure_ascii=False).encode().decode()


def chat_chunk(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m-1", "choices": list(choices), **extra}


def ch(index: int = 0, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


def chat(*chunks: dict[str, Any], finish: str = "stop") -> bytes:
    return sse(*chunks, chat_chunk(ch(finish=finish)), DONE)


def fragment(**fields: Any) -> dict[str, Any]:
    return chat_chunk(ch(tool_calls=[{"index": 0, **fields}]))


def gemini(*parts: dict[str, Any], finish: str = "STOP", **extra: Any) -> bytes:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "index": 0, "finishReason": finish}
    return sse({"candidates": [candidate], "modelVersion": "gemini-x", "responseId": "r-1", **extra})


def anthropic_start(**fields: Any) -> dict[str, Any]:
    head: dict[str, Any] = json.loads(json.dumps(START))
    head["message"].update(fields)
    return head


def responses_call(field: str, value: str, *, late: bool = False) -> bytes:
    """A function-call item whose ``field`` is ``value`` in its added and its closing item (``late``: empty in
    the added one)."""
    events = call_item(0, '{"q":1}')
    events[0][1]["item"][field] = "" if late else value
    events[-1][1]["item"][field] = value
    return stream(*events)


# -- strings taken whole ----------------------------------------------------------------------------------------

WHOLE_STRINGS = {
    "chat-call-id": (CHAT, chat(fragment(id=f"call_{LONE}", type="function",
                                         function={"name": "f", "arguments": "{}"}), finish="tool_calls")),
    "chat-call-name": (CHAT, chat(fragment(id="call_1", type="function",
                                           function={"name": f"f{LONE}", "arguments": "{}"}), finish="tool_calls")),
    "chat-late-call-id": (CHAT, chat(fragment(type="function", function={"name": "f", "arguments": "{"}),
                                     fragment(id=f"call_{LONE}", function={"arguments": "}"}), finish="tool_calls")),
    "chat-late-call-name": (CHAT, chat(fragment(id="call_1", type="function", function={"arguments": "{"}),
                                       fragment(function={"name": f"f{LONE}", "arguments": "}"}), finish="tool_calls")),
    "chat-response-id": (CHAT, chat(chat_chunk(ch(content="a"), id=f"chatcmpl-{LONE}"))),
    "chat-model": (CHAT, chat(chat_chunk(ch(content="a"), model=f"m{LONE}"))),
    "responses-call-id": (RESPONSES, responses_call("call_id", f"call_{LONE}")),
    "responses-call-name": (RESPONSES, responses_call("name", f"weather{LONE}")),
    "responses-late-call-id": (RESPONSES, responses_call("call_id", f"call_{LONE}", late=True)),
    "responses-late-call-name": (RESPONSES, responses_call("name", f"weather{LONE}", late=True)),
    "anthropic-tool-id": (ANTHROPIC, message(start(0, {**TOOL, "id": f"toolu_{LONE}"}), stop(0), reason="tool_use")),
    "anthropic-tool-name": (ANTHROPIC, message(start(0, {**TOOL, "name": f"get_weather{LONE}"}), stop(0),
                                               reason="tool_use")),
    "anthropic-message-id": (ANTHROPIC, message(*text(0, "a"), head=anthropic_start(id=f"msg_{LONE}"))),
    "anthropic-model": (ANTHROPIC, message(*text(0, "a"), head=anthropic_start(model=f"claude{LONE}"))),
    "anthropic-signature": (ANTHROPIC, message(start(0, THINKING), delta(0, type="thinking_delta", thinking="t"),
                                               delta(0, type="signature_delta", signature=f"sig{LONE}"), stop(0),
                                               *text(1, "a"))),
    "gemini-call-name": (GEMINI, gemini({"functionCall": {"name": f"f{LONE}", "args": {}}})),
    "gemini-thought-signature": (GEMINI, gemini({"text": "a", "thoughtSignature": f"s{LONE}"})),
    "gemini-model": (GEMINI, gemini({"text": "a"}, modelVersion=f"g{LONE}")),
}


@pytest.mark.parametrize(("route", "data"), WHOLE_STRINGS.values(), ids=WHOLE_STRINGS.keys())
def test_a_string_taken_whole_that_holds_a_surrogate_is_refused_before_anything_announces_it(
        route: str, data: bytes) -> None:
    result, _ = check(route, data)  # (every update encodes: no update announced the string)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert not any(c.ready for c in result.tool_calls)
    encoded(result)  # (an item that held the string, kept verbatim, shows it with U+FFFD)
    clean = check(route, data.replace(b"\\ud800", b"x"))[0]
    assert (clean.outcome.value, clean.stage) == ("complete", None)


# -- objects kept verbatim --------------------------------------------------------------------------------------

def kept(value: str = "t", number: float = 0) -> dict[str, tuple[str, bytes]]:
    """Streams that keep the string ``value`` and ``number`` inside an object kept verbatim, one per route and way
    of keeping it (an event kept as it came, usage merged into the kept object, usage replacing the last one)."""
    citation = {"type": "char_location", "cited_text": "c", "document_index": 0, "document_title": value,
                "start_char_index": number, "end_char_index": 1}
    annotation = {"type": "url_citation", "url": "https://example.com/", "title": value, "start_index": number,
                  "end_index": 1}
    usage = {"tier": value, "cost": number}
    return {
        "anthropic-citation": (ANTHROPIC, message(
            start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="a"),
            delta(0, type="citations_delta", citation=citation), stop(0))),
        "anthropic-merged-usage": (ANTHROPIC, message(*text(0, "a"), head=anthropic_start(
            usage={"input_tokens": 3, **usage}))),
        "chat-logprobs": (CHAT, chat(chat_chunk({**ch(content="a"), "logprobs": {
            "content": [{"token": value, "logprob": number, "bytes": None, "top_logprobs": []}]}}))),
        "chat-usage": (CHAT, chat(chat_chunk(ch(content="a")), chat_chunk(usage={"total_tokens": 3, **usage}))),
        "responses-annotation": (RESPONSES, stream(*message_item(0, "a")[:3], ev(
            "response.output_text.annotation.added", item_id="msg_0", output_index=0, content_index=0,
            annotation_index=0, annotation=annotation), *message_item(0, "a")[3:])),
        "responses-usage": (RESPONSES, stream(*message_item(0, "a"), terminal=ev(
            "response.completed", response={"id": "resp_1", "status": "completed", "usage": usage}))),
        "gemini-code-part": (GEMINI, gemini({"text": "a"}, {"executableCode": {"language": "PYTHON", "code": value,
                                                                               "score": number}},
                                            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}})),
        "gemini-usage": (GEMINI, gemini({"text": "a"}, usageMetadata={"totalTokenCount": 3, **usage})),
    }


@pytest.mark.parametrize("name", kept(LONE).keys())
def test_an_object_kept_verbatim_with_a_lone_surrogate_fails_the_answer_and_the_result_shows_u_fffd(name: str) -> None:
    route, data = kept(LONE)[name]
    result, _ = check(route, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert "\ufffd" in encoded(result) and not result.committed


@pytest.mark.parametrize("name", kept(EMOJI).keys())
def test_an_object_kept_verbatim_with_an_escaped_pair_commits_the_character(name: str) -> None:
    route, data = kept(EMOJI)[name]
    assert b"\\ud83d\\ude00" in data  # (sse() escapes: the pair arrives as two escapes in one string)
    result, _ = check(route, data)
    assert (result.outcome.value, result.stage) == ("complete", None)
    assert EMOJI in encoded(result)


def test_a_cut_answer_that_kept_an_object_with_a_lone_surrogate_shows_it_with_u_fffd() -> None:
    route, data = kept(LONE)["anthropic-citation"]
    cut = data[: data.index(b"event: content_block_stop")]
    result, _ = check(route, cut)
    assert (result.outcome.value, result.text) == ("truncated", "a")
    message_blocks = result.assistant_message["content"]
    assert message_blocks[0]["citations"][0]["document_title"] == "\ufffd"


def test_a_refused_stop_reason_with_a_lone_surrogate_is_shown_with_u_fffd() -> None:
    result, _ = check(CHAT, chat(chat_chunk(ch(content="a")), finish=f"odd{LONE}"))
    assert (result.outcome.value, result.stop_reason, result.choices[0].stop_reason) == (
        "protocol_error", "odd\ufffd", "odd\ufffd")
    assert encoded(result)


def test_a_cut_tool_call_shows_its_input_with_u_fffd_where_half_a_pair_was_cut() -> None:
    data = sse(fragment(id="call_1", type="function", function={"name": "f", "arguments": '{"q":"\ud83d'}))
    result, _ = check(CHAT, data)
    assert result.outcome.value == "truncated"
    assert [c.input_text for c in result.tool_calls] == ['{"q":"\ufffd']


#: Tool calls whose input arrives as a JSON object (not as text to parse), with a lone surrogate in it: the call is
#: refused, and the part or block that carries the call is sent back verbatim in the assistant message.
WHOLE_INPUTS = {
    "gemini-call": (GEMINI, gemini({"functionCall": {"name": "f", "args": {"q": f"a{LONE}"}},
                                    "thoughtSignature": "s"})),
    "anthropic-call": (ANTHROPIC, message(start(0, {**TOOL, "input": {"q": f"a{LONE}"}}), stop(0),
                                          reason="tool_use")),
}


@pytest.mark.parametrize("name", WHOLE_INPUTS.keys())
def test_a_call_whose_whole_input_holds_a_lone_surrogate_fails_and_its_sent_back_part_shows_u_fffd(name: str) -> None:
    route, data = WHOLE_INPUTS[name]
    result, _ = check(route, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert [c.state for c in result.tool_calls] == ["invalid"]
    encoded(result)
    # the message part or block that carries the call, shown as the texts are
    assert '{"q": "a\ufffd"}' in json.dumps(result.assistant_message, ensure_ascii=False)


def test_a_kept_object_nested_as_deep_as_the_envelope_allows_is_checked_and_shown_without_recursion() -> None:
    # An unknown block kept verbatim (keep_unknown_items), its lone surrogate 505 levels down (the envelope's JSON
    # may nest 512): the check and the shown copy go through json in C, so nothing recurses in Python.
    deep: dict[str, Any] = {"s": LONE}
    for _ in range(505):
        deep = {"a": deep}
    data = message(start(0, {"type": "future_block", "x": deep}), stop(0), *text(1, "a"))
    result = replay(ANTHROPIC, [data], keep_unknown_items=True).result  # (one chunking: the parses are the cost)
    assert result is not None and (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert '"s": "\ufffd"' in encoded(result)


def test_a_refused_stop_reason_of_a_choice_that_did_not_decide_is_shown_with_u_fffd() -> None:
    # Choice 0's "length" decides (the first reason in index order that does not commit); choice 1's reason,
    # refused too and kept as it came, holds the surrogate only there.
    data = sse(chat_chunk(ch(content="a"), ch(index=1, content="b")),
               chat_chunk(ch(finish="length"), ch(index=1, finish=f"odd{LONE}")), DONE)
    result, _ = check(CHAT, data)
    assert (result.outcome.value, result.stop_reason) == ("truncated", "length")
    assert [c.stop_reason for c in result.choices] == ["length", "odd\ufffd"]


def test_a_refused_prompt_block_reason_with_a_lone_surrogate_is_shown_with_u_fffd() -> None:
    # A blocked prompt: no candidate, so the reason is the result's alone.
    result, _ = check(GEMINI, sse({"promptFeedback": {"blockReason": f"ODD{LONE}"}}))
    assert (result.choices, result.stop_reason) == ((), "ODD\ufffd")
    assert not result.committed and encoded(result)


def test_accepted_stop_reasons_with_a_surrogate_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match="surrogate"):
        StreamSession(CHAT, accepted_stop_reasons=[f"odd{LONE}"])


# -- NaN and Infinity in objects kept verbatim ------------------------------------------------------------------

#: A number the streams of :func:`kept` put where each route keeps it verbatim; each test writes a constant in
#: its place.
MARK = 4242.5
CONSTANTS = ("NaN", "Infinity", "-Infinity")
#: Numbers ``json.loads`` reads as ``inf`` / ``-inf``: an exponent past a float's range, or digits enough.
OVERFLOWS = ("1e999", "-1E+400", "1" + "0" * 400 + ".5", "0.1e0310")
#: Numbers at the edge of that range that stay finite (the largest float, one that underflows to 0).
FINITE_EDGES = ("1.7976931348623157e308", "1e-999", "-0.0")


def strictly_encoded(result: StreamResult) -> str:
    """The result as standard JSON (raises on a non-finite number) in UTF-8 (raises on a surrogate)."""
    return json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False).encode().decode()


def with_constant(data: bytes, constant: str) -> bytes:
    assert data.count(str(MARK).encode()) == 1
    return data.replace(str(MARK).encode(), constant.encode())


@pytest.mark.parametrize("name", kept(number=MARK).keys())
def test_an_object_kept_verbatim_with_a_finite_number_commits_it(name: str) -> None:
    route, data = kept(number=MARK)[name]
    result, _ = check(route, data)
    assert (result.outcome.value, result.stage) == ("complete", None)
    assert str(MARK) in strictly_encoded(result)


@pytest.mark.parametrize("number", FINITE_EDGES)
@pytest.mark.parametrize("name", ["chat-logprobs", "anthropic-citation", "gemini-usage"])
def test_an_object_kept_verbatim_with_a_finite_number_at_a_float_s_edge_commits_it(name: str, number: str) -> None:
    route, data = kept(number=MARK)[name]
    result, _ = check(route, with_constant(data, number))
    assert (result.outcome.value, result.stage) == ("complete", None)
    assert strictly_encoded(result)


@pytest.mark.parametrize("constant", CONSTANTS + OVERFLOWS, ids=lambda n: n if len(n) < 20 else f"{len(n)}-digits")
@pytest.mark.parametrize("name", kept(number=MARK).keys())
def test_an_object_kept_verbatim_with_nan_infinity_or_an_overflowing_number_fails_the_answer_and_shows_null(
        name: str, constant: str) -> None:
    route, data = kept(number=MARK)[name]
    result, _ = check(route, with_constant(data, constant))
    assert (result.outcome.value, result.stage) == ("payload_error", "non_finite_number")
    assert not result.committed and result.text == "a"
    shown = strictly_encoded(result)
    assert str(MARK) not in shown and "NaN" not in shown and "Infinity" not in shown
    assert constant not in shown


@pytest.mark.parametrize("constant", ["NaN", "1e999"])
def test_nan_or_an_overflow_where_the_route_keeps_nothing_does_not_fail_the_answer(constant: str) -> None:
    # A field of the chunk no result holds: the mark only asks for a look at the result, which finds nothing.
    data = chat(chat_chunk(ch(content="a"), extra_score=MARK))
    result, _ = check(CHAT, with_constant(data, constant))
    assert (result.outcome.value, result.text) == ("complete", "a")
    assert strictly_encoded(result)


@pytest.mark.parametrize("constant", ["NaN", "-1e999"])
def test_nan_or_an_overflow_in_an_event_with_whitespace_around_its_json_is_found_too(constant: str) -> None:
    # Both take the reference path (the scanner takes neither whole): only the number marks the event.
    route, data = kept(number=MARK)["chat-logprobs"]
    spaced = with_constant(data, constant).replace(b"data: {", b"data:  {", 1)  # (the data then starts with a space)
    result, _ = check(route, spaced)
    assert (result.outcome.value, result.stage) == ("payload_error", "non_finite_number")


def test_a_kept_usage_with_nan_that_a_later_usage_replaces_commits() -> None:
    # Chat's usage replaces the last one: the marked event's object is no longer kept when the answer commits.
    data = chat(chat_chunk(ch(content="a"), usage={"cost": MARK}), chat_chunk(usage={"total_tokens": 3}))
    result, _ = check(CHAT, with_constant(data, "NaN"))
    assert (result.outcome.value, result.usage) == ("complete", {"total_tokens": 3})


@pytest.mark.parametrize("constant", ["Infinity", "1e999"])
def test_a_cut_answer_that_kept_infinity_or_an_overflow_shows_it_as_null(constant: str) -> None:
    route, data = kept(number=MARK)["anthropic-citation"]
    cut = with_constant(data, constant)
    cut = cut[: cut.index(b"event: content_block_stop")]
    result, _ = check(route, cut)
    assert (result.outcome.value, result.text) == ("truncated", "a")
    assert result.assistant_message["content"][0]["citations"][0]["start_char_index"] is None
    assert strictly_encoded(result)
