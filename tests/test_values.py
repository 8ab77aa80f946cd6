"""Values that must never commit: unpaired surrogates in text or tool inputs (a pair split across two
deltas is one character) and non-finite numbers in tool inputs and call actions (every chunking)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay
from tests.test_retained import (
    ANTHROPIC,
    CHAT,
    GEMINI,
    RESPONSES,
    anthropic_stream,
    block,
    chat,
    chat_stream,
    choice,
    ev,
    gemini,
    gemini_stream,
    message_item,
    responses_stream,
    streamed_call,
)
from webclient import Limits
from webclient._values import (
    NON_FINITE_NUMBER,
    UNPAIRED_SURROGATE,
    clean_text,
    combine_surrogates,
    has_surrogate,
    held_back,
    may_hold_surrogate,
    parsed_value_encoder,
    shown_text,
    shown_value,
    value_problem,
)

HIGH, LOW = "\ud83d", "\ude00"
GRIN = "\U0001f600"


# -- the helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "cleaned"), [
    ("plain ascii", "plain ascii"),
    ("caf\u00e9 \u65e5\u672c " + GRIN, "caf\u00e9 \u65e5\u672c " + GRIN),
    ("a" + HIGH + LOW + "b", "a" + GRIN + "b"),
    (HIGH + LOW + HIGH + LOW, GRIN + GRIN),
    ("a" + HIGH, None),
    (LOW + "a", None),
    (LOW + HIGH, None),  # the wrong order is no pair
    (HIGH + HIGH + LOW, None),
    (HIGH + LOW + LOW, None),
])
def test_clean_text_combines_pairs_and_refuses_what_is_left_unpaired(text: str, cleaned: str | None) -> None:
    assert clean_text(text) == cleaned
    assert combine_surrogates(text) == (cleaned if cleaned is not None else combine_surrogates(text))
    assert has_surrogate(text) is (HIGH in text or LOW in text)


@pytest.mark.parametrize(("text", "shown"), [
    ("plain ascii", "plain ascii"),
    ("caf\u00e9 " + GRIN, "caf\u00e9 " + GRIN),
    ("a" + HIGH + LOW + "b", "a" + GRIN + "b"),
    ("a" + HIGH, "a\ufffd"),
    (LOW + "a", "\ufffda"),
    (LOW + HIGH, "\ufffd\ufffd"),  # the wrong order is no pair
    (HIGH + HIGH + LOW, "\ufffd" + GRIN),
    (HIGH + LOW + LOW, GRIN + "\ufffd"),
])
def test_shown_text_combines_pairs_and_shows_what_is_left_unpaired_as_u_fffd(text: str, shown: str) -> None:
    assert shown_text(text) == shown
    assert shown_text(text).encode("utf-8")
    assert (shown_text(text) is text) is (not has_surrogate(text))


ENCODED = [{"b": 1, "a": "\u65e5\u672c" + GRIN, "n": [1.5, None, True, -0.0, 10**20], "lone": "x" + HIGH},
           [], "s", {"k" + LOW: {"z": [], "y": {}}}, float("inf"), {"x": [float("nan")]}]


@pytest.mark.parametrize(("text", "shown", "held"), [
    ("", "", ""),
    ("plain", "plain", ""),
    ("a" + HIGH, "a", HIGH),
    ("a\ud800", "a", "\ud800"),  # the first high half
    ("a\udbff", "a", "\udbff"),  # the last high half
    ("a\udc00", "a\ufffd", ""),  # the first low half: never held
    ("a\ud7ff", "a\ud7ff", ""),  # the last character before the surrogates
    (HIGH + LOW + HIGH, GRIN, HIGH),
    (LOW + "a" + HIGH, "\ufffda", HIGH),
])
def test_held_back_holds_a_high_half_that_ends_the_text_and_shows_the_rest(text: str, shown: str, held: str) -> None:
    assert held_back(text) == (shown, held)


@pytest.mark.parametrize(("data", "answer"), [
    ('{"t": "plain"}', False),
    ('{"t": "a\\nb \\"q\\""}', False),  # backslashes, no \u escape
    ('{"t": "\\u00e9\\u65e5"}', False),  # escapes below the surrogates
    ('{"t": "\\ud7ff\\ue000"}', False),  # the characters either side of them
    ('{"t": "\\ud800"}', True),
    ('{"t": "\\uDBFF"}', True),
    ('{"t": "\\udc00"}', True),
    ('{"t": "\\udFfF"}', True),  # hex digits of either case
    ('{"t": "\\ud83d\\ude00"}', True),  # a pair: the caller's check then finds it whole
])
def test_may_hold_surrogate_answers_whether_json_text_escapes_a_surrogate(data: str, answer: bool) -> None:
    assert may_hold_surrogate(data) is answer


def test_shown_value_shows_every_string_and_key_and_non_finite_numbers_as_null_and_keeps_the_rest() -> None:
    value = ({"k" + LOW: ["x" + HIGH, 1.5, float("inf"), None, True, 7, {"in": HIGH + LOW, "n": float("nan")},
                          -float("inf"), -0.0, 1e308]},)
    assert shown_value(value) == ({"k\ufffd": ["x\ufffd", 1.5, None, None, True, 7, {"in": GRIN, "n": None},
                                                None, -0.0, 1e308]},)
    assert shown_value(["a", [HIGH]]) == ["a", ["\ufffd"]]
    assert shown_value("a" + HIGH) == "a\ufffd"
    assert [shown_value(v) for v in (None, 3, 2.5, False)] == [None, 3, 2.5, False]


@pytest.mark.parametrize("c_encoder", [True, False], ids=["c", "python"])
@pytest.mark.parametrize("allow_nan", [True, False])
def test_the_value_encoder_writes_what_json_dumps_writes(monkeypatch: pytest.MonkeyPatch, c_encoder: bool,
                                                         allow_nan: bool) -> None:
    """Key order as parsed, characters unescaped, lone surrogates kept (the surrogate check reads them in
    the text), and non-finite numbers refused exactly when ``json.dumps`` refuses them; with the C encoder
    and on an interpreter without it."""
    if not c_encoder:
        monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    dumps = parsed_value_encoder(allow_nan)
    for value in ENCODED:
        try:
            expected = json.dumps(value, ensure_ascii=False, allow_nan=allow_nan)
        except ValueError:
            with pytest.raises(ValueError):
                dumps(value)
            continue
        assert dumps(value) == expected


def test_the_payload_error_stages_are_their_documented_names() -> None:
    assert (value_problem({"x": float("inf")}), value_problem({"x": HIGH})) == ("non_finite_number",
                                                                               "unpaired_surrogate")


def test_text_without_surrogates_is_returned_as_is() -> None:
    text = "\u65e5\u672c" * 10
    assert clean_text(text) is text and combine_surrogates(text) is text


@pytest.mark.parametrize(("value", "stage"), [
    ({"x": 1.5, "y": [1, "s", None, True]}, None),
    ({"x": float("inf")}, NON_FINITE_NUMBER),
    ({"x": [{"y": -float("inf")}]}, NON_FINITE_NUMBER),
    ({"x": float("nan")}, NON_FINITE_NUMBER),
    ({"x": "a" + HIGH}, UNPAIRED_SURROGATE),
    ({"k" + LOW: 1}, UNPAIRED_SURROGATE),
    ({"x": GRIN}, None),
])
def test_value_problem_finds_non_finite_numbers_and_unpaired_surrogates_anywhere(value: Any, stage: str | None) -> None:
    assert value_problem(value) == stage


# -- text channels, every route ----------------------------------------------------------------------


def esc(text: str) -> str:
    """``text`` as it arrives in an ASCII-escaped JSON string (surrogates as ``\\uXXXX`` escapes)."""
    return json.dumps(text)[1:-1]


def chat_text(*pieces: str, channel: str = "content") -> bytes:
    return chat_stream([], [chat(choice(**{channel: p})) for p in pieces])


def gemini_text(*pieces: str, thought: bool = False) -> bytes:
    return gemini_stream([gemini({"text": p, "thought": True} if thought else {"text": p}) for p in pieces])


def anthropic_text(*pieces: str) -> bytes:
    return anthropic_stream(block(0, {"type": "text", "text": ""}, *({"type": "text_delta", "text": p}
                                                                     for p in pieces)))


def anthropic_thinking(*pieces: str) -> bytes:
    return anthropic_stream(block(0, {"type": "thinking", "thinking": ""}, *(
        {"type": "thinking_delta", "thinking": p} for p in pieces), {"type": "signature_delta", "signature": "s"}))


def responses_text(*pieces: str) -> bytes:
    return responses_stream(message_item(0, list(pieces)))


def responses_refusal(*pieces: str) -> bytes:
    return responses_stream(message_item(0, list(pieces), "refusal"))


TEXT_STREAMS = {
    "chat-content": (CHAT, chat_text, "text"),
    "chat-refusal": (CHAT, lambda *p: chat_text(*p, channel="refusal"), "refusal"),
    "chat-reasoning": (CHAT, lambda *p: chat_text(*p, channel="reasoning_content"), "reasoning"),
    "gemini-text": (GEMINI, gemini_text, "text"),
    "gemini-thought": (GEMINI, lambda *p: gemini_text(*p, thought=True), "reasoning"),
    "anthropic-text": (ANTHROPIC, anthropic_text, "text"),
    "anthropic-thinking": (ANTHROPIC, anthropic_thinking, "reasoning"),
    "responses-text": (RESPONSES, responses_text, "text"),
    "responses-refusal": (RESPONSES, responses_refusal, "refusal"),
}


@pytest.mark.parametrize("name", sorted(TEXT_STREAMS))
def test_a_pair_split_across_two_deltas_commits_as_the_character_it_encodes(name: str) -> None:
    route, make, channel = TEXT_STREAMS[name]
    result, _ = check(route, make("a" + HIGH, LOW + "b"))
    assert result.outcome.value == "complete"
    assert getattr(result, channel).startswith("a" + GRIN + "b")
    assert json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")  # encodable: no surrogate left


@pytest.mark.parametrize("name", sorted(TEXT_STREAMS))
@pytest.mark.parametrize("pieces", [("a" + HIGH, "b"), ("a", LOW), (HIGH,), ("x" + LOW + HIGH,)],
                         ids=["high-then-text", "lone-low", "lone-high", "reversed-pair"])
def test_an_unpaired_surrogate_in_any_text_channel_is_a_payload_error(name: str, pieces: tuple[str, ...]) -> None:
    route, make, _ = TEXT_STREAMS[name]
    assert outcome_of(route, make(*pieces)) == ("payload_error", UNPAIRED_SURROGATE)


def test_a_pair_split_across_two_gemini_message_parts_is_unpaired_in_both() -> None:
    data = gemini_stream([gemini({"text": "a" + HIGH, "thoughtSignature": "s1"}),
                          gemini({"text": LOW + "b", "thoughtSignature": "s2"})])
    assert outcome_of(GEMINI, data) == ("payload_error", UNPAIRED_SURROGATE)


def test_gemini_message_parts_keep_their_boundaries_after_pairs_are_combined() -> None:
    data = gemini_stream([gemini({"text": "a" + HIGH}), gemini({"text": LOW + "b"}),
                          gemini({"text": "c", "thoughtSignature": "s1"}), gemini({"text": HIGH}),
                          gemini({"text": LOW})])
    result, _ = check(GEMINI, data)
    assert result.outcome.value == "complete"
    assert result.text == "a" + GRIN + "bc" + GRIN + "."
    parts = result.assistant_message["parts"]  # type: ignore[index]
    assert [p["text"] for p in parts] == ["a" + GRIN + "b", "c", GRIN + "."]


def test_the_responses_done_item_agrees_with_deltas_that_split_a_pair() -> None:
    events = message_item(0, ["a" + HIGH, LOW])
    name, done = events[-1]
    events[-1] = (name, {**done, "item": {**done["item"], "content": [{"type": "output_text", "text": "a" + GRIN}]}})
    result, _ = check(RESPONSES, responses_stream(events))
    assert (result.outcome.value, result.text) == ("complete", "a" + GRIN)


def _encodes(result: Any) -> bool:
    return bool(json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8"))


@pytest.mark.parametrize("name", sorted(TEXT_STREAMS))
def test_a_refused_result_shows_its_split_pairs_combined_and_what_is_left_unpaired_as_u_fffd(name: str) -> None:
    route, make, channel = TEXT_STREAMS[name]
    result, _ = check(route, make("a" + HIGH, LOW + "b", "c" + HIGH))
    assert (result.outcome.value, result.stage) == ("payload_error", UNPAIRED_SURROGATE)
    assert getattr(result, channel).startswith("a" + GRIN + "bc\ufffd")
    assert _encodes(result)


@pytest.mark.parametrize("name", sorted(TEXT_STREAMS))
def test_a_stream_cut_between_the_halves_of_a_pair_shows_the_text_before_the_cut_encodable(name: str) -> None:
    # The stream ends right after the event whose delta ends in a high surrogate: truncated, and the
    # text that arrived (a pair split across earlier deltas combined) shows the half pair as U+FFFD.
    route, make, channel = TEXT_STREAMS[name]
    data = make("a" + HIGH, LOW + "b", "c" + HIGH, LOW + "d")
    cut = data.index(b"\n\n", data.index(esc("c" + HIGH).encode())) + 2
    result, _ = check(route, data[:cut])
    assert result.outcome.value == "truncated"
    assert getattr(result, channel) == "a" + GRIN + "bc\ufffd"
    assert _encodes(result)


def test_a_refused_gemini_message_shows_a_pair_split_across_two_parts_as_two_halves_in_both() -> None:
    data = gemini_stream([gemini({"text": "a" + HIGH}), gemini({"text": LOW + "b", "thoughtSignature": "s"})])
    result, _ = check(GEMINI, data)
    assert (result.outcome.value, result.stage) == ("payload_error", UNPAIRED_SURROGATE)
    parts = [part["text"] for part in result.assistant_message["parts"]]  # type: ignore[index]
    assert (result.text, parts) == ("a\ufffd\ufffdb.", ["a\ufffd", "\ufffdb", "."])


def test_a_refused_gemini_message_keeps_every_part_s_text_when_a_later_part_is_the_unpaired_one() -> None:
    # The first part's pair (split across two deltas of one part) is combined, the signed part after it
    # holds a lone surrogate: the check refuses the message without having moved any part's bounds.
    data = gemini_stream([gemini({"text": "a" + HIGH}), gemini({"text": LOW + "b"}),
                          gemini({"text": "c" + HIGH, "thoughtSignature": "s"})])
    result, _ = check(GEMINI, data)
    assert (result.outcome.value, result.stage) == ("payload_error", UNPAIRED_SURROGATE)
    parts = [part["text"] for part in result.assistant_message["parts"]]  # type: ignore[index]
    assert (result.text, parts) == ("a" + GRIN + "bc\ufffd.", ["a" + GRIN + "b", "c\ufffd", "."])


def test_a_gemini_text_held_past_its_last_charged_part_is_shown_too() -> None:
    # Under a tight retained ceiling a text part's text can be held and its part not charged (the
    # ceiling trips between the two): that text is shown after the parts' texts, its half pair as U+FFFD.
    data = gemini_stream([gemini({"text": "a" + HIGH}), gemini({"text": LOW + "b", "thoughtSignature": "s"})])
    past_parts = 0
    for ceiling in range(400, 700):
        result = replay(GEMINI, [data], limits=Limits(max_retained_chars=ceiling)).result
        assert result is not None and _encodes(result)
        message = result.assistant_message or {"parts": []}  # (none before the first candidate)
        parts = "".join(part["text"] for part in message["parts"])  # type: ignore[index]
        assert result.text.startswith(parts) and result.text in ("", "a\ufffd", "a\ufffd\ufffdb", "a\ufffd\ufffdb.")
        past_parts += len(result.text) > len(parts)
    assert past_parts  # (the case this test is for did arrive)


def test_a_lone_surrogate_is_only_checked_when_the_answer_would_commit() -> None:
    data = chat_text("a" + HIGH).replace(b'"finish_reason":"stop"', b'"finish_reason":"length"')
    assert outcome_of(CHAT, data) == ("truncated", "stop_reason")


# -- tool inputs ------------------------------------------------------------------------------------


def chat_call(*fragments: str) -> bytes:
    opened = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "f", "arguments": ""}}
    return chat_stream([chat(choice(tool_calls=[opened]))],
                       [chat(choice(tool_calls=[{"index": 0, "function": {"arguments": f}}])) for f in fragments],
                       [chat(choice(finish="tool_calls"))])


def test_a_pair_split_across_two_argument_fragments_is_one_character_in_the_arguments() -> None:
    result, _ = check(CHAT, chat_call('{"x": "a' + HIGH, LOW + '"}'))
    assert result.outcome.value == "complete"
    (call,) = result.tool_calls
    assert (call.state, call.arguments, call.input_text) == ("valid", {"x": "a" + GRIN}, '{"x": "a' + GRIN + '"}')


@pytest.mark.parametrize(("fragments", "stage"), [
    (('{"x": "\\ud800"}',), UNPAIRED_SURROGATE),
    (('{"x\\udc00": 1}',), UNPAIRED_SURROGATE),
    (('{"x": "' + HIGH + '"}',), UNPAIRED_SURROGATE),
    (('{"x": 1e999}',), NON_FINITE_NUMBER),
    (('{"x": [1, -1e999]}',), NON_FINITE_NUMBER),
    (('{"x": 1', 'e999}'), NON_FINITE_NUMBER),
    (('{"x": NaN}',), "tool_json"),  # not JSON at all
    (('{"x": "\\ud83d\\ude00"}',), None),  # an escaped pair is a character
])
def test_tool_arguments_with_unpaired_surrogates_or_non_finite_numbers_never_commit(
        fragments: tuple[str, ...], stage: str | None) -> None:
    result, _ = check(CHAT, chat_call(*fragments))
    if stage is None:
        assert (result.outcome.value, result.tool_calls[0].state) == ("complete", "valid")
        return
    assert (result.outcome.value, result.stage) == ("payload_error", stage)
    (call,) = result.tool_calls
    assert (call.state, call.arguments, call.ready) == ("invalid", None, False)


def test_a_pair_split_across_server_tool_input_fragments_is_one_character() -> None:
    data = anthropic_stream(block(0, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
                                  {"type": "input_json_delta", "partial_json": '{"q": "a' + HIGH},
                                  {"type": "input_json_delta", "partial_json": LOW + '"}'}))
    result, _ = check(ANTHROPIC, data)
    assert result.outcome.value == "complete"
    assert result.items[0]["input"] == {"q": "a" + GRIN}


def test_a_custom_call_s_free_text_input_with_an_unpaired_surrogate_is_refused() -> None:
    opened = {"index": 0, "id": "c", "type": "custom", "custom": {"name": "g", "input": "ab" + HIGH}}
    data = chat_stream([chat(choice(tool_calls=[opened]))], [], [chat(choice(finish="tool_calls"))])
    assert outcome_of(CHAT, data) == ("payload_error", UNPAIRED_SURROGATE)


def gemini_args(args: str) -> bytes:
    """A whole Gemini call whose ``args`` are the given raw JSON (the envelope is lenient)."""
    data = gemini_stream([gemini({"functionCall": {"name": "f", "args": {"x": 0}}})])
    return data.replace(b'{"x":0}', args.encode())


@pytest.mark.parametrize(("data", "route"), [
    pytest.param(gemini_args('{"x": NaN}'), GEMINI, id="gemini-args-nan"),
    pytest.param(gemini_args('{"x": [Infinity]}'), GEMINI, id="gemini-args-infinity"),
    pytest.param(gemini_args('{"x": 1e999}'), GEMINI, id="gemini-args-overflow"),
    pytest.param(gemini_stream(streamed_call([{"jsonPath": "$.x", "numberValue": 0}])).replace(
        b'"numberValue":0', b'"numberValue":1e999'), GEMINI, id="gemini-number-value"),
    pytest.param(gemini_stream(streamed_call([{"jsonPath": "$.x", "numberValue": 0}])).replace(
        b'"numberValue":0', b'"numberValue":NaN'), GEMINI, id="gemini-number-value-nan"),
    pytest.param(responses_stream([
        ev("response.output_item.added", output_index=0, item={"id": "cu_0", "type": "computer_call"}),
        ev("response.output_item.done", output_index=0,
           item={"id": "cu_0", "type": "computer_call", "call_id": "c", "action": {"type": "click", "x": 0}})]
    ).replace(b'"x":0', b'"x":-Infinity'), RESPONSES, id="responses-computer-action"),
    pytest.param(anthropic_stream(block(0, {"type": "tool_use", "id": "t", "name": "f", "input": {"x": 0}})
                                  ).replace(b'"x":0', b'"x":1e999'), ANTHROPIC, id="anthropic-whole-input"),
    pytest.param(anthropic_stream(block(0, {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                                        {"type": "input_json_delta", "partial_json": '{"x": 1e400}'})),
                 ANTHROPIC, id="anthropic-streamed-input"),
    pytest.param(anthropic_stream(block(0, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
                                        {"type": "input_json_delta", "partial_json": '{"x": 1e400}'})),
                 ANTHROPIC, id="anthropic-server-tool-input"),
])
def test_non_finite_numbers_in_call_inputs_and_actions_are_a_payload_error(data: bytes, route: str) -> None:
    assert outcome_of(route, data) == ("payload_error", NON_FINITE_NUMBER)


def test_gemini_args_with_an_unpaired_surrogate_are_refused() -> None:
    assert outcome_of(GEMINI, gemini_args('{"x": "\\udbff"}')) == ("payload_error", UNPAIRED_SURROGATE)


def test_the_replay_command_prints_valid_json_for_a_refused_lone_surrogate(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Any) -> None:
    from webclient._cli import main

    capture = tmp_path / "lone.sse"
    capture.write_bytes(chat_text("a" + HIGH))
    assert main(["replay", "--route", CHAT, str(capture)]) == 1
    out = json.loads(capsys.readouterr().out)
    # (refused for the lone surrogate, which the result shows as U+FFFD)
    assert (out["outcome"], out["stage"], out["text"]) == ("payload_error", UNPAIRED_SURROGATE, "a\ufffd")


def test_surrogate_checks_run_once_per_channel_not_per_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    import webclient._routes._base as base

    calls: list[int] = []
    real = base.clean_text

    def counting(text: str) -> str | None:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(base, "clean_text", counting)
    session = replay(CHAT, [chat_text(*["\u65e5"] * 50)])
    assert session.result is not None and session.result.outcome.value == "complete"
    assert calls == [50, 0, 0]  # text, refusal, reasoning: once each, at the terminal condition
