"""Route ``openai-chat`` at its edges: malformed fields, fields that share a delta, how fragments
find their call, and what a failing chunk leaves behind (every chunking).

Found by mutation testing (``build_scripts/mutation.py``): each test fails if a check, a branch or
a keying rule of ``webclient/_routes/openai_chat.py`` is changed. They run without the session's
safety net (``no_safety_net``), so a malformed field must be classified by an explicit check.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from webclient import Limits, StreamSession, ToolInputDelta
from webclient._limits import ENTRY_CHARS

ROUTE = "openai-chat"
DONE = "[DONE]"

pytestmark = pytest.mark.usefixtures("no_safety_net")


def chunk(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-9", "object": "chat.completion.chunk", "model": "m-1", "choices": list(choices), **extra}


def ch(index: int = 0, finish: Any = None, delta: Any = None, **fields: Any) -> dict[str, Any]:
    return {"index": index, "delta": fields if delta is None else delta, "finish_reason": finish}


def fn(index: Any = 0, id: Any = None, name: Any = None, args: Any = None, **extra: Any) -> dict[str, Any]:
    frag: dict[str, Any] = {"index": index, **extra}
    if id is not None:
        frag["id"] = id
    function = {k: v for k, v in (("name", name), ("arguments", args)) if v is not None}
    if function:
        frag["function"] = function
    return frag


def calls(result: Any) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.kind, c.state, c.arguments) for c in result.tool_calls]


def tool_stream(*fragments: dict[str, Any]) -> bytes:
    return sse(*(chunk(ch(tool_calls=[f])) for f in fragments), chunk(ch(finish="tool_calls")), DONE)


# -- deltas --------------------------------------------------------------------------------------

@pytest.mark.parametrize("delta", ["x", "", [], [{"content": "a"}], 0, 5, False, True],
                         ids=["string", "empty-string", "empty-list", "list", "zero", "number", "false", "true"])
def test_a_delta_that_is_not_an_object_is_protocol_error_even_when_empty(delta: Any) -> None:
    data = sse(chunk(ch(content="a")), chunk(ch(delta=delta, finish="stop")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "a")
    assert result.choices[0].stop_reason is None  # nothing after the bad delta was taken


def test_a_null_or_empty_delta_carries_nothing_and_is_fine() -> None:
    data = sse({"id": "x", "choices": [{"index": 0, "delta": None, "finish_reason": None}]},
               chunk(ch(content="a")), chunk(ch(delta={}, finish="stop")), DONE)
    assert outcome_of(ROUTE, data) == ("complete", None)


@pytest.mark.parametrize(
    ("field", "value", "seen"),
    [
        ("refusal", "no", lambda r: r.refusal == "no"),
        ("reasoning_content", "think", lambda r: r.reasoning == "think"),
        ("reasoning", "think", lambda r: r.reasoning == "think"),
        ("tool_calls", [fn(0, "c", "f", "{}")], lambda r: [c.arguments for c in r.tool_calls] == [{}]),
        ("function_call", {"name": "f", "arguments": "{}"}, lambda r: [c.name for c in r.tool_calls] == ["f"]),
        ("annotations", [{"type": "url_citation"}], lambda r: r.citations == ({"type": "url_citation"},)),
    ],
)
def test_content_and_one_other_field_in_the_same_delta_are_both_kept(field: str, value: Any, seen: Any) -> None:
    data = sse(chunk(ch(delta={"content": "hi", field: value})), chunk(ch(finish="stop")), DONE)
    result, _ = check(ROUTE, data)
    assert result.outcome.value == "complete" and result.text == "hi" and seen(result)


@pytest.mark.parametrize(
    "late",
    [{"content": "b"}, {"refusal": "b"}, {"reasoning_content": "b"}, {"reasoning": "b"},
     {"tool_calls": [fn(0, "c", "f", "{}")]}, {"function_call": {"name": "f"}}],
    ids=["content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call"],
)
def test_any_payload_for_a_finished_choice_is_protocol_error_closed_block(late: dict[str, Any]) -> None:
    data = sse(chunk(ch(content="a", finish="stop")), chunk(ch(delta=late, finish="content_filter")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "closed_block")
    assert result.choices[0].stop_reason == "stop"  # the failing chunk's finish reason was not taken


def test_empty_placeholders_for_a_finished_choice_are_not_payload() -> None:
    late = {"role": "assistant", "content": "", "refusal": None, "tool_calls": [], "function_call": None}
    data = sse(chunk(ch(content="a", finish="stop")), chunk(ch(delta=late)), DONE)
    assert outcome_of(ROUTE, data) == ("complete", None)


# -- what a failing chunk leaves behind ------------------------------------------------------------

OPEN_CALL = chunk(ch(tool_calls=[fn(0, "c", "f", '{"a": 1}')]))


@pytest.mark.parametrize(
    "bad",
    [
        ch(delta="x", finish="tool_calls"),
        ch(finish="tool_calls", content=5),
        ch(finish="tool_calls", refusal=5, content="late"),
        ch(finish="tool_calls", reasoning=["x"], content="late"),
        ch(finish="tool_calls", tool_calls="x", content="late"),
        ch(finish="tool_calls", tool_calls=[5], content="late"),
        ch(finish="tool_calls", function_call="x", content="late"),
        ch(finish="tool_calls", content="late", annotations="x"),
        {**ch(content="late", finish="tool_calls"), "logprobs": "x"},
        {**ch(content="late", finish="tool_calls"), "logprobs": {"content": "x"}},
        {**ch(content="late", finish="tool_calls"), "logprobs": {"content": [], "refusal": 5}},
        ch(finish=5, content="late"),
        ch(finish="tool_calls", refusal=5, tool_calls=[fn(1, "d", "g", "{}")]),
        ch(finish="tool_calls", reasoning_content=5, function_call={"name": "g"}),
        ch(finish="tool_calls", tool_calls=[5], function_call={"name": "g"}),
        ch(finish="tool_calls", function_call=5, annotations=[{"type": "url_citation"}]),
    ],
    ids=["delta-string", "content-number", "refusal-number", "reasoning-list", "tool-calls-string",
         "tool-call-number", "function-call-string", "annotations-string", "logprobs-string",
         "logprobs-content-string", "logprobs-refusal-number", "finish-reason-number", "refusal-then-tool-call",
         "reasoning-then-function-call", "tool-call-then-function-call", "function-call-then-annotations"],
)
def test_a_malformed_field_ends_the_attempt_and_nothing_after_it_is_taken(bad: dict[str, Any]) -> None:
    result, updates = check(ROUTE, sse(OPEN_CALL, chunk(bad), DONE))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert calls(result) == [("c", "f", "function", "streaming", None)]  # the finish reason never closed it
    assert result.choices[0].stop_reason is None and result.logprobs is None and result.citations == ()
    assert [u.get("state") for u in updates if u["kind"] == "tool_call"] == ["streaming"]


@pytest.mark.parametrize("usage", ["x", [1], 5, True])
def test_usage_that_is_not_an_object_is_protocol_error(usage: Any) -> None:
    data = sse(chunk(ch(content="a", finish="stop")), chunk(usage=usage), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.usage) == ("protocol_error", "envelope", None)


def test_logprobs_past_the_item_ceiling_are_not_kept_and_the_chunk_goes_no_further() -> None:
    tok = [{"token": "x", "logprob": 0, "bytes": [120], "top_logprobs": []}]
    data = sse(OPEN_CALL, chunk({**ch(finish="tool_calls"), "logprobs": {"content": tok}}), DONE)
    result, _ = check(ROUTE, data, limits=Limits(max_item_chars=10))
    assert (result.outcome.value, result.stage, result.logprobs) == ("buffer_limit", "items", None)
    assert calls(result) == [("c", "f", "function", "streaming", None)]


def test_refusal_logprobs_are_kept_apart_from_content_logprobs() -> None:
    tok = [{"token": "no", "logprob": -1, "bytes": [110, 111], "top_logprobs": []}]
    data = sse(chunk({**ch(refusal="no"), "logprobs": {"content": None, "refusal": tok}}), chunk(ch(finish="stop")),
               DONE)
    result, _ = check(ROUTE, data)
    assert result.logprobs == {"content": [], "refusal": tok}


# -- identity and the terminal ---------------------------------------------------------------------

def test_an_id_and_a_model_arriving_in_later_chunks_are_still_recorded() -> None:
    data = sse({"id": "", "choices": []}, {"id": "chatcmpl-1", "choices": []},
               {"model": "m-2", "id": "chatcmpl-other", "choices": [ch(content="a", finish="stop")]}, DONE)
    result, _ = check(ROUTE, data)
    assert (result.response_id, result.model) == ("chatcmpl-1", "m-2")


def test_an_id_arriving_after_the_model_is_still_recorded() -> None:
    data = sse({"model": "m-0", "choices": []}, {"id": "chatcmpl-2", "model": "m-9", "choices": []},
               chunk(ch(content="a", finish="stop")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.response_id, result.model) == ("chatcmpl-2", "m-0")


def test_a_chunk_whose_text_passes_the_ceiling_takes_nothing_after_it() -> None:
    data = sse(OPEN_CALL, chunk(ch(content="abcd", refusal="r", finish="tool_calls")), DONE)
    result, _ = check(ROUTE, data, limits=Limits(max_text_chars=3))
    assert (result.outcome.value, result.stage, result.text, result.refusal) == ("buffer_limit", "text", "", "")
    assert calls(result) == [("c", "f", "function", "streaming", None)]


def test_done_with_an_unfinished_choice_reports_the_first_choices_own_stop_reason() -> None:
    data = sse(chunk(ch(0, content="a", finish="stop")), chunk(ch(1, content="b")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "missing_stop", "stop")
    first_open = sse(chunk(ch(0, content="a")), chunk(ch(1, content="b", finish="stop")), DONE)
    assert check(ROUTE, first_open)[0].stop_reason is None
    assert check(ROUTE, sse(DONE))[0].stop_reason is None


# -- tool calls ----------------------------------------------------------------------------------

def test_a_call_first_seen_by_id_then_given_an_index_stays_one_call() -> None:
    frags = ({"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a"'}},
             fn(3, "call_1", args=": 1"), fn(3, args="}"))
    result, _ = check(ROUTE, tool_stream(*frags))
    assert calls(result) == [("call_1", "f", "function", "valid", {"a": 1})]


def test_a_later_fragment_with_another_name_does_not_rename_the_call_and_never_commits() -> None:
    # (Until 2026-12-05 the call kept its first name and committed: the stream contradicts itself about
    # which tool to run, so nothing of it may run.)
    result, _ = check(ROUTE, tool_stream(fn(0, "c", "read_file", "{}"), fn(0, name="delete_all")))
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert calls(result) == [("c", "read_file", "function", "streaming", None)]


def test_a_name_arriving_late_fills_the_call_and_later_deltas_carry_it() -> None:
    data = tool_stream(fn(0, "c", args='{"a":'), fn(0, name="f", args="1}"))
    result, _ = check(ROUTE, data)
    assert calls(result) == [("c", "f", "function", "valid", {"a": 1})]
    # In one feed, the delta before the name was announced without it, the one after with it.
    session = StreamSession(ROUTE)
    session.open(200, "text/event-stream")
    deltas = [(u.name, u.fragment) for u in session.feed(data) if isinstance(u, ToolInputDelta)]
    assert deltas == [(None, '{"a":'), ("f", "1}")]


def test_a_fragment_with_type_custom_and_no_body_yet_opens_a_custom_call() -> None:
    data = tool_stream({"index": 0, "id": "c", "type": "custom"}, {"index": 0, "custom": {"name": "sh", "input": "ls"}})
    result, _ = check(ROUTE, data)
    assert calls(result) == [("c", "sh", "custom", "valid", None)]
    assert result.tool_calls[0].input_text == "ls"


@pytest.mark.parametrize(
    "fragment",
    [
        fn("0", "c", "f", "{}"), fn(1.0, "c", "f", "{}"), fn(True, "c", "f", "{}"), fn([0], "c", "f", "{}"),
        fn(0, 5, "f", "{}"), fn(0, ["c"], "f", "{}"), fn(0, "c", "f", "{}", type=7), fn(0, "c", "f", "{}", type=["x"]),
        {"index": 0, "id": "c", "function": "f"}, {"index": 0, "id": "c", "function": ["f"]},
        fn(0, "c", 5, "{}"), fn(0, "c", {"n": 1}, "{}"), fn(0, "c", "f", {"a": 1}), fn(0, "c", "f", 5),
        {"index": 0, "id": "c", "type": "custom", "custom": "x"}, {"index": 0, "custom": {"name": "f", "input": 5}},
        5, "x", [fn(0, "c", "f", "{}")],
    ],
    ids=["index-string", "index-float", "index-bool", "index-list", "id-number", "id-list", "type-number",
         "type-list", "function-string", "function-list", "name-number", "name-object", "arguments-object",
         "arguments-number", "custom-string", "custom-input-number", "fragment-number", "fragment-string",
         "fragment-list"],
)
def test_a_malformed_tool_call_fragment_is_protocol_error_and_opens_nothing(fragment: Any) -> None:
    result, updates = check(ROUTE, tool_stream(fragment))
    assert (result.outcome.value, result.stage, result.tool_calls) == ("protocol_error", "envelope", ())
    assert updates == []


@pytest.mark.parametrize("legacy", ["x", ["f"], {"name": 5}, {"name": "f", "arguments": {"a": 1}}],
                         ids=["string", "list", "name-number", "arguments-object"])
def test_a_malformed_legacy_function_call_is_protocol_error_and_opens_nothing(legacy: Any) -> None:
    data = sse(chunk(ch(function_call=legacy)), chunk(ch(finish="function_call")), DONE)
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.tool_calls, updates) == ("protocol_error", "envelope", (), [])


def test_the_legacy_call_past_the_call_ceiling_is_buffer_limit() -> None:
    data = sse(chunk(ch(tool_calls=[fn(0, "c", "f", "{}")])), chunk(ch(function_call={"name": "g"})),
               chunk(ch(finish="tool_calls")), DONE)
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_calls=1)) == ("buffer_limit", "tool_calls")
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_calls=2)) == ("complete", None)


# -- the retained ceiling at each entry a fragment adds ----------------------------------------------

def retained_after(data: bytes) -> int:
    """The retained-size account after ``data`` (whole), for a ceiling that trips at the next charge."""
    session = StreamSession(ROUTE)
    session.open(200, "text/event-stream")
    session.feed(data)
    assert not session.done
    return session.retained_chars


def test_a_stop_reason_past_the_retained_ceiling_fails_with_the_text_that_arrived_its_split_pair_combined() -> None:
    # The text holds a pair split across two deltas; the stop reason's charge trips the ceiling, so the
    # texts are never checked for committing. The result still shows the pair as its character; the
    # accumulation (and its account) keeps the text as it came.
    head = sse(chunk(ch(role="assistant", content="a\ud83d")), chunk(ch(content="\ude00b")))
    before = retained_after(head)
    data = head + sse(chunk(ch(finish="stop")), DONE)
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=before + len("stop") - 1))
    assert (result.outcome.value, result.stage, result.text) == ("buffer_limit", "retained", "a\U0001f600b")
    session = replay(ROUTE, [data], limits=Limits(max_retained_chars=before + len("stop") - 1))
    assert session.retained_chars == before


def _two_calls(first: str) -> tuple[bytes, bytes]:
    """Two calls whose input has arrived (the first with input ``first``), and their finish chunk."""
    opened = [{"index": i, "id": f"call_{i}", "type": "function", "function": {"name": "f", "arguments": ""}}
              for i in (0, 1)]
    inputs = [{"index": 0, "function": {"arguments": first}}, {"index": 1, "function": {"arguments": '{"b": 2}'}}]
    head = sse(chunk(ch(role="assistant", tool_calls=opened)), chunk(ch(tool_calls=inputs)))
    return head, sse(chunk(ch(finish="tool_calls")), DONE)


def test_a_call_whose_input_is_refused_at_the_finish_leaves_the_calls_after_it_unclosed() -> None:
    head, tail = _two_calls('{"a": ')
    result, _ = check(ROUTE, head + tail)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_json")
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("invalid", None), ("streaming", None)]


def test_a_call_whose_parsed_arguments_pass_the_retained_ceiling_is_left_closed_without_them() -> None:
    # The finish chunk holds its finish reason, closes the first call and charges its parsed arguments (by
    # its input's length): one character past the ceiling, the call keeps no verdict and no arguments,
    # and the second call is not closed.
    head, tail = _two_calls('{"a": 1}')
    limits = Limits(max_retained_chars=retained_after(head) + len("tool_calls") + len('{"a": 1}') - 1)
    result, _ = check(ROUTE, head + tail, limits=limits)
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert [(c.state, c.arguments) for c in result.tool_calls] == [("closed", None), ("streaming", None)]
    full, _ = check(ROUTE, head + tail, limits=Limits(max_retained_chars=limits.max_retained_chars + 1))
    assert full.tool_calls[0].state == "valid"  # (one more character and the first call is settled)


def tripped_call(head: bytes, fragment: dict[str, Any], charge: int) -> tuple[Any, ...]:
    """Replay ``head`` then ``fragment``'s chunk with a ceiling that lets ``charge`` more characters
    in and no more; the result's ``(outcome, stage)`` and ``(name, input_text)`` of each call."""
    data = head + sse(chunk(ch(tool_calls=[fragment])), chunk(ch(finish="tool_calls")), DONE)
    limits = Limits(max_retained_chars=retained_after(head) + charge)
    result, _ = check(ROUTE, data, limits=limits)
    return (result.outcome.value, result.stage), [(c.name, c.input_text) for c in result.tool_calls]


