"""The real recordings in ``<repo>/../shared/fixtures`` as session test cases.

Each recording is listed once in :data:`CATALOG` with its route and its expected outcome under
webclient's contract: ``SOURCES.md``'s "suggested outcome" read through ``route-contracts.md`` §6
(in-stream provider errors are ``upstream_error``; refusals are ``complete``; ``length`` /
``max_tokens`` stops are ``truncated``; a last event without its blank line is ``truncated``
and must reach its content's outcome once the blank line is appended; duplicate / spliced
``message_start`` is ``protocol_error``; multi-stream recordings are split into single
responses first).

Framing (:func:`cases`):
* raw SSE files are used byte-exact;
* ``vercel-ai/*.chunks.txt`` are JSONL payloads: each line becomes ``data: <line>\\n\\n``, and only
  the Chat route gets ``data: [DONE]\\n\\n`` appended (its own terminal framing);
* files ending without the final blank line yield two cases: as recorded (``truncated``) and
  completed with the missing terminator (the content's outcome).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import assert_chunking_invariant
from webclient import StreamResult, StreamSession

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
#: This repository's own copies of further public recordings (``tests/recordings/SOURCES.md``).
LOCAL = Path(__file__).resolve().parent / "recordings"

CHAT = "openai-chat"
RESPONSES = "openai-responses"
ANTHROPIC = "anthropic-messages"
GEMINI = "gemini"


@dataclass(frozen=True)
class Recording:
    """One file: route, expected outcome / stop reason of its content, framing quirks."""

    path: str
    route: str
    outcome: str
    stop_reason: str | None = None
    #: The bytes that complete the last event when the file lacks them (b"" when it is complete).
    missing_terminator: bytes = b""
    #: Split a concatenated multi-response recording at each start event.
    split_at: str | None = None
    #: The directory ``path`` is relative to: the shared fixtures, or :data:`LOCAL`.
    root: Path = FIXTURES


CATALOG: tuple[Recording, ...] = (
    # anthropic-sdk-python: .txt files end without the blank line after message_stop.
    Recording("anthropic-sdk-python/basic_response.txt", ANTHROPIC, "complete", "end_turn", b"\n\n"),
    Recording("anthropic-sdk-python/tool_use_response.txt", ANTHROPIC, "complete", "tool_use", b"\n\n"),
    Recording("anthropic-sdk-python/incomplete_partial_json_response.txt", ANTHROPIC, "truncated", "max_tokens",
              b"\n\n"),
    Recording("anthropic-sdk-python/refusal_response.txt", ANTHROPIC, "complete", "refusal", b"\n\n"),
    Recording("anthropic-sdk-python/compaction_response.txt", ANTHROPIC, "complete", "end_turn", b"\n\n"),
    Recording("anthropic-sdk-python/fallback_response.txt", ANTHROPIC, "complete", "end_turn", b"\n\n"),
    Recording("anthropic-sdk-python/fallback_credit_response.txt", ANTHROPIC, "complete", "end_turn", b"\n\n"),
    Recording("anthropic-sdk-python/stream-a-refusal.sse", ANTHROPIC, "complete", "refusal"),
    Recording("anthropic-sdk-python/stream-a-toolrefusal.sse", ANTHROPIC, "complete", "refusal"),
    Recording("anthropic-sdk-python/stream-b-fallback.sse", ANTHROPIC, "complete", "end_turn"),
    # openai-python live recordings (include_usage chunk, [DONE]).
    *(
        Recording(f"openai-python/{name}", CHAT, outcome, stop)
        for name, outcome, stop in (
            ("chat_content_logprobs__83b060bae42eb41c4f1edbb7c1542b954b37d9dfd1910b964ddebc9677e6ae85.bin",
             "complete", "stop"),
            ("chat_json_content__7e5ea4d12e7cc064399b6631415e65923f182256b6e6b752950a3aaa2ad2320a.bin",
             "complete", "stop"),
            ("chat_length_cutoff__4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin",
             "truncated", "length"),
            ("chat_n3_multiple_choices__a491adda08c3d4fde95f5b2ee3f60f7f745f1a56d82e62f58031cc2add502380.bin",
             "complete", "stop"),
            ("chat_refusal__173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.bin", "complete", "stop"),
            ("chat_refusal_logprobs__569c877e69429d4cbc1577d2cd6dd33878095c68badc6b6654a69769b391a1c1.bin",
             "complete", "stop"),
            ("chat_text_basic__e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin",
             "complete", "stop"),
            ("chat_text_long_json__d615580118391ee13492193e3a8bb74642d23ac1ca13fe37cb6e889b66f759f6.bin",
             "complete", "stop"),
            ("chat_tool_call_nonstrict__2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin",
             "complete", "tool_calls"),
            ("chat_tool_call_single__c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1.bin",
             "complete", "tool_calls"),
            ("chat_tool_call_strict__a247c49c5fcd492bfb7a02a3306ad615ed8d8f649888ebfddfbc3ee151f44d46.bin",
             "complete", "tool_calls"),
            ("chat_tool_calls_parallel__f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin",
             "complete", "tool_calls"),
        )
    ),
    # pydantic-ai cassette bodies (raw SSE).
    Recording("pydantic-ai/test_anthropic__test_anthropic_model_thinking_part_redacted_stream.interaction0.sse",
              ANTHROPIC, "complete", "end_turn"),
    Recording("pydantic-ai/test_anthropic__test_anthropic_model_thinking_part_stream.interaction0.sse",
              ANTHROPIC, "complete", "end_turn"),
    Recording("pydantic-ai/test_anthropic__test_anthropic_model_web_search_tool_stream.interaction0.sse",
              ANTHROPIC, "complete", "end_turn"),
    Recording("pydantic-ai/test_anthropic__test_pause_turn_web_search_streaming_vcr.interaction0.sse",
              ANTHROPIC, "complete", "pause_turn"),
    Recording("pydantic-ai/test_anthropic__test_pause_turn_web_search_streaming_vcr.interaction1.sse",
              ANTHROPIC, "complete", "end_turn"),
    Recording("pydantic-ai/test_google__test_google_model_stream.interaction0.sse", GEMINI, "complete", "STOP"),
    Recording("pydantic-ai/test_groq__test_tool_use_failed_error_streaming.interaction0.sse", CHAT, "upstream_error"),
    Recording("pydantic-ai/test_groq__test_tool_use_failed_error_streaming.interaction1.sse", CHAT, "complete",
              "tool_calls"),
    Recording("pydantic-ai/test_groq__test_tool_use_failed_error_streaming.interaction2.sse", CHAT, "complete", "stop"),
    Recording("pydantic-ai/test_openai__test_run_stream_sync_streams_real_model.interaction0.sse", CHAT, "complete",
              "tool_calls"),
    Recording("pydantic-ai/test_openai__test_run_stream_sync_streams_real_model.interaction1.sse", CHAT, "complete",
              "stop"),
    Recording("pydantic-ai/test_openai_responses__test_openai_responses_raw_cot_stream_openrouter.interaction0.sse",
              RESPONSES, "complete", "completed"),
    Recording("pydantic-ai/test_openai_responses__test_openai_responses_stream.interaction0.sse", RESPONSES,
              "complete", "completed"),
    Recording("pydantic-ai/test_openai_responses__test_openai_responses_stream.interaction1.sse", RESPONSES,
              "complete", "completed"),
    Recording("pydantic-ai/test_openai_responses__test_openai_responses_streaming_usage.interaction0.sse", RESPONSES,
              "complete", "completed"),
    # OpenRouter: finish_reason "length" twice, then a chunk with an error object, then [DONE]:
    # the error comes before the terminal condition, so it decides.
    Recording("pydantic-ai/test_openrouter__test_openrouter_stream_error.interaction0.sse", CHAT, "upstream_error"),
    # vercel-ai.
    Recording("vercel-ai/anthropic__anthropic-clear-thinking.1.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    Recording("vercel-ai/anthropic__anthropic-json-tool.2.chunks.txt", ANTHROPIC, "complete", "tool_use"),
    Recording("vercel-ai/anthropic__anthropic-message-delta-input-tokens.chunks.txt", ANTHROPIC, "complete",
              "end_turn"),
    Recording("vercel-ai/anthropic__anthropic-refusal.chunks.txt", ANTHROPIC, "complete", "refusal"),
    Recording("vercel-ai/anthropic__anthropic-text.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    Recording("vercel-ai/anthropic__anthropic-tool-no-args.chunks.txt", ANTHROPIC, "complete", "tool_use"),
    Recording("vercel-ai/anthropic__anthropic-tool-search-deferred-bm25.chunks.txt", ANTHROPIC, "complete",
              split_at="message_start"),
    Recording("vercel-ai/anthropic__anthropic-web-search-tool.1.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    Recording("vercel-ai/anthropic__duplicate-message-start.chunks.txt", ANTHROPIC, "protocol_error"),
    Recording("vercel-ai/anthropic__spliced-message-start.chunks.txt", ANTHROPIC, "protocol_error"),
    Recording("vercel-ai/azure__azure-text.1.chunks.txt", RESPONSES, "complete", "completed"),
    Recording("vercel-ai/azure__azure-tool-call.1.chunks.txt", RESPONSES, "complete", "completed"),
    Recording("vercel-ai/deepseek__deepseek-text.chunks.txt", CHAT, "truncated", "length"),
    Recording("vercel-ai/deepseek__deepseek-tool-call.chunks.txt", CHAT, "complete", "tool_calls"),
    Recording("vercel-ai/google__google-reasoning.chunks.txt", GEMINI, "complete", "STOP"),
    Recording("vercel-ai/google__google-stream-tool-call-arguments.chunks.txt", GEMINI, "complete", "STOP"),
    Recording("vercel-ai/google__google-text.chunks.txt", GEMINI, "complete", "STOP"),
    Recording("vercel-ai/google__google-tool-call.chunks.txt", GEMINI, "complete", "STOP"),
    Recording("vercel-ai/groq__groq-tool-call.chunks.txt", CHAT, "complete", "tool_calls"),
    Recording("vercel-ai/open-responses__lmstudio-tool-call.1.chunks.txt", RESPONSES, "complete", "completed"),
    # Sanitized gateway trace whose final "data: [DONE]" lacks its blank line.
    Recording("vercel-ai/openai-compatible__anthropic-fallback-tool-call.sse", CHAT, "complete", "tool_calls", b"\n"),
    Recording("vercel-ai/openai-compatible__xai-tool-call.chunks.txt", CHAT, "complete", "tool_calls"),
    Recording("vercel-ai/openai__azure-model-router.1.chunks.txt", CHAT, "complete", "stop"),
    Recording("vercel-ai/openai__openai-error.1.chunks.txt", RESPONSES, "upstream_error"),
    Recording("vercel-ai/openai__openai-reasoning-encrypted-content.1.chunks.txt", RESPONSES, "complete",
              split_at="response.created"),
    Recording("vercel-ai/openai__openai-text.chunks.txt", CHAT, "complete", "stop"),
)


def _local(name: str, route: str, outcome: str, stop_reason: str | None = None,
           split_at: str | None = None) -> Recording:
    return Recording(f"vercel-ai/{name}", route, outcome, stop_reason, split_at=split_at, root=LOCAL)


def _pydantic(cassette: str, interaction: int, route: str, outcome: str, stop_reason: str | None = None,
              test_file: str | None = None) -> Recording:
    """A stream body from one of pydantic-ai's VCR cassettes (``tests/models/cassettes/<test file>/<cassette>.yaml``),
    raw SSE, named ``<test file>__<cassette>.interaction<N>.sse`` as the shared set names its pydantic-ai files. The
    test file is the route's, unless given (Chat: the server's, ``test_groq``, ``test_openrouter`` ...)."""
    if test_file is None:
        test_file = {ANTHROPIC: "test_anthropic", RESPONSES: "test_openai_responses", GEMINI: "test_google"}[route]
    return Recording(f"pydantic-ai/{test_file}__{cassette}.interaction{interaction}.sse", route, outcome, stop_reason,
                     root=LOCAL)


def _simonw(repository: str, cassette: str, interaction: int, route: str, outcome: str,
            stop_reason: str | None = None) -> Recording:
    """A stream body from a VCR cassette of Simon Willison's ``llm`` or one of its plugins (``repository``: ``llm``,
    ``llm-anthropic`` ...), raw SSE, named ``<repository>__<cassette>.interaction<N>.sse``."""
    return Recording(f"simonw-llm/{repository}__{cassette}.interaction{interaction}.sse", route, outcome, stop_reason,
                     root=LOCAL)


#: Recordings copied into this repository (``tests/recordings/SOURCES.md``: provenance, licence): vercel/ai's
#: fixtures of shapes the shared set lacks (programmatic tool calling and tool search on both typed routes, code
#: execution, MCP, advisor, Gemini streamed arguments without their closing part). Framed as the shared
#: ``.chunks.txt`` files are; ``.sse`` files are raw SSE.
LOCAL_CATALOG: tuple[Recording, ...] = (
    _local("anthropic__anthropic-programmatic-tool-calling.1.chunks.txt", ANTHROPIC, "complete",
           split_at="message_start"),
    _local("anthropic__anthropic-message-start-prepopulated-content.chunks.txt", ANTHROPIC, "complete", "tool_use"),
    _local("anthropic__anthropic-code-execution-20250825.1.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    _local("anthropic__anthropic-code-execution-file-upload.1.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    _local("anthropic__anthropic-code-execution-20260120-prompt-cache.1.chunks.txt", ANTHROPIC, "complete",
           "end_turn"),
    # A content_block_start that repeats the index of the result block before it (its deltas and stop use the
    # next index): refused, as any start at a used index is.
    _local("anthropic__anthropic-code-execution-pdf-skill.1.chunks.txt", ANTHROPIC, "protocol_error"),
    _local("anthropic__anthropic-web-fetch-tool.1.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    _local("anthropic__anthropic-mcp.1.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    _local("anthropic__anthropic-advisor-stop-reasons.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    _local("anthropic__anthropic-tool-search-bm25.1.chunks.txt", ANTHROPIC, "complete", split_at="message_start"),
    _local("anthropic__anthropic-fallback-mid-output.chunks.txt", ANTHROPIC, "complete", "tool_use"),
    _local("anthropic__anthropic-claude-sonnet-5-reasoning-summarized.chunks.txt", ANTHROPIC, "complete", "end_turn"),
    _local("anthropic__anthropic-issue-11719-quoted-tool-input.chunks.txt", ANTHROPIC, "complete", "tool_use"),
    _local("responses__openai-tool-search.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-client-tool-search.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-client-tool-search.2.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__programmatic-tool-calling.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__programmatic-tool-calling.2.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__programmatic-tool-calling.3.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-apply-patch-tool.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-mcp-tool-approval.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-mcp-tool-approval.4.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-web-search-tool.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-local-shell-tool.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-custom-tool.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-phase.1.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__issue-19493-gpt-5.1-tool-call.chunks.txt", RESPONSES, "complete", "completed"),
    _local("responses__openai-error-null-code.chunks.txt", RESPONSES, "upstream_error"),
    _local("responses__openai-response-failed-only.1.chunks.txt", RESPONSES, "upstream_error"),
    # GitHub Copilot gives an item another id in each event: the closed item is not the added one (refused).
    _local("responses__github-copilot-id-rotation.1.chunks.txt", RESPONSES, "protocol_error"),
    _local("google__google-stream-no-args-tool-call.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt", GEMINI,
           "complete", "STOP"),
    _local("google__google-vertex-stream-tool-call-arguments-nested.1.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__google-reasoning-gemini3.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__google-tool-call-gemini3.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__issue-19822-google-search-live.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__issue-18073-empty-text-thought-signature.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__gemma-4-output-usage.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__issue-10781.1.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__issue-10781.2.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__google-stream-gemini-3.7-flash-2026-09-14.chunks.txt", GEMINI, "complete", "STOP"),
    _local("google__google-recursive-tool-call.sse", GEMINI, "complete", "STOP"),
    _local("google__issue-19758-prompt-block.chunks.txt", GEMINI, "truncated", "PROHIBITED_CONTENT"),
    # One usage-only chunk (no candidate, no finish reason): never a complete answer.
    _local("google__google-usage-raw-live.sse", GEMINI, "truncated"),
    # Mistral's reasoning models on the Chat route: content as a list of thinking and text chunks.
    _local("mistral__mistral-reasoning.chunks.txt", CHAT, "complete", "stop"),
    _local("openai-compatible__issue-13703-mistral-thinking.chunks.txt", CHAT, "complete", "stop"),
    # pydantic-ai's live VCR recordings (MIT): hosted tools on all three typed/Gemini routes, thinking, custom tools.
    _pydantic("test_anthropic_advisor_tool_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_code_execution_download_file_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_code_execution_file_outputs_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_code_execution_tool_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_fable_5_1_drops_a_stale_thinking_block_streamed", 1, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_local_shell_toolset_stream", 0, ANTHROPIC, "complete", "tool_use"),
    _pydantic("test_anthropic_local_shell_toolset_stream", 1, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_shell_tool_file_outputs_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_shell_tool_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_text_editor_code_execution_tool_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_text_editor_toolset_stream", 0, ANTHROPIC, "complete", "tool_use"),
    _pydantic("test_anthropic_text_editor_toolset_stream", 1, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_anthropic_web_fetch_tool_stream", 0, ANTHROPIC, "complete", "end_turn"),
    _pydantic("test_google_auto_native_structured_stream_gemini_3", 0, GEMINI, "complete", "STOP"),
    # Hosted code execution (and file search, run as code): STOP on the executableCode chunk, the answer after it.
    _pydantic("test_google_model_builtin_code_execution_stream", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_file_search_tool_stream", 3, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_iter_stream", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_iter_stream", 1, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_iter_stream", 2, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_thinking_part_iter", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_web_fetch_tool_stream", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_model_web_search_tool_stream", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_stream_usage_is_live_mid_stream", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_streaming_tool_call_thought_signature", 0, GEMINI, "complete", "STOP"),
    _pydantic("test_google_streaming_tool_call_thought_signature", 1, GEMINI, "complete", "STOP"),
    _pydantic("test_background_mode_streaming_starting_after_vcr", 0, RESPONSES, "complete", "completed"),
    # The same background response fetched again with ?stream=true&starting_after=0: alone it lacks response.created
    # (order); after a cut of the first stream it resumes the answer (test_resume.py).
    _pydantic("test_background_mode_streaming_starting_after_vcr", 1, RESPONSES, "protocol_error"),
    _pydantic("test_gpt5_freeform_text_streaming", 0, RESPONSES, "complete", "completed"),
    _pydantic("test_gpt5_freeform_text_streaming", 1, RESPONSES, "complete", "completed"),
    _pydantic("test_gpt5_freeform_text_streaming", 2, RESPONSES, "complete", "completed"),
    # Three MCP servers: only the last mcp_list_tools item is closed by output_item.done (pydantic-ai#5419).
    _pydantic("test_openai_responses_model_mcp_list_tools_stream_backfills_missing_results", 0, RESPONSES, "complete",
              "completed"),
    _pydantic("test_openai_responses_model_web_search_tool_stream", 0, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_responses_moderation_stream", 0, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_responses_phase_streamed_on_part_start", 0, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_responses_phase_streamed_on_part_start", 1, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_conversation_id_streaming_provider_details", 1, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_responses_code_execution_download_file_stream", 0, RESPONSES, "complete", "completed"),
    # Hosted shell: shell_call items in a container, their command deltas (no item_id), shell_call_output items.
    _pydantic("test_openai_responses_hosted_shell_with_uploaded_file_stream", 1, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_responses_model_file_search_tool_stream", 3, RESPONSES, "complete", "completed"),
    _pydantic("test_openai_responses_model_mcp_server_tool_stream", 0, RESPONSES, "complete", "completed"),
    # Chat from Groq (compound web search: executed_tools deltas, a new id per chunk; gpt-oss reasoning; an error
    # event inside a 200 stream), OpenAI (a moderation chunk after the usage chunk) and OpenRouter (comment lines,
    # a repeated stop chunk, encrypted and signed reasoning_details, annotations, server tools).
    _pydantic("test_groq_model_web_search_tool_stream", 0, CHAT, "complete", "stop", "test_groq"),
    _pydantic("test_tool_use_failed_error_streaming_with_text", 0, CHAT, "upstream_error", test_file="test_groq"),
    _pydantic("test_tool_use_failed_error_streaming_with_text", 1, CHAT, "complete", "tool_calls", "test_groq"),
    _pydantic("test_openai_moderation_stream", 0, CHAT, "complete", "stop", "test_openai"),
    _pydantic("test_openrouter_advisor_tool_stream", 0, CHAT, "complete", "stop", "test_openrouter"),
    _pydantic("test_openrouter_cache_streaming_e2e", 0, CHAT, "complete", "stop", "test_openrouter"),
    _pydantic("test_openrouter_stream_with_native_options", 0, CHAT, "complete", "stop", "test_openrouter"),
    _pydantic("test_openrouter_stream_with_reasoning", 0, CHAT, "complete", "stop", "test_openrouter"),
    _pydantic("test_openrouter_streaming_reasoning", 0, CHAT, "complete", "stop", "test_openrouter"),
    _pydantic("test_openrouter_web_search_annotations_stream", 0, CHAT, "complete", "stop", "test_openrouter"),
    _pydantic("test_openrouter_web_search_tool_usage_stream", 0, CHAT, "complete", "stop", "test_openrouter"),
    # Simon Willison's llm and its plugins (Apache-2.0), 2024-2026: a refusal, server tools called from code, citations,
    # a stop sequence, the oldest Anthropic shape; Responses without sequence numbers; Chat through OpenRouter.
    _simonw("llm-anthropic", "test_async_prompt", 1, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_code_execution", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_mcp_server_side_tool", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_prompt_with_prefill_and_stop_sequences", 0, ANTHROPIC, "complete", "stop_sequence"),
    # A refusal: no content block, stop_reason "refusal" with stop_details; a complete answer (route-contracts.md).
    _simonw("llm-anthropic", "test_refusal_raises", 0, ANTHROPIC, "complete", "refusal"),
    _simonw("llm-anthropic", "test_schema_prompt_async", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_thinking_prompt", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_tools", 0, ANTHROPIC, "complete", "tool_use"),
    _simonw("llm-anthropic", "test_web_fetch", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_web_search", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-anthropic", "test_web_search_server_side_tool", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm-claude-3", "test_prompt", 0, ANTHROPIC, "complete", "end_turn"),
    _simonw("llm", "test_async_model", 0, RESPONSES, "complete", "completed"),
    _simonw("llm", "test_async_model_schema", 0, RESPONSES, "complete", "completed"),
    _simonw("llm", "test_responses_basic_streaming", 0, RESPONSES, "complete", "completed"),
    _simonw("llm", "test_responses_tool_use_streaming", 0, RESPONSES, "complete", "completed"),
    _simonw("llm", "test_responses_tool_use_streaming", 1, RESPONSES, "complete", "completed"),
    _simonw("llm", "test_tools", 0, RESPONSES, "complete", "completed"),
    _simonw("llm-openrouter", "test_reasoning", 1, RESPONSES, "complete", "completed"),
    _simonw("llm", "test_tool_use_basic", 0, CHAT, "complete", "tool_calls"),
    _simonw("llm", "test_tool_use_basic", 1, CHAT, "complete", "stop"),
    # Kimi K2 through OpenRouter: a tool call, then [DONE] without any finish_reason: never a complete answer.
    _simonw("llm", "test_tools_streaming_variant_a", 0, CHAT, "truncated"),
    _simonw("llm", "test_tools_streaming_variant_a", 1, CHAT, "complete", "stop"),
    _simonw("llm", "test_tools_streaming_variant_c", 1, CHAT, "complete", "stop"),
    # Claude through OpenRouter (2024) passes Anthropic's end_turn as the Chat finish reason: unknown to the route.
    _simonw("llm-openrouter", "test_image_prompt", 1, CHAT, "protocol_error"),
    _simonw("llm-openrouter", "test_prompt", 1, CHAT, "complete", "stop"),
    _simonw("llm-openrouter", "test_tool_calls", 1, CHAT, "complete", "tool_calls"),
)


@dataclass(frozen=True)
class Case:
    """One byte stream to replay and what it must end as."""

    id: str
    route: str
    data: bytes
    outcome: str
    stop_reason: str | None
    recording: Recording


def frame_jsonl(lines: list[bytes], route: str) -> bytes:
    """vercel's harness framing: ``data: <line>\\n\\n`` each; ``[DONE]`` only for Chat."""
    body = b"".join(b"data: " + line + b"\n\n" for line in lines)
    return body + b"data: [DONE]\n\n" if route == CHAT else body


