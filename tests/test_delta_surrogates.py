"""Provisional deltas never show a surrogate, even when a provider splits a pair across two events.

A character outside the Basic Multilingual Plane reaches a route as a JSON escape pair (``\\ud83d\\ude00``);
a provider, or a proxy that re-chunks text by UTF-16 length, can send the two halves in two deltas.
Each event's JSON then decodes to a lone half. The committed text joins them (every route's check), and
so must the deltas a caller prints, re-encodes or forwards as it goes: a high half that ends a delta waits
for the next delta of the same buffer (text channel or tool input), a half that stays unpaired is shown as
U+FFFD, and the result, committed or not, is unchanged by any of it. Every test runs under every chunking
(``route_fixtures.check``, which also encodes every provisional update on its own as UTF-8).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, sse
from webclient import StreamSession

CHAT, GEMINI = "openai-chat", "gemini"
DONE = "[DONE]"
EMOJI = "\U0001f600"

pytestmark = pytest.mark.usefixtures("no_safety_net")


def chunk(*choices: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m-1", "choices": list(choices)}


def ch(index: int = 0, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


def call_fragment(args: str, **first: Any) -> dict[str, Any]:
    return {"index": 0, **first, "function": {**({"name": "f"} if first else {}), "arguments": args}}


def per_feed(route: str, data: bytes) -> list[list[dict[str, Any]]]:
    """The provisional updates of each feed when every event is fed on its own (final update excluded)."""
    session = StreamSession(route)
    session.open(200, "text/event-stream")
    feeds = [[u.to_dict() for u in session.feed(event + b"\n\n")] for event in data.split(b"\n\n")[:-1]]
    session.finish()
    return [[u for u in updates if u["kind"] not in ("committed", "failed")] for updates in feeds]


def texts(updates: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(int(u["index"]), str(u["text"])) for u in updates if u["kind"] == "text_delta"]


def test_a_pair_split_across_two_events_reaches_the_caller_as_one_character_in_the_second_delta() -> None:
    data = sse(chunk(ch(content="a\ud83d")), chunk(ch(content="\ude00b")), chunk(ch(finish="stop")), DONE)
    result, merged = check(CHAT, data)
    assert (result.outcome.value, result.text) == ("complete", f"a{EMOJI}b")
    assert texts(merged) == [(0, f"a{EMOJI}b")]
    # fed one event at a time: the high half is not shown with "a", it comes with its other half
    assert [texts(updates) for updates in per_feed(CHAT, data)[:2]] == [[(0, "a")], [(0, f"{EMOJI}b")]]


def test_a_delta_that_is_only_a_high_half_shows_nothing_until_the_other_half_comes() -> None:
    data = sse(chunk(ch(content="\ud83d")), chunk(ch(content="\ude00")), chunk(ch(finish="stop")), DONE)
    assert [texts(updates) for updates in per_feed(CHAT, data)[:2]] == [[], [(0, EMOJI)]]
    result, merged = check(CHAT, data)
    assert (result.outcome.value, result.text, texts(merged)) == ("complete", EMOJI, [(0, EMOJI)])


@pytest.mark.parametrize(("contents", "shown"), [
    (["\ude00x"], "\ufffdx"),  # a low half with nothing before it
    (["a\ude00"], "a\ufffd"),  # a low half after a character that is no high half
    (["\ud83d", "x"], "\ufffdx"),  # a held high half whose next delta does not start with its other half
    (["\ud83d\ud83d", "\ude00"], f"\ufffd{EMOJI}"),  # two high halves in a row: the first stays unpaired
], ids=["low-first", "low-after-ascii", "high-then-ascii", "high-high-low"])
def test_a_half_that_stays_unpaired_is_shown_as_u_fffd_and_the_answer_does_not_commit(
        contents: list[str], shown: str) -> None:
    data = sse(*(chunk(ch(content=c)) for c in contents), chunk(ch(finish="stop")), DONE)
    result, merged = check(CHAT, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert texts(merged) == [(0, shown)]
    assert result.text == shown  # the uncommitted result shows the same text


def test_a_high_half_that_ends_the_answer_is_never_shown_in_a_delta_and_the_result_shows_u_fffd() -> None:
    data = sse(chunk(ch(content="a\ud83d")), chunk(ch(finish="stop")), DONE)
    result, merged = check(CHAT, data)
    assert (result.outcome.value, result.stage, result.text) == ("payload_error", "unpaired_surrogate", "a\ufffd")
    assert texts(merged) == [(0, "a")]
    cut = sse(chunk(ch(content="a\ud83d")))  # cut off after the half: truncated, shown the same way
    result, merged = check(CHAT, cut)
    assert (result.outcome.value, result.text, texts(merged)) == ("truncated", "a\ufffd", [(0, "a")])


def test_a_held_half_waits_while_another_choice_s_deltas_are_shown() -> None:
    data = sse(chunk(ch(content="a\ud83d")), chunk(ch(index=1, content="x\ud83d")), chunk(ch(content="\ude00")),
               chunk(ch(index=1, content="\ude00y")), chunk(ch(finish="stop")), chunk(ch(index=1, finish="stop")),
               DONE)
    session = StreamSession(CHAT)
    session.open(200, "text/event-stream")
    updates = [u.to_dict() for u in session.feed(data)]
    assert texts(updates) == [(0, "a"), (1, "x"), (0, EMOJI), (1, f"{EMOJI}y")]
    result, _ = check(CHAT, data)
    assert [c.text for c in result.choices] == [f"a{EMOJI}", f"x{EMOJI}y"]


def test_a_tool_input_fragment_holds_a_high_half_back_the_same_way_and_the_arguments_have_the_character() -> None:
    data = sse(chunk(ch(tool_calls=[call_fragment('{"q":"\ud83d', id="call_1", type="function")])),
               chunk(ch(tool_calls=[call_fragment('\ude00"}')])), chunk(ch(finish="tool_calls")), DONE)
    fragments = [[str(u["fragment"]) for u in updates if u["kind"] == "tool_input_delta"]
                 for updates in per_feed(CHAT, data)[:2]]
    assert fragments == [['{"q":"'], [f'{EMOJI}"}}']]
    result, _ = check(CHAT, data)
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("valid", {"q": EMOJI})]


def test_a_gemini_string_argument_split_between_the_halves_of_a_pair_is_one_character() -> None:
    # Chat, Responses and Anthropic combine a pair split across input fragments; Gemini's streamed string
    # values are joined the same way (they were refused as unpaired before).
    def fc(**call: Any) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "index": 0}],
                "responseId": "r-1"}

    def piece(value: str) -> dict[str, Any]:
        return fc(partialArgs=[{"jsonPath": "$.p", "stringValue": value, "willContinue": True}], willContinue=True)

    end = fc()
    end["candidates"][0]["finishReason"] = "STOP"
    data = sse(fc(name="f", willContinue=True), piece("a\ud83d"), piece("\ude00"), end)
    result, merged = check(GEMINI, data)
    assert (result.outcome.value, [c.arguments for c in result.tool_calls]) == ("complete", [{"p": f"a{EMOJI}"}])
    assert "".join(str(u["fragment"]) for u in merged if u["kind"] == "tool_input_delta") == f"a{EMOJI}"
    lone = sse(fc(name="f", willContinue=True), piece("a\ud83d"), piece("b"), end)
    result, merged = check(GEMINI, lone)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert "".join(str(u["fragment"]) for u in merged if u["kind"] == "tool_input_delta") == "a\ufffdb"