HEAD = sse(chunk(ch(role="assistant", content="a")))


def test_a_call_opened_by_id_whose_id_entry_passes_the_retained_ceiling_takes_none_of_its_arguments() -> None:
    # Charges: the call (an entry, its id and name), then its id entry; the arguments would come last.
    fragment = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    opened = ENTRY_CHARS + len("c") + len("f")
    assert tripped_call(HEAD, fragment, opened + ENTRY_CHARS - 1) == (("buffer_limit", "retained"), [("f", "")])
    assert tripped_call(HEAD, fragment, opened + ENTRY_CHARS + 1) == (("buffer_limit", "retained"), [("f", "")])
    assert tripped_call(HEAD, fragment, opened + ENTRY_CHARS + 2)[1] == [("f", "{}")]


def test_a_call_opened_by_index_whose_index_entry_passes_the_retained_ceiling_takes_none_of_its_arguments() -> None:
    fragment = {"index": 0, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    opened = ENTRY_CHARS + len("f")
    assert tripped_call(HEAD, fragment, opened + ENTRY_CHARS - 1) == (("buffer_limit", "retained"), [("f", "")])
    assert tripped_call(HEAD, fragment, opened + ENTRY_CHARS + 2)[1] == [("f", "{}")]


def test_a_late_name_that_passes_the_retained_ceiling_is_not_taken_and_neither_are_its_arguments() -> None:
    head = HEAD + sse(chunk(ch(tool_calls=[fn(0, "c", args='{"a":')])))
    assert tripped_call(head, fn(0, name="f", args="1}"), 0) == (("buffer_limit", "retained"), [(None, '{"a":')])
    assert tripped_call(head, fn(0, name="f", args="1}"), 1) == (("buffer_limit", "retained"), [("f", '{"a":')])


def test_an_id_given_late_to_a_call_that_passes_the_retained_ceiling_is_not_taken_nor_its_arguments() -> None:
    head = HEAD + sse(chunk(ch(tool_calls=[fn(0, name="f", args='{"a":')])))
    late = fn(0, "c", args="1}")
    assert tripped_call(head, late, ENTRY_CHARS + len("c") - 1) == (("buffer_limit", "retained"), [("f", '{"a":')])
    assert tripped_call(head, late, ENTRY_CHARS + len("c") + len("1}"))[1] == [("f", '{"a":1}')]


def test_a_chunk_with_logprobs_and_a_finish_reason_takes_both() -> None:
    entry = {"token": "a", "logprob": -0.1, "top_logprobs": []}
    data = sse(chunk({**ch(content="a"), "logprobs": {"content": [entry]}}),
               chunk({**ch(finish="stop"), "logprobs": {"content": [entry], "refusal": None}}), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason, result.logprobs) == (
        "complete", "stop", {"content": [entry, entry], "refusal": []})


# -- found by the sampled mutation run of 2026-12-04 ------------------------------------------------

def test_a_legacy_call_is_announced_with_the_name_of_its_first_fragment() -> None:
    data = sse(chunk(ch(function_call={"name": "f", "arguments": '{"a"'})),
               chunk(ch(function_call={"arguments": ": 1}"})), chunk(ch(finish="function_call")), DONE)
    result, updates = check(ROUTE, data)
    assert result.outcome.value == "complete"
    assert updates[0] == {"kind": "tool_call", "call": 0, "id": None, "name": "f", "state": "streaming",
                          "arguments": None, "ready": False}


def test_an_index_past_the_call_ceiling_for_a_known_id_takes_nothing_of_its_fragment() -> None:
    # The second fragment names call "c" under a new index: one index too many for a ceiling of one
    # call, so the attempt ends there and its arguments are not appended.
    data = sse(chunk(ch(tool_calls=[fn(0, "c", "f", '{"a": ')])), chunk(ch(tool_calls=[fn(1, "c", None, "1}")])),
               chunk(ch(finish="tool_calls")), DONE)
    result, updates = check(ROUTE, data, limits=Limits(max_tool_calls=1))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_calls")
    assert [u["fragment"] for u in updates if u["kind"] == "tool_input_delta"] == ['{"a": ']
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_calls=2)) == ("complete", None)


