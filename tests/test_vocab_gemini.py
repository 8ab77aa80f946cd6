"""Route ``gemini``: every documented finish / block reason and part type (every chunking).

Shapes follow the Gemini API docs (ai.google.dev/gemini-api/docs/...: text-generation streaming,
thinking and thought-signatures, function-calling, code-execution, image-generation, files,
google-search grounding, url-context) and the ``GenerateContentResponse`` / ``Candidate`` /
``Part`` reference (ai.google.dev/api/generate-content), with ids and opaque values shortened.
Each test says which.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import LOCAL, check, outcome_of, sse
from webclient import Limits
from webclient._routes import StopCategory
from webclient._routes.gemini import PROMPT_BLOCK_REASONS, STOP_REASONS

ROUTE = "gemini"


def chunk(*parts: dict[str, Any], finish: str | None = None, index: int = 0, **candidate: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": index, **candidate}
    if finish is not None:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": "Il0taoSYJ5Cez7"}


EXPECTED = {StopCategory.SUCCESS: ("complete", None), StopCategory.LENGTH: ("truncated", "stop_reason"),
            StopCategory.FILTER: ("truncated", "stop_reason"), StopCategory.FAILURE: ("upstream_error", "error_stop")}


@pytest.mark.parametrize(("reason", "category"), sorted(STOP_REASONS.items()), ids=sorted(STOP_REASONS))
def test_every_documented_finish_reason_ends_as_its_category(reason: str, category: StopCategory) -> None:
    # GenerateContentResponse reference, FinishReason enum: the text streams, then the last chunk
    # carries finishReason (here with the text that was produced before it).
    result, _ = check(ROUTE, sse(chunk({"text": "The quick"}), chunk({"text": " brown"}, finish=reason)))
    assert (result.outcome.value, result.stage, result.stop_reason) == (*EXPECTED[category], reason)
    assert result.telemetry.stop_reason == reason
    assert result.committed is (category is StopCategory.SUCCESS)


def test_unexpected_tool_call_with_partial_text_never_commits() -> None:
    # The report: a chunk ending with UNEXPECTED_TOOL_CALL replayed as complete.
    result, _ = check(ROUTE, sse(chunk({"text": "Let me"}), chunk({"text": " check"}, finish="UNEXPECTED_TOOL_CALL")))
    assert (result.outcome.value, result.committed, result.text) == ("upstream_error", False, "Let me check")


def test_an_unknown_finish_reason_fails_closed_keeping_the_raw_value() -> None:
    result, _ = check(ROUTE, sse(chunk({"text": "x"}, finish="BRAND_NEW")))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "unrecognized_stop",
                                                                        "BRAND_NEW")
    assert result.telemetry.stop_reason == "unrecognized"


@pytest.mark.parametrize("reason", sorted(PROMPT_BLOCK_REASONS))
def test_every_prompt_block_reason_is_a_filter_stop(reason: str) -> None:
    # GenerateContentResponse reference: promptFeedback.blockReason with no candidates.
    result, _ = check(ROUTE, sse({"promptFeedback": {"blockReason": reason}, "usageMetadata": {"promptTokenCount": 4}}))
    assert (result.outcome.value, result.stage, result.telemetry.stop_reason) == ("truncated", "stop_reason", reason)


def test_conflicting_finish_reasons_for_one_candidate_the_later_refused_one_wins() -> None:
    data = sse(chunk({"text": "a"}, index=0), chunk({"text": "b"}, index=1), chunk(finish="STOP", index=0),
               chunk(finish="SAFETY", index=0), chunk(finish="STOP", index=1))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason) == ("truncated", "SAFETY")


# -- parts -------------------------------------------------------------------------------------------


def test_thought_summaries_are_reasoning_and_the_final_signature_only_part_is_kept_as_sent() -> None:
    # Thinking docs (includeThoughts) and thought-signatures docs, "Streaming": the signature may
    # arrive in a final chunk with an empty text part; it must be sent back on that part.
    sig = "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0="
    data = sse(chunk({"text": "**Planning**", "thought": True}), chunk({"text": "Hello!"}),
               chunk({"text": " How can I help you today"}), chunk({"text": "?"}),
               chunk({"text": "", "thoughtSignature": sig}, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert (result.text, result.reasoning) == ("Hello! How can I help you today?", "**Planning**")
    assert result.assistant_message == {"role": "model", "parts": [
        {"text": "**Planning**", "thought": True}, {"text": "Hello! How can I help you today?"},
        {"text": "", "thoughtSignature": sig}]}
    assert (result.response_id, result.model) == ("Il0taoSYJ5Cez7", "gemini-2.5-flash")


def test_a_signature_stays_on_the_text_part_it_came_with() -> None:
    # Thought-signatures docs: a non-function-call response may carry the signature on a text part.
    data = sse(chunk({"text": "Hel", "thoughtSignature": "c2lnLUE="}), chunk({"text": "lo"}, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert result.assistant_message["parts"] == [{"text": "Hel", "thoughtSignature": "c2lnLUE="}, {"text": "lo"}]


def test_function_call_parts_keep_their_signature_and_parallel_calls_follow() -> None:
    # Thought-signatures docs, "Parallel function calling": only the first call carries the signature.
    first = {"functionCall": {"name": "check_flight", "args": {"flight": "AA100"}}, "thoughtSignature": "PHNpZ0E+"}
    second = {"functionCall": {"name": "check_flight", "args": {"flight": "UA200"}}}
    result, _ = check(ROUTE, sse(chunk(first), chunk(second, finish="STOP")))
    assert [(c.kind, c.name, c.arguments, c.ready) for c in result.tool_calls] == [
        ("function", "check_flight", {"flight": "AA100"}, True),
        ("function", "check_flight", {"flight": "UA200"}, True)]
    assert result.assistant_message["parts"] == [first, second]


def test_a_streamed_function_call_becomes_one_part_with_assembled_args_and_its_signature() -> None:
    # Function-calling docs, streamFunctionCallArguments (as in the Vertex recording).
    data = sse(chunk({"functionCall": {"name": "getWeather", "willContinue": True}, "thoughtSignature": "U0lH"}),
               chunk({"functionCall": {"willContinue": True, "partialArgs": [
                   {"jsonPath": "$.location", "stringValue": "Bos", "willContinue": True}]}}),
               chunk({"functionCall": {"willContinue": True, "partialArgs": [
                   {"jsonPath": "$.location", "stringValue": "ton"}]}}),
               chunk({"functionCall": {}}, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert result.assistant_message["parts"] == [
        {"functionCall": {"name": "getWeather", "args": {"location": "Boston"}}, "thoughtSignature": "U0lH"}]


DATA_PARTS = [
    # Code execution docs: the model's code and its result.
    {"executableCode": {"language": "PYTHON", "code": "print(sum(range(1, 51)))"}},
    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1275\n"}},
    # Image generation docs: a generated image inline.
    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAE="}},
    # Files docs: a file referenced by URI.
    {"fileData": {"mimeType": "video/mp4", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
]


@pytest.mark.parametrize("part", DATA_PARTS, ids=[next(iter(p)) for p in DATA_PARTS])
def test_code_execution_and_media_parts_are_items_and_message_parts(part: dict[str, Any]) -> None:
    data = sse(chunk({"text": "Here:"}), chunk(part), chunk({"text": " done."}, finish="STOP"))
    result, _ = check(ROUTE, data, tools={"get_weather": {}})
    assert (result.outcome.value, result.tool_calls, result.text) == ("complete", (), "Here: done.")
    assert result.items == (part,)
    assert result.assistant_message["parts"] == [{"text": "Here:"}, part, {"text": " done."}]


def test_grounding_and_url_context_metadata_are_items_and_citation_sources_are_citations() -> None:
    # Grounding with Google Search docs (groundingMetadata), URL context docs (urlContextMetadata),
    # Candidate reference (citationMetadata.citationSources).
    grounding = {"webSearchQueries": ["UEFA Euro 2024 winner"],
                 "searchEntryPoint": {"renderedContent": "<style>...</style>"},
                 "groundingChunks": [{"web": {"uri": "https://vertexaisearch.cloud.google.com/x",
                                              "title": "uefa.com"}}],
                 "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 20, "text": "Spain won Euro 2024"},
                                        "groundingChunkIndices": [0]}]}
    url_context = {"urlMetadata": [{"retrievedUrl": "https://example.com",
                                    "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}]}
    source = {"startIndex": 0, "endIndex": 20, "uri": "https://www.uefa.com/euro2024", "license": ""}
    data = sse(chunk({"text": "Spain won Euro 2024"}, citationMetadata={"citationSources": [source]}),
               chunk({"text": "."}, finish="STOP", groundingMetadata=grounding, urlContextMetadata=url_context))
    result, _ = check(ROUTE, data)
    assert result.items == ({"groundingMetadata": grounding}, {"urlContextMetadata": url_context})
    assert result.citations == (source,)
    assert result.assistant_message["parts"] == [{"text": "Spain won Euro 2024."}]


def test_an_unknown_part_field_fails_closed_unless_the_caller_keeps_unknown_items() -> None:
    part = {"toolCall": {"id": "t1", "toolType": "GOOGLE_SEARCH"}}
    data = sse(chunk(part), chunk({"text": "x"}, finish="STOP"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "unknown_type")
    result, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (result.outcome.value, result.items) == ("complete", (part,))
    assert result.assistant_message["parts"] == [part, {"text": "x"}]


def test_a_part_with_two_data_fields_is_an_envelope_error() -> None:
    data = sse(chunk({"text": "x", "functionCall": {"name": "f", "args": {}}}, finish="STOP"))
    assert outcome_of(ROUTE, data) == ("protocol_error", "envelope")


def test_signatures_and_kept_parts_count_against_their_ceilings() -> None:
    data = sse(chunk({"text": "a", "thoughtSignature": "S" * 6}), chunk({"text": "b", "thoughtSignature": "T" * 6},
                                                                         finish="STOP"))
    assert outcome_of(ROUTE, data, limits=Limits(max_signature_chars=12)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_signature_chars=11)) == ("buffer_limit", "signatures")
    media = sse(chunk(DATA_PARTS[2], finish="STOP"))
    size = len(media.decode().split("data: ", 1)[1].rstrip("\n"))
    assert outcome_of(ROUTE, media, limits=Limits(max_item_chars=size)) == ("complete", None)
    assert outcome_of(ROUTE, media, limits=Limits(max_item_chars=size - 1)) == ("buffer_limit", "items")


# -- hosted code execution: the STOP on the code's chunk -----------------------------------------------------------
# pydantic-ai's live recordings of the code_execution and file_search tools (tests/recordings/pydantic-ai): the
# chunk that carries the model's executableCode part also carries finishReason STOP, and the code's result and the
# rest of the answer follow, with a second STOP at the end.

CODE = {"executableCode": {"language": "PYTHON", "code": "print(65465 - 6544 * 65464)\n"}}
RESULT = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "-428330951\n"}}


def test_a_stop_on_the_chunk_of_hosted_code_does_not_end_the_answer_that_follows_the_code() -> None:
    data = sse(chunk({"text": "Let me compute it."}), chunk(CODE, finish="STOP"), chunk(RESULT),
               chunk({"text": "The result is -428330951."}, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason) == ("complete", "STOP")
    assert result.text == "Let me compute it.The result is -428330951."
    assert result.items == (CODE, RESULT)
    assert result.assistant_message["parts"] == [{"text": "Let me compute it."}, CODE, RESULT,
                                                 {"text": "The result is -428330951."}]


def test_code_run_as_file_search_without_a_result_part_ends_at_the_later_stop() -> None:
    # The file search recording: the code's chunk has STOP, and the answer's text follows with no result part.
    data = sse(chunk(CODE, finish="STOP"), chunk({"text": "The capital of France"}),
               chunk({"text": " is Paris."}, finish="STOP"))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.text, result.items) == ("complete", "The capital of France is Paris.",
                                                                 (CODE,))


@pytest.mark.parametrize("after", [[], [RESULT], [RESULT, {"text": "The result is"}]],
                         ids=["after-the-code", "after-the-result", "mid-answer"])
def test_a_stream_cut_after_the_stop_on_hosted_code_is_truncated_never_complete(after: list[dict[str, Any]]) -> None:
    data = sse(chunk({"text": "Let me compute it."}), chunk(CODE, finish="STOP"), *(chunk(p) for p in after))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage, result.committed) == ("truncated", "eof", False)
    assert result.stop_reason is None and result.telemetry.terminal_condition_seen is False


def test_a_stop_after_the_code_in_the_same_chunk_finishes_the_candidate() -> None:
    # The code is not the candidate's latest part: its result (or text) came after it, so this STOP is the end.
    for parts in ((CODE, RESULT), (CODE, {"text": "Done."})):
        result, _ = check(ROUTE, sse(chunk(*parts, finish="STOP")))
        assert (result.outcome.value, result.stop_reason) == ("complete", "STOP")
        assert outcome_of(ROUTE, sse(chunk(*parts, finish="STOP"), chunk({"text": "more"}))) == (
            "protocol_error", "after_terminal")


@pytest.mark.parametrize("reason", ["MAX_TOKENS", "SAFETY", "OTHER"])
def test_another_finish_reason_on_the_chunk_of_hosted_code_ends_the_candidate(reason: str) -> None:
    category = STOP_REASONS[reason]
    result, _ = check(ROUTE, sse(chunk(CODE, finish=reason)))
    assert (result.outcome.value, result.stage, result.stop_reason) == (*EXPECTED[category], reason)
    # (the reason decides at once: what follows is not looked at)
    assert outcome_of(ROUTE, sse(chunk(CODE, finish=reason), chunk(RESULT))) == EXPECTED[category]


def test_the_deferred_stop_holds_per_candidate() -> None:
    # Candidate 1 runs code (its STOP waits); candidate 0 finishes at once. The stream ends when both have.
    data = sse(chunk(CODE, finish="STOP", index=1), chunk({"text": "a"}, finish="STOP"))
    assert outcome_of(ROUTE, data) == ("truncated", "eof")
    result, _ = check(ROUTE, data + sse(chunk(RESULT, index=1), chunk({"text": "b"}, finish="STOP", index=1)))
    assert (result.outcome.value, [c.text for c in result.choices]) == ("complete", ["a", "b"])


@pytest.mark.parametrize(("name", "answer", "parts"), [
    ("test_google_model_builtin_code_execution_stream.interaction0",
     "is **-428,330,955.97745**.", ["executableCode", "codeExecutionResult", "executableCode", "codeExecutionResult"]),
    ("test_google_model_file_search_tool_stream.interaction3",
     "The capital of France is Paris. A famous landmark in Paris is the Eiffel Tower.",
     ["executableCode", "executableCode", "groundingMetadata"]),
], ids=["code-execution", "file-search"])
def test_the_recorded_hosted_code_streams_commit_the_answer_after_the_code(name: str, answer: str,
                                                                            parts: list[str]) -> None:
    data = (LOCAL / "pydantic-ai" / f"test_google__{name}.sse").read_bytes()
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stop_reason) == ("complete", "STOP")
    assert result.text.endswith(answer)
    assert [next(iter(item)) for item in result.items] == parts
