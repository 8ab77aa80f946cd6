"""Route ``gemini`` at its edges: malformed parts and calls, calls whose input arrives already parsed,
signatures on streamed calls, candidate metadata, and what a failing chunk leaves behind (every
chunking).

Found by mutation testing (``build_scripts/mutation.py``) and the fuzzer: each test fails if a check
or a branch of ``webclient/_routes/gemini.py`` is changed. They run without the session's safety
net (``no_safety_net``), so a malformed field must be classified by an explicit check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import check, outcome_of, replay, sse
from tests.work_count import assert_linear_growth
from webclient import Limits
from webclient._limits import ENTRY_CHARS
from webclient._routes.gemini import parse_path

ROUTE = "gemini"

pytestmark = pytest.mark.usefixtures("no_safety_net")


def cand(*parts: Any, finish: Any = None, index: int = 0, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": index, **extra}
    if finish is not None:
        c["finishReason"] = finish
    return c


def chunk(*candidates: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"candidates": list(candidates), "modelVersion": "gemini-x", "responseId": "r-1", **extra}


def fc(name: Any = None, **fields: Any) -> dict[str, Any]:
    call = dict(fields)
    if name is not None:
        call["name"] = name
    return {"functionCall": call}


def calls(result: Any) -> list[tuple[Any, ...]]:
    return [(c.name, c.state, c.arguments, c.ready) for c in result.tool_calls]


def parts_of(result: Any) -> list[dict[str, Any]]:
    message = result.assistant_message
    assert message is not None and message["role"] == "model"
    parts: list[dict[str, Any]] = message["parts"]
    return parts


# -- calls whose input arrives already parsed ------------------------------------------------------

def test_an_unknown_tool_whose_args_arrive_parsed_is_tool_unknown_and_never_ready() -> None:
    data = sse(chunk(cand(fc("rm_rf", args={"path": "/"}), finish="STOP")))
    result, _ = check(ROUTE, data, tools={"weather": {"type": "object"}})
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_unknown")
    assert calls(result) == [("rm_rf", "invalid", None, False)]


def test_an_unknown_tool_whose_args_stream_is_tool_unknown_at_close() -> None:
    data = sse(chunk(cand(fc("rm_rf", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.p", "stringValue": "/"}], willContinue=True))),
               chunk(cand(fc(), finish="STOP")))
    assert outcome_of(ROUTE, data, tools={"weather": {}}) == ("payload_error", "tool_unknown")
    assert outcome_of(ROUTE, data, tools={"rm_rf": {"type": "object", "required": ["q"]}}) == ("payload_error",
                                                                                           "tool_schema")
    assert outcome_of(ROUTE, data, tools={"rm_rf": {}}) == ("complete", None)


def test_parsed_args_are_validated_against_the_registered_schema() -> None:
    data = sse(chunk(cand(fc("weather", args={"town": "Oslo"}), finish="STOP")))
    result, _ = check(ROUTE, data, tools={"weather": {"type": "object", "required": ["city"]}})
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_schema")
    assert calls(result) == [("weather", "invalid", {"town": "Oslo"}, False)]


# -- malformed fields ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "bad",
    [
        cand(5), cand("x"), cand({"text": 5}), cand({"text": ["x"]}), cand({"text": "a", "functionCall": {}}),
        cand({"text": "a", "thoughtSignature": 5}), cand(fc(5)), cand({"functionCall": "f"}),
        cand({"functionCall": ["f"]}), cand(fc("f", id=5)), cand(fc("f", partialArgs="x")),
        cand(fc(args={"a": 1})), cand({"executableCode": "print(1)"}), cand({"inlineData": ["x"]}),
        {"content": "x", "index": 0}, {"content": "", "index": 0}, {"content": {"parts": "x"}, "index": 0},
        {"content": {"parts": {}}, "index": 0}, {"content": {"parts": 5}, "index": 0},
        cand({"text": "a", "executableCode": {"code": "x"}}),
        cand({"text": "a"}, finish=5), cand({"text": "a"}, citationMetadata="x"),
        cand({"text": "a"}, citationMetadata={"citationSources": "x"}),
        cand({"text": "a"}, citationMetadata={"citations": [5]}), cand({"text": "a"}, groundingMetadata="x"),
        cand({"text": "a"}, urlContextMetadata=[1]), {**cand({"text": "a"}), "index": "0"},
        {**cand({"text": "a"}), "index": [0]}, {**cand({"text": "a"}), "index": True},
    ],
    ids=["part-number", "part-string", "text-number", "text-list", "two-data-fields", "signature-number",
         "name-number", "call-string", "call-list", "id-number", "partial-args-string", "args-without-name",
         "code-string", "inline-data-list", "content-string", "content-empty-string", "parts-string", "parts-object",
         "parts-number", "text-and-code", "finish-number",
         "citation-metadata-string", "citation-sources-string", "citation-number", "grounding-string",
         "url-context-list", "index-string", "index-list", "index-bool"],
)
def test_a_malformed_candidate_is_protocol_error_and_nothing_after_it_is_taken(bad: dict[str, Any]) -> None:
    data = sse(chunk(cand({"text": "a"}, index=1)), chunk(bad, cand({"text": "late"}, index=1)),
               chunk(cand({"text": "b"}, finish="STOP", index=1)))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert [c.text for c in result.choices][-1] == "a" and result.tool_calls == ()
    # Nothing of a malformed part, nor anything after it, was taken into its own candidate either (a
    # well-formed text part before a malformed field of the candidate is).
    content = bad.get("content")
    valid_parts = isinstance(content, dict) and content.get("parts") == [{"text": "a"}]
    assert [(c.text, c.items) for c in result.choices if c.index == 0] in ([], [("a" if valid_parts else "", ())])


@pytest.mark.parametrize(
    "bad",
    [[5], ["x"], [{"stringValue": "x"}], [{"jsonPath": 5, "stringValue": "x"}],
     [{"jsonPath": "$.a", "stringValue": 5}], [{"jsonPath": "$.a", "stringValue": "x"}, 5]],
    ids=["arg-number", "arg-string", "path-missing", "path-number", "string-value-number", "second-arg-number"],
)
def test_a_malformed_partial_argument_is_protocol_error(bad: list[Any]) -> None:
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=bad, willContinue=True))),
               chunk(cand(fc(), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert calls(result) == [("f", "streaming", None, False)]


@pytest.mark.parametrize("flag", [1, 0, "true", [True]], ids=["one", "zero", "string", "list"])
def test_a_will_continue_that_is_not_a_boolean_is_envelope_and_opens_no_call(flag: Any) -> None:
    data = sse(chunk(cand(fc("f", willContinue=flag))), chunk(cand(fc(), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.tool_calls) == ("protocol_error", "envelope", ())


def test_a_part_with_a_field_nobody_documents_is_unknown_type_unless_kept() -> None:
    part = {"videoMetadata": {"fps": 1}}
    data = sse(chunk(cand({"text": "a"}, part, {"text": "b"}, finish="STOP")))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.text, result.items) == ("complete", "ab", (part,))
    assert parts_of(result) == [{"text": "a"}, part, {"text": "b"}]


@pytest.mark.parametrize("key", ["", "Text", "text ", "texts"], ids=repr)
def test_a_part_whose_one_field_only_resembles_text_is_unknown_type_unless_kept(key: str) -> None:
    part = {key: "x"}
    data = sse(chunk(cand({"text": "a"}, part, {"text": "b"}, finish="STOP")))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.text, result.items) == ("complete", "ab", (part,))
    assert parts_of(result) == [{"text": "a"}, part, {"text": "b"}]


def test_parts_for_a_finished_candidate_are_closed_block() -> None:
    data = sse(chunk(cand({"text": "a"}, index=0), cand({"text": "x"}, finish="STOP", index=1)),
               chunk(cand({"text": "late"}, index=1)), chunk(cand({"text": "b"}, finish="STOP", index=0)))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.choices[1].text) == ("protocol_error", "closed_block", "x")


# -- streamed calls --------------------------------------------------------------------------------

def test_a_new_named_call_closes_the_one_still_streaming() -> None:
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.a", "numberValue": 1}], willContinue=True))),
               chunk(cand(fc("g", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.b", "nullValue": None}], willContinue=True))),
               chunk(cand(fc(), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert calls(result) == [("f", "valid", {"a": 1}, True), ("g", "valid", {"b": None}, True)]


def test_a_closing_part_with_nothing_streaming_is_ignored_but_arguments_for_it_are_unknown_block() -> None:
    assert outcome_of(ROUTE, sse(chunk(cand({"text": "a"}, fc(), finish="STOP")))) == ("complete", None)
    data = sse(chunk(cand(fc(partialArgs=[{"jsonPath": "$.a", "boolValue": True}]), finish="STOP")))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_block")


def test_a_signature_on_a_continuation_part_signs_the_streamed_call_once() -> None:
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand({**fc(partialArgs=[{"jsonPath": "$.a", "stringValue": "x"}], willContinue=True),
                           "thoughtSignature": "s1"})),
               chunk(cand({**fc(willContinue=True), "thoughtSignature": "s2"})),
               chunk(cand(fc(), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert parts_of(result) == [{"functionCall": {"name": "f", "args": {"a": "x"}}, "thoughtSignature": "s1"}]


def test_the_streamed_calls_id_and_first_signature_are_kept_on_its_part() -> None:
    data = sse(chunk(cand({**fc("f", id="c1", willContinue=True), "thoughtSignature": "s0"})),
               chunk(cand({**fc(willContinue=False), "thoughtSignature": "s1"}), finish="STOP"))
    result, _ = check(ROUTE, data)
    assert parts_of(result) == [{"functionCall": {"name": "f", "id": "c1", "args": {}}, "thoughtSignature": "s0"}]
    assert result.tool_calls[0].id == "c1"


def test_signed_continuation_parts_cost_the_same_work_each_however_many_parts_came_before() -> None:
    # A continuation part with a signature used to look back over every message part for its
    # call: quadratic in a stream of signature-only parts between continuation parts.
    def build(k: int) -> bytes:
        body = [chunk(cand({"thoughtSignature": "s"}, {**fc(willContinue=True), "thoughtSignature": "t"}))
                for _ in range(300 * k)]
        return sse(chunk(cand(fc("f", willContinue=True))), *body, chunk(cand(fc(), finish="STOP")))

    assert assert_linear_growth(ROUTE, build) is not None


def test_streamed_values_count_against_the_tool_input_ceiling() -> None:
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.a", "stringValue": "abcd"},
                                          {"jsonPath": "$.n", "numberValue": 12}], willContinue=True))),
               chunk(cand(fc(), finish="STOP")))
    # While streaming the values count (6 characters); at close, the assembled object's JSON does.
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=5)) == ("buffer_limit", "tool_input")
    closed = len('{"a": "abcd", "n": 12}')
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=closed)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_tool_input_chars=closed - 1)) == ("buffer_limit", "tool_input")


def test_a_streamed_call_whose_assembled_arguments_pass_the_retained_ceiling_stays_streaming_as_it_came() -> None:
    # Closing a streamed call replaces its input (the paths and values held: 17 characters here) by the
    # assembled object's JSON (27), charging the difference: one character short, nothing is replaced
    # and the call is not closed.
    from tests.test_retained import _prefix, gemini_stream, streamed_call

    data = gemini_stream(streamed_call([{"jsonPath": "$.city", "stringValue": "Oslo", "willContinue": True},
                                        {"jsonPath": "$.days", "numberValue": 3}]))
    assembled = json.dumps({"city": "Oslo", "days": 3})
    ceiling = replay(ROUTE, [_prefix(data, 3)]).retained_chars + len(assembled) - len("$.cityOslo$.days3")
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling - 1))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert [(c.state, c.arguments, c.input_text) for c in result.tool_calls] == [("streaming", None, "Oslo3")]
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling))
    assert [(c.state, c.input_text) for c in result.tool_calls] == [("closed", assembled)]


def test_a_streamed_argument_path_past_the_retained_ceiling_takes_neither_the_path_nor_its_value() -> None:
    # A new path is charged by its length, as input of its call, then as one entry; its value after it.
    # One character short of the path's own charge, nothing of the element is held, though the entry
    # and the value alone would fit.
    from tests.test_retained import _prefix, gemini_stream, streamed_call

    path = "$." + "k" * 100  # (longer than an entry and the value together)
    data = gemini_stream(streamed_call([{"jsonPath": path, "stringValue": "v"}]))
    before = replay(ROUTE, [_prefix(data, 1)]).retained_chars
    for ceiling, held in ((before + len(path) - 1, ""), (before + len(path) + ENTRY_CHARS + 1, "v")):
        result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=ceiling))
        assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
        assert [(c.state, c.input_text) for c in result.tool_calls] == [("streaming", held)]


def test_a_resumed_gemini_answer_keeps_its_message_parts_after_a_cut_result_showed_them() -> None:
    # The cut result combines the first pair (one character shorter) and shows the half pair at the cut as
    # U+FFFD; the resumed session's message parts still end where the provider's parts ended.
    from tests.resume_streams import cut_and_resumed
    from tests.test_retained import gemini, gemini_stream
    from webclient import Outcome

    high, low = "\ud83d", "\ude00"
    data = gemini_stream([gemini({"text": "a" + high}), gemini({"text": low + "b"}),
                          gemini({"text": "c" + high, "thoughtSignature": "s"}), gemini({"text": "d"})])
    cut, result = cut_and_resumed(ROUTE, data, 3)
    parts = [part["text"] for part in cut.assistant_message["parts"]]  # type: ignore[index]
    assert (cut.outcome, cut.text, parts) == (Outcome.TRUNCATED, "a\U0001f600bc\ufffd", ["a\U0001f600b", "c\ufffd"])
    parts = [part["text"] for part in result.assistant_message["parts"]]  # type: ignore[index]
    assert (result.outcome, result.stage) == (Outcome.PAYLOAD_ERROR, "unpaired_surrogate")  # (a signed part's
    # half pair is unpaired in it, whatever follows: the check is per part)
    assert parts == ["a\U0001f600b", "c\ufffd", "d."]


# -- candidates, metadata, identity ------------------------------------------------------------------

def test_citation_sources_grounding_and_url_context_are_kept() -> None:
    source = {"startIndex": 0, "endIndex": 1, "uri": "https://e.x"}
    grounding = {"webSearchQueries": ["q"]}
    data = sse(chunk(cand({"text": "a"}, citationMetadata={"citationSources": [source]},
                          groundingMetadata={"old": 1})),
               chunk(cand({"text": "b"}, finish="STOP", citationMetadata={"citations": [source]},
                          groundingMetadata=grounding, urlContextMetadata={"urlMetadata": []})))
    result, _ = check(ROUTE, data)
    assert result.citations == (source, source)
    assert result.items == ({"groundingMetadata": grounding}, {"urlContextMetadata": {"urlMetadata": []}})


def test_metadata_past_the_item_ceiling_is_buffer_limit_and_not_kept() -> None:
    data = sse(chunk(cand({"text": "a"}, finish="STOP", groundingMetadata={"q": "x" * 200})))
    result, _ = check(ROUTE, data, limits=Limits(max_item_chars=100))
    assert (result.outcome.value, result.stage, result.items) == ("buffer_limit", "items", ())
    assert result.choices[0].stop_reason is None  # nothing of the candidate after the metadata was taken


def test_hosted_parts_are_items_and_message_parts() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    data = sse(chunk(cand({"text": "a"}, code, {"text": "b"}, finish="STOP")))
    result, _ = check(ROUTE, data)
    assert result.items == (code,) and parts_of(result) == [{"text": "a"}, code, {"text": "b"}]
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=20)) == ("buffer_limit", "items")


def test_the_first_response_id_and_model_are_kept() -> None:
    data = sse({"candidates": [cand({"text": "a"})]}, chunk(cand({"text": "b"})),
               {"candidates": [cand({"text": "c"}, finish="STOP")], "responseId": "r-2", "modelVersion": "m-2"})
    result, _ = check(ROUTE, data)
    assert (result.response_id, result.model) == ("r-1", "gemini-x")


def test_a_blocked_prompt_with_an_unknown_reason_fails_closed_and_telemetry_knows_the_documented_ones() -> None:
    result, _ = check(ROUTE, sse({"promptFeedback": {"blockReason": "NEW_REASON"}}))
    assert (result.outcome.value, result.stage, result.telemetry.stop_reason) == (
        "protocol_error", "unrecognized_stop", "unrecognized")
    result, _ = check(ROUTE, sse({"promptFeedback": {"blockReason": "BLOCKLIST"}}))
    assert (result.outcome.value, result.telemetry.stop_reason) == ("truncated", "BLOCKLIST")
    assert outcome_of(ROUTE, sse({"promptFeedback": {"blockReason": ""}})) == ("truncated", "eof")


@pytest.mark.parametrize("where", ["with-finished-candidates", "with-open-candidates-then-stop", "later-chunk"])
def test_a_blocked_prompt_never_commits_even_beside_candidates(where: str) -> None:
    """The API sends ``promptFeedback.blockReason`` with no candidates; a stream that has both contradicts
    itself, and the refusal decides (a filter stop with its reason) wherever it comes: in the chunk that
    finishes every candidate, in an earlier one, or after the answer."""
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}}
    feedback_ok = {"promptFeedback": {"safetyRatings": []}}  # feedback without a block reason changes nothing
    if where == "with-finished-candidates":
        data = sse(chunk(cand({"text": "a"}), **feedback_ok), chunk(cand({"text": "b"}, finish="STOP"), **blocked))
    elif where == "with-open-candidates-then-stop":
        data = sse(chunk(cand({"text": "a"}), **blocked), chunk(cand({"text": "b"}, finish="STOP")))
    else:
        data = sse(chunk(cand({"text": "a"})), blocked)
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.stop_reason) == ("truncated", "stop_reason", "SAFETY")
    assert not result.committed
    assert outcome_of(ROUTE, sse(chunk(cand({"text": "a"}), **feedback_ok),
                                 chunk(cand({"text": "b"}, finish="STOP"), **feedback_ok))) == ("complete", None)


@pytest.mark.parametrize("flag", ["true", 1, 0, [], {}], ids=["string", "one", "zero", "list", "object"])
def test_a_thought_flag_that_is_not_a_boolean_is_an_envelope_error_not_a_guess_at_the_channel(flag: Any) -> None:
    data = sse(chunk(cand({"text": "a"})), chunk(cand({"text": "b", "thought": flag}, finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert (result.text, result.reasoning) == ("a", "")


def test_a_thought_flag_that_is_false_or_null_leaves_the_text_in_the_answer() -> None:
    data = sse(chunk(cand({"text": "a", "thought": False})), chunk(cand({"text": "b", "thought": None}, finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text, result.reasoning) == ("complete", "ab", "")


def test_a_later_finish_reason_that_does_not_commit_wins_for_a_finished_candidate() -> None:
    data = sse(chunk(cand({"text": "a"}, finish="STOP", index=0), cand({"text": "b"}, index=1)),
               chunk(cand(finish="SAFETY", index=0)), chunk(cand(finish="STOP", index=1)))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason) == ("truncated", "SAFETY")


def test_pairs_split_across_parts_are_combined_in_every_text_part_of_the_message() -> None:
    data = sse(chunk(cand({"text": "a\ud83d"})), chunk(cand({"text": "\ude00b"})),
               chunk(cand({"text": "t", "thought": True})), chunk(cand({"text": "c\ud83d"})),
               chunk(cand({"text": "\ude00d"}, finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text, result.reasoning) == ("complete", "a\U0001f600bc\U0001f600d", "t")
    assert [p["text"] for p in parts_of(result)] == ["a\U0001f600b", "t", "c\U0001f600d"]


def test_a_streamed_call_whose_last_part_carries_arguments_closes_with_them() -> None:
    piece = {"jsonPath": "$.city", "stringValue": "Oslo"}
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=[piece]), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, calls(result)) == ("complete", [("f", "valid", {"city": "Oslo"}, True)])


# -- found by the sampled mutation runs of 2026-12-03 ------------------------------------------------

def test_a_model_version_or_response_id_arriving_after_the_other_is_still_recorded() -> None:
    for first, later in (({"responseId": "r-1"}, {"modelVersion": "m-1"}),
                         ({"modelVersion": "m-1"}, {"responseId": "r-1"})):
        data = sse({"candidates": [cand({"text": "a"})], **first},
                   {"candidates": [cand({"text": "b"}, finish="STOP")], **later})
        result, _ = check(ROUTE, data)
        assert (result.response_id, result.model) == ("r-1", "m-1")


def test_a_blocked_prompt_whose_reason_the_caller_accepts_commits_without_any_candidate() -> None:
    result, _ = check(ROUTE, sse({"promptFeedback": {"blockReason": "SAFETY"}}), accepted_stop_reasons={"SAFETY"})
    assert (result.outcome.value, result.stop_reason, result.text) == ("complete", "SAFETY", "")


def test_a_filtered_candidate_repeated_with_a_stop_that_commits_stays_filtered() -> None:
    data = sse(chunk(cand({"text": "a"}, finish="SAFETY", index=0), cand({"text": "b"}, index=1)),
               chunk(cand(finish="STOP", index=0), cand(finish="STOP", index=1)))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason) == ("truncated", "SAFETY")
    assert [c.stop_reason for c in result.choices] == ["SAFETY", "STOP"]


@pytest.mark.parametrize("field", [{"citationMetadata": "x"}, {"citationMetadata": {"citations": [5]}},
                                   {"groundingMetadata": "x"}, {"urlContextMetadata": [1]}, {"content": {"parts": {}}}],
                         ids=["citations", "citation-number", "grounding", "url-context", "parts-object"])
def test_malformed_metadata_takes_nothing_of_its_own_candidate_after_it(field: dict[str, Any]) -> None:
    grounding = {"groundingMetadata": {"webSearchQueries": ["q"]}}
    result, _ = check(ROUTE, sse(chunk(cand({"text": "a"}, finish="STOP", **{**grounding, **field}))))
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert result.text in ("a", "")  # ("" when the malformed field is the content itself)
    assert result.choices[0].stop_reason is None
    if not field.keys() & {"groundingMetadata", "urlContextMetadata"}:  # read after these: never reached
        assert result.items == ()


def test_a_part_with_text_and_a_field_nobody_documents_is_kept_whole_and_its_text_is_not_taken() -> None:
    part = {"text": "x", "videoMetadata": {"fps": 1}}
    data = sse(chunk(cand({"text": "a"}, part, {"text": "b"}, finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.text) == ("protocol_error", "unknown_type", "a")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.text, result.items) == ("complete", "ab", (part,))
    assert parts_of(result) == [{"text": "a"}, part, {"text": "b"}]


def test_a_text_part_past_the_text_ceiling_adds_no_part_to_the_message() -> None:
    data = sse(chunk(cand({"text": "t", "thought": True})), chunk(cand({"text": "abcd"}, finish="STOP")))
    result, _ = check(ROUTE, data, limits=Limits(max_text_chars=3))
    assert (result.outcome.value, result.stage, result.text) == ("buffer_limit", "text", "")
    assert parts_of(result) == [{"text": "t", "thought": True}]


def test_a_streamed_call_is_validated_at_its_closing_part_even_when_the_stream_is_cut_before_the_finish() -> None:
    piece = {"jsonPath": "$.city", "stringValue": "Oslo"}
    for closing in (fc(partialArgs=[piece]), fc()):
        head = [chunk(cand(fc("f", willContinue=True)))]
        if closing == fc():
            head.append(chunk(cand(fc(partialArgs=[piece], willContinue=True))))
        result, _ = check(ROUTE, sse(*head, chunk(cand(closing))))
        assert (result.outcome.value, result.stage) == ("truncated", "eof")
        assert calls(result) == [("f", "valid", {"city": "Oslo"}, False)]


def test_two_paths_under_one_array_element_fill_the_same_object() -> None:
    pieces = [{"jsonPath": "$.stops[0].city", "stringValue": "Oslo"}, {"jsonPath": "$.stops[0].days", "numberValue": 2},
              {"jsonPath": "$.stops[1].city", "stringValue": "Bergen"}]
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=pieces), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert calls(result) == [("f", "valid", {"stops": [{"city": "Oslo", "days": 2}, {"city": "Bergen"}]}, True)]


def test_arguments_in_the_part_that_opens_a_streamed_call_are_kept() -> None:
    opening = fc("f", willContinue=True, partialArgs=[{"jsonPath": "$.a", "numberValue": 1}])
    data = sse(chunk(cand(opening)), chunk(cand(fc(partialArgs=[{"jsonPath": "$.b", "boolValue": True}]),
                                                finish="STOP")))
    result, _ = check(ROUTE, data)
    assert calls(result) == [("f", "valid", {"a": 1, "b": True}, True)]


def test_a_malformed_argument_in_the_closing_part_leaves_the_call_streaming() -> None:
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=[5]), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert calls(result) == [("f", "streaming", None, False)]


def test_a_call_past_the_tool_call_ceiling_is_buffer_limit_and_opens_nothing() -> None:
    for second in (fc("g", args={"b": 2}), fc("g", willContinue=True)):
        data = sse(chunk(cand(fc("f", args={"a": 1}))), chunk(cand(second, finish="STOP")))
        result, _ = check(ROUTE, data, limits=Limits(max_tool_calls=1))
        assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_calls")
        assert calls(result) == [("f", "valid", {"a": 1}, False)]
        assert parts_of(result) == [{"functionCall": {"name": "f", "args": {"a": 1}}}]


def test_a_later_spelling_of_the_same_array_element_replaces_its_value() -> None:
    pieces = [{"jsonPath": "$.a[0]", "numberValue": 1}, {"jsonPath": "$['a'][0]", "numberValue": 2}]
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=pieces), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert calls(result) == [("f", "valid", {"a": [2]}, True)]


# -- found by the sampled mutation run of 2026-12-04 ------------------------------------------------

def test_a_finish_reason_past_the_retained_ceiling_leaves_the_streaming_call_unclosed() -> None:
    # The finish reason is charged before the call it ends is closed: once the charge trips the
    # ceiling, nothing more of the candidate is taken (its call is neither assembled nor validated).
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.a", "stringValue": "Boston"}], willContinue=True))),
               chunk(cand(finish="S" * 6000)))
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=3000))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    assert calls(result) == [("f", "streaming", None, False)]
    assert result.choices[0].stop_reason is None


def test_a_streamed_call_that_fails_at_close_opens_no_call_after_it() -> None:
    # Call g's opening part closes f, whose assembled arguments hold an unpaired surrogate: the
    # attempt ends there, and g is never opened.
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.a", "stringValue": "\ud800"}], willContinue=True))),
               chunk(cand(fc("g", willContinue=True))),
               chunk(cand(fc(), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "unpaired_surrogate")
    assert calls(result) == [("f", "invalid", None, False)]


# -- found by the full mutation run of 2026-12-05 -------------------------------------------------------

@pytest.mark.parametrize(
    "piece",
    [{"jsonPath": "$.a", "numberValue": "12"}, {"jsonPath": "$.a", "numberValue": True},
     {"jsonPath": "$.a", "numberValue": {"b": 1}}, {"jsonPath": "$.a", "numberValue": None},
     {"jsonPath": "$.a", "boolValue": 1}, {"jsonPath": "$.a", "boolValue": "true"},
     {"jsonPath": "$.a", "nullValue": 0}, {"jsonPath": "$.a", "nullValue": "null"},
     {"jsonPath": "$.a", "stringValue": "x", "numberValue": 1},
     {"jsonPath": "$.a", "numberValue": 1, "boolValue": True},
     {"jsonPath": "$.a", "boolValue": True, "nullValue": None, "willContinue": True},
     {"jsonPath": "$.a", "stringValue": "x", "numberValue": 1, "boolValue": True, "nullValue": None,
      "willContinue": True}],
    ids=["number-string", "number-bool", "number-object", "number-null", "bool-number", "bool-string", "null-zero",
         "null-word", "string-and-number", "number-and-bool", "bool-and-null", "every-field"],
)
def test_a_streamed_value_of_the_wrong_type_or_two_values_in_one_element_is_an_envelope_error(
        piece: dict[str, Any]) -> None:
    # The value fields are a union (one per element), each of one JSON type: taking either of two
    # values, or a number that is a string, would commit arguments the model never sent.
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=[piece], willContinue=True))),
               chunk(cand(fc(), finish="STOP")))
    result, updates = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "envelope")
    assert calls(result) == [("f", "streaming", None, False)]
    # Not even provisionally: no input delta shows any of the values.
    assert [c.input_text for c in result.tool_calls] == [""]
    assert [u for u in updates if u["kind"] == "tool_input_delta"] == []


@pytest.mark.parametrize("keep", [False, True], ids=["strict", "keep-unknown-items"])
def test_a_streamed_argument_element_with_a_field_nobody_documents_is_unknown_type(keep: bool) -> None:
    # A value in a field this route cannot read would be missing from the arguments: never a commit,
    # even when unknown items are kept (an argument cannot be kept aside as an item).
    piece = {"jsonPath": "$.a", "structValue": {"b": 1}}
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=[piece]), finish="STOP")))
    result, _ = check(ROUTE, data, keep_unknown_items=keep)
    assert (result.outcome.value, result.stage) == ("protocol_error", "unknown_type")
    assert calls(result) == [("f", "streaming", None, False)]


def test_a_null_value_in_either_json_form_is_null_and_an_element_without_a_value_adds_nothing() -> None:
    pieces = [{"jsonPath": "$.a", "nullValue": "NULL_VALUE"}, {"jsonPath": "$.b", "nullValue": None},
              {"jsonPath": "$.c", "willContinue": True}, {"jsonPath": "$.d", "numberValue": 2.5},
              {"jsonPath": "$.e", "boolValue": False}]
    data = sse(chunk(cand(fc("f", willContinue=True))), chunk(cand(fc(partialArgs=pieces), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert calls(result) == [("f", "valid", {"a": None, "b": None, "d": 2.5, "e": False}, True)]


def test_an_empty_quoted_name_in_a_path_is_the_empty_key() -> None:
    assert parse_path("$['']") == ([""], 5) and parse_path('$[""].a') == (["", "a"], 7)
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$['']", "stringValue": "v"}]), finish="STOP")))
    assert calls(check(ROUTE, data)[0]) == [("f", "valid", {"": "v"}, True)]


def test_an_index_of_ten_digits_is_refused_before_it_is_converted_and_one_of_nine_is_read() -> None:
    assert parse_path("$.a[123456789]") == (["a", 123456789], 14)
    assert parse_path("$.a[1234567890]")[0] is None
    # A path outside the grammar costs the characters read up to where it leaves it.
    assert parse_path("a.b") == (None, 1) and parse_path("") == (None, 1)


def test_usage_metadata_is_charged_and_a_chunk_whose_usage_trips_the_ceiling_ends_nothing() -> None:
    data = sse(chunk(cand({"text": "a"})),
               chunk(cand({"text": "b"}, finish="STOP"), usageMetadata={"totalTokenCount": 1, "x": "y" * 4000}))
    result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=3000))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
    # The candidate's own fields came first and were taken; the terminal condition was never reached.
    assert (result.text, result.choices[0].stop_reason, result.stop_reason) == ("ab", "STOP", None)
    assert result.usage is None


def test_an_empty_signature_signs_nothing_and_an_empty_unsigned_text_part_adds_no_part() -> None:
    data = sse(chunk(cand(fc("f", args={}), {"text": "a"}, {"text": "b", "thoughtSignature": ""},
                          {"text": "c", "thoughtSignature": "s"}, {"text": ""}, finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text) == ("complete", "abc")
    assert parts_of(result) == [{"functionCall": {"name": "f", "args": {}}}, {"text": "ab"},
                                {"text": "c", "thoughtSignature": "s"}]


def test_a_whole_calls_message_part_is_held_before_its_arguments_and_a_call_whose_part_cannot_be_held_stays_open(
        ) -> None:
    # Charged in this order: the call, its input text, its message part, its parsed arguments. One
    # character short of the arguments the call is closed with its part in the message; one short of
    # the part as well, the call stays streaming and the message has no part for it.
    data = sse(chunk(cand({"text": "hi"})), chunk(cand(fc("f", args={"a": 1}))))
    whole = replay(ROUTE, [data])
    assert whole.result is not None and calls(whole.result) == [("f", "valid", {"a": 1}, False)]
    arguments = len(json.dumps({"a": 1}))
    for short, state, parts in ((1, "closed", 2), (arguments, "closed", 2), (arguments + 1, "streaming", 1),
                                (arguments + ENTRY_CHARS, "streaming", 1)):
        result, _ = check(ROUTE, data, limits=Limits(max_retained_chars=whole.retained_chars - short))
        assert (result.outcome.value, result.stage) == ("buffer_limit", "retained")
        assert (calls(result)[0][1], len(parts_of(result))) == (state, parts), short


def test_a_streamed_call_with_an_unplaceable_path_says_so_in_its_problems() -> None:
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.a", "stringValue": "x"},
                                          {"jsonPath": "$.a.b", "stringValue": "y"}]), finish="STOP")))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_json")
    problems = ("streamed argument path not supported",)
    assert [(c.state, c.problems) for c in result.tool_calls] == [("invalid", problems)]


@pytest.mark.parametrize("value", [{"stringValue": "v"}, {"numberValue": 1}], ids=["string", "number"])
def test_a_streamed_value_whose_path_passes_the_input_ceiling_is_never_shown_as_input(value: dict[str, Any]) -> None:
    # The path is charged first; once it trips the ceiling the value is not taken, so no provisional
    # input delta shows it.
    data = sse(chunk(cand(fc("f", willContinue=True))),
               chunk(cand(fc(partialArgs=[{"jsonPath": "$.long_name", **value}], willContinue=True))))
    result, updates = check(ROUTE, data, limits=Limits(max_tool_input_chars=5))
    assert (result.outcome.value, result.stage) == ("buffer_limit", "tool_input")
    assert [u for u in updates if u["kind"] == "tool_input_delta"] == []
    assert [c.input_text for c in result.tool_calls] == [""]