# -- found by the every-field fuzz's committed-answer check, 2026-12-05 ------------------------------

@pytest.mark.parametrize("value", ["", 0, {}, False, "x", {"index": 0}],
                         ids=["empty-string", "zero", "empty-object", "false", "string", "object"])
def test_tool_calls_that_are_not_a_list_are_envelope_even_when_empty(value: Any) -> None:
    data = sse(chunk(ch(content="a")), chunk(ch(tool_calls=value)), chunk(ch(finish="stop")), DONE)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "a")
    assert outcome_of(ROUTE, sse(chunk(ch(content="a", tool_calls=[])), chunk(ch(finish="stop")), DONE)) == (
        "complete", None)


def test_a_call_whose_name_never_arrives_is_tool_unknown_and_never_ready() -> None:
    result, _ = check(ROUTE, tool_stream(fn(id="call_1", args='{"a"'), fn(args=": 1}")))
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_unknown")
    nameless = ("invalid", False, ("tool call has no name",))
    assert [(c.state, c.ready, c.problems) for c in result.tool_calls] == [nameless]
    late, _ = check(ROUTE, tool_stream(fn(id="call_1", args='{"a"'), fn(name="f", args=": 1}")))
    assert (late.outcome.value, calls(late)) == ("complete", [("call_1", "f", "function", "valid", {"a": 1})])