def _jsonl_streams(rec: Recording) -> list[list[bytes]]:
    lines = [line for line in (rec.root / rec.path).read_bytes().split(b"\n") if line.strip()]
    if rec.split_at is None:
        return [lines]
    streams: list[list[bytes]] = []
    for line in lines:
        if json.loads(line).get("type") == rec.split_at or not streams:
            streams.append([])
        streams[-1].append(line)
    return streams


def cases(local: bool = True) -> list[Case]:
    """Every replay case derived from :data:`CATALOG` and (``local``) :data:`LOCAL_CATALOG` (see the module
    docstring)."""
    out: list[Case] = []
    for rec in (*CATALOG, *LOCAL_CATALOG) if local else CATALOG:
        name = rec.path.split("/", 1)[1]
        if rec.path.endswith(".chunks.txt"):
            streams = _jsonl_streams(rec)
            for n, lines in enumerate(streams):
                suffix = f"#{n}" if len(streams) > 1 else ""
                out.append(Case(name + suffix, rec.route, frame_jsonl(lines, rec.route), rec.outcome,
                                rec.stop_reason, rec))
            continue
        raw = (rec.root / rec.path).read_bytes()
        if rec.missing_terminator:
            out.append(Case(name + "[as-recorded]", rec.route, raw, "truncated", None, rec))
            out.append(Case(name + "[terminated]", rec.route, raw + rec.missing_terminator, rec.outcome,
                            rec.stop_reason, rec))
        else:
            out.append(Case(name, rec.route, raw, rec.outcome, rec.stop_reason, rec))
    return out