@pytest.mark.parametrize("legacy", [False, True], ids=["tool-calls", "legacy-function-call"])
def test_a_later_fragment_naming_another_tool_is_item_mismatch_and_the_same_name_again_is_fine(
        legacy: bool) -> None:
    def stream(second: str) -> bytes:
        if legacy:
            return sse(chunk(ch(function_call={"name": "a", "arguments": '{"x"'})),
                       chunk(ch(function_call={"name": second, "arguments": ": 1}"})),
                       chunk(ch(finish="function_call")), DONE)
        return tool_stream(fn(id="call_1", name="a", args='{"x"'), fn(name=second, args=": 1}"))

    result, _ = check(ROUTE, stream("b"))
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert [(c.name, c.ready, c.input_text) for c in result.tool_calls] == [("a", False, '{"x"')]
    again, _ = check(ROUTE, stream("a"))
    assert (again.outcome.value, [(c.name, c.arguments) for c in again.tool_calls]) == ("complete", [("a", {"x": 1})])


# -- found by the full mutation run of 2026-12-05 -------------------------------------------------------

def test_a_call_whose_id_arrives_late_is_found_by_that_id_and_the_id_is_charged_by_its_length() -> None:
    def data(call_id: str) -> bytes:
        return tool_stream(fn(0, name="f", args='{"a"'), fn(0, id=call_id, args=": 1"),
                           {"id": call_id, "function": {"arguments": "}"}})  # by its id alone: no index
    result, _ = check(ROUTE, data("call_abcdef"))
    assert (result.outcome.value, calls(result)) == ("complete", [("call_abcdef", "f", "function", "valid", {"a": 1})])
    # Four characters more of id, four more retained (the event's other charges are the same).
    longer = replay(ROUTE, [data("call_abcdefWXYZ")]).retained_chars
    assert longer - replay(ROUTE, [data("call_abcdef")]).retained_chars == 4