def replay(route: str, chunks: list[bytes], **session_kwargs: object) -> StreamSession:
    """Open a 200 event-stream session, feed ``chunks``, finish it; return the session."""
    session = StreamSession(route, **session_kwargs)  # type: ignore[arg-type]
    session.open(200, "text/event-stream")
    for chunk in chunks:
        if session.done:
            break
        session.feed(chunk)
    session.finish()
    return session


#: Telemetry fields that legitimately depend on how the bytes were chunked or, after a
#: mid-stream failure, on how much of the chunk holding the failing event was already read.
CHUNKING_DEPENDENT = ("chunk_count",)
AFTER_FAILURE_DEPENDENT = ("bytes_received", "decoded_character_count", "pending_line_character_count",
                           "pending_event_character_count")


def comparable(route: str, chunks: list[bytes], on_session: Callable[[StreamSession], object] | None = None, /,
               **session_kwargs: object) -> tuple[object, ...]:
    """The chunking-invariant view of a replay: the result dict (minus chunking-dependent
    telemetry), the updates with consecutive deltas merged, and the final update's kind.
    ``on_session`` is called with the finished session (the fuzzer checks its invariants there)."""
    session = StreamSession(route, **session_kwargs)  # type: ignore[arg-type]
    updates = list(session.open(200, "text/event-stream"))
    ended_early = False
    for chunk in chunks:
        if session.done:
            ended_early = True
            break
        updates.extend(session.feed(chunk))
    ended_early = ended_early or session.done
    result = session.finish()
    if on_session is not None:
        on_session(session)
    final = session.final_update
    assert final is not None
    if not ended_early:
        updates.append(final)
    assert updates[-1] is final, "the final update must come last"
    data = result.to_dict()
    telemetry = dict(data["telemetry"])
    for key in CHUNKING_DEPENDENT + (AFTER_FAILURE_DEPENDENT if ended_early else ()):
        telemetry.pop(key)
    data["telemetry"] = telemetry
    shown = [u.to_dict() for u in updates[:-1]]
    for update in shown:  # every provisional update encodes on its own: no surrogate, not even half a pair
        json.dumps(update, ensure_ascii=False).encode()
    return (data, merge_deltas(shown), final.kind, session.events_seen)