def test_a_fragment_with_neither_index_nor_id_opens_the_first_call_and_continues_the_latest() -> None:
    first = {"function": {"name": "f", "arguments": '{"a"'}}
    result, _ = check(ROUTE, tool_stream(first, {"function": {"arguments": ": 1}"}}))
    assert (result.outcome.value, calls(result)) == ("complete", [(None, "f", "function", "valid", {"a": 1})])


@pytest.mark.parametrize("index", [None, {"index": 0}], ids=["id-only", "id-and-index"])
def test_nothing_of_a_fragment_that_trips_the_retained_ceiling_while_opening_its_call_is_taken(
        index: dict[str, int] | None) -> None:
    # The call, then its id's entry, then (with an index) the index's entry, then its input are
    # charged. At every ceiling below the stream's whole account the call shows none of the input.
    fragment = {**(index or {}), "id": "call_1", "function": {"name": "f", "arguments": '{"a": 1}'}}
    data = sse(chunk(ch(content="hi")), chunk(ch(tool_calls=[fragment])))
    total = replay(ROUTE, [data]).retained_chars
    for ceiling in range(total - 3 * ENTRY_CHARS, total):
        result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling))
        assert (result.outcome.value, result.stage) == ("buffer_limit", "retained"), ceiling
        assert [c.input_text for c in result.tool_calls] in ([], [""]), ceiling


def test_a_finish_reason_past_the_retained_ceiling_leaves_the_calls_unclosed() -> None:
    data = sse(chunk(ch(tool_calls=[fn(0, "call_1", "f", '{"a": 1}')])), chunk(ch(finish="x" * 6000)), DONE)
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=3000))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert calls(result) == [("call_1", "f", "function", "streaming", None)]
    assert result.choices[0].stop_reason is None


def test_a_delta_whose_tool_calls_are_not_a_list_takes_none_of_its_later_fields() -> None:
    cite = {"type": "url_citation", "url_citation": {"url": "https://example.com", "title": "Ex"}}
    data = sse(chunk(ch(tool_calls="", function_call={"name": "f", "arguments": "{}"}, annotations=[cite])),
               chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.citations, result.tool_calls) == (
        "protocol_error", "envelope", (), ())


@pytest.mark.parametrize("element", ["x", 5, None, ["index", 0], True],
                         ids=["string", "number", "null", "list", "bool"])
def test_a_choice_that_is_not_an_object_is_envelope_and_ends_the_chunk_there(element: Any) -> None:
    # (explicitly: these tests run without the session's safety net, so nothing after the check may read it)
    data = sse(chunk(ch(content="a")), chunk(ch(content="b"), element), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "ab")
    first = sse(chunk(element, ch(content="b")), chunk(ch(finish="stop")), "[DONE]")
    result, _ = check(ROUTE, first)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "envelope", "")