def merge_deltas(updates: list[dict[str, object]]) -> list[dict[str, object]]:
    """Merge consecutive text/tool-input deltas for the same target (h11's normalize_data_events)."""
    merged: list[dict[str, object]] = []
    for update in updates:
        prev = merged[-1] if merged else None
        if prev is not None and update["kind"] == prev["kind"] == "text_delta" and (
            update["channel"], update["index"]) == (prev["channel"], prev["index"]):
            merged[-1] = {**prev, "text": str(prev["text"]) + str(update["text"])}
        elif (prev is not None and update["kind"] == prev["kind"] == "tool_input_delta"
              and update["call"] == prev["call"]):
            merged[-1] = {**prev, "fragment": str(prev["fragment"]) + str(update["fragment"])}
        else:
            merged.append(update)
    return merged


# -- synthetic streams for the route tests -----------------------------------------------------

def sse(*items: object) -> bytes:
    """Frame events: a dict becomes ``data: <json>``, a str is the data text as is, and a pair
    ``(name, payload)`` adds an ``event: name`` line. Each event ends with a blank line."""
    out = []
    for item in items:
        name = None
        if isinstance(item, tuple):
            name, item = item
        text = item if isinstance(item, str) else json.dumps(item, separators=(",", ":"))
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def check(route: str, data: bytes, **session_kwargs: object) -> tuple[StreamResult, list[dict[str, object]]]:
    """Replay ``data`` under every chunking (one result for all of them) and return the
    whole-input :class:`StreamResult` and the merged updates (final update excluded)."""
    view = assert_chunking_invariant(lambda chunks: comparable(route, chunks, **session_kwargs), data,
                                     random_count=20)
    session = replay(route, [data], **session_kwargs)
    assert session.result is not None
    return session.result, view[1]  # type: ignore[return-value]


def outcome_of(route: str, data: bytes, **session_kwargs: object) -> tuple[str, str | None]:
    """``(outcome, stage)`` of ``data`` under every chunking."""
    result, _ = check(route, data, **session_kwargs)
    return result.outcome.value, result.stage
