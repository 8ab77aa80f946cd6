"""Route ``openai-responses``: every documented stop value and output item type (every chunking).

Shapes follow the OpenAI reference: the streaming-events reference
(https://developers.openai.com/api/reference/resources/responses/streaming-events, one example per
event type) and the item models of openai-python 3.57.0 (``src/openai/types/responses/``); the
item examples are the ones of the tool guides (function calling / custom tools, computer use, local
shell, shell, apply_patch, remote MCP, web search, file search, code interpreter, image generation),
with ids shortened. Each test says which.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import LOCAL, check, outcome_of, sse
from webclient import Limits
from webclient._routes import StopCategory
from webclient._routes.openai_responses import STOP_REASONS

ROUTE = "openai-responses"


def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (kind, {"type": kind, **fields})


CREATED = ev("response.created", response={"id": "resp_67c", "object": "response", "status": "in_progress",
                                           "model": "gpt-4.1-2025-04-14", "output": []})


def completed(status: str = "completed") -> tuple[str, dict[str, Any]]:
    return ev("response.completed", response={"id": "resp_67c", "status": status, "usage": {"total_tokens": 9}})


def stream(*events: tuple[str, dict[str, Any]], terminal: Any = None) -> bytes:
    return sse(CREATED, *events, terminal if terminal is not None else completed())


def whole_item(index: int, item: dict[str, Any], *between: tuple[str, dict[str, Any]],
               added: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """An item announced by output_item.added (``added``, default: the item in progress) and
    closed by output_item.done with ``item``."""
    return [ev("response.output_item.added", output_index=index,
               item=added if added is not None else {**item, "status": "in_progress"}),
            *between, ev("response.output_item.done", output_index=index, item=item)]


def message(index: int, text: str, annotations: list[dict[str, Any]] | None = None) -> list[Any]:
    item_id = f"msg_{index}"
    done = {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": annotations or []}]}
    return whole_item(index, done,
                      ev("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
                         part={"type": "output_text", "text": "", "annotations": []}),
                      ev("response.output_text.delta", item_id=item_id, output_index=index, content_index=0,
                         delta=text),
                      *(ev("response.output_text.annotation.added", item_id=item_id, output_index=index,
                           content_index=0, annotation_index=n, annotation=a) for n, a in enumerate(annotations or [])),
                      added={"id": item_id, "type": "message", "status": "in_progress", "role": "assistant",
                             "content": []})


def calls(result: Any) -> list[tuple[Any, ...]]:
    return [(c.kind, c.id, c.name, c.state, c.arguments, c.input_text, c.ready) for c in result.tool_calls]


# -- stop values (response_status.py, response.py IncompleteDetails.reason) ----------------------------

EXPECTED = {StopCategory.SUCCESS: ("complete", None), StopCategory.LENGTH: ("truncated", "stop_reason"),
            StopCategory.FILTER: ("truncated", "stop_reason"), StopCategory.FAILURE: ("upstream_error", "error_stop")}


@pytest.mark.parametrize(("reason", "category"), sorted(STOP_REASONS.items()), ids=sorted(STOP_REASONS))
def test_every_documented_stop_value_ends_as_its_category(reason: str, category: StopCategory) -> None:
    # response.incomplete carries incomplete_details.reason (max_output_tokens, content_filter ...);
    # any other status arrives as the terminal response's status.
    if reason in ("completed", "failed", "cancelled"):
        terminal = completed(reason)
    else:
        details = None if reason == "incomplete" else {"reason": reason}
        terminal = ev("response.incomplete", response={"id": "resp_67c", "status": "incomplete",
                                                       "incomplete_details": details})
    result, _ = check(ROUTE, stream(*message(0, "Hi"), terminal=terminal))
    assert (result.outcome.value, result.stage) == EXPECTED[category]
    assert result.stop_reason == reason and result.telemetry.stop_reason == reason


def test_an_unknown_status_or_incomplete_reason_fails_closed() -> None:
    result, _ = check(ROUTE, stream(*message(0, "Hi"), terminal=completed("in_progress")))
    assert (result.outcome.value, result.stage, result.stop_reason) == ("protocol_error", "unrecognized_stop",
                                                                        "in_progress")
    terminal = ev("response.incomplete", response={"status": "incomplete", "incomplete_details": {"reason": "new"}})
    result, _ = check(ROUTE, stream(terminal=terminal))
    assert (result.outcome.value, result.stage, result.telemetry.stop_reason) == ("protocol_error",
                                                                                  "unrecognized_stop", "unrecognized")


# -- client-executed calls ---------------------------------------------------------------------------


def test_custom_tool_call_streams_free_text_input_and_is_a_ready_call() -> None:
    # Custom tools guide (function-calling#custom-tools): a custom_tool_call item with free-text input,
    # streamed by response.custom_tool_call_input.delta / .done (ResponseCustomToolCallInput*Event).
    item = {"type": "custom_tool_call", "id": "ctc_6890", "call_id": "call_aGiF", "name": "code_exec",
            "input": 'print("hello world")', "status": "completed"}
    events = whole_item(0, item,
                        ev("response.custom_tool_call_input.delta", item_id="ctc_6890", output_index=0,
                           delta='print("hello'),
                        ev("response.custom_tool_call_input.delta", item_id="ctc_6890", output_index=0,
                           delta=' world")'),
                        ev("response.custom_tool_call_input.done", item_id="ctc_6890", output_index=0,
                           input='print("hello world")'),
                        added={**item, "input": "", "status": "in_progress"})
    result, updates = check(ROUTE, stream(*events))
    assert result.outcome.value == "complete"
    assert calls(result) == [("custom", "call_aGiF", "code_exec", "valid", None, 'print("hello world")', True)]
    assert [u["fragment"] for u in updates if u["kind"] == "tool_input_delta"] == ['print("hello world")']
    assert result.assistant_message == [item] and result.items == ()


def test_custom_tool_input_goes_to_the_callers_validator_as_a_string() -> None:
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "code_exec", "input": "rm -rf /"}
    typed = ev("response.custom_tool_call_input.delta", item_id="ctc_1", output_index=0, delta="rm -rf /")
    data = stream(*whole_item(0, item, typed, added={**item, "input": ""}))
    grammar = {"type": "string", "pattern": "^print\\("}  # a JSON Schema applies to the string
    result, _ = check(ROUTE, data, tools={"code_exec": grammar})
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_schema")
    seen: list[object] = []
    ok, _ = check(ROUTE, data, tools={"code_exec": lambda text: seen.append(text) or []})
    assert ok.outcome.value == "complete" and set(seen) == {"rm -rf /"}
    assert outcome_of(ROUTE, data, tools={"other": {"type": "string"}}) == ("payload_error", "tool_unknown")
    bad = stream(*whole_item(0, {**item, "input": "changed"}, typed, added={**item, "input": ""}))
    assert outcome_of(ROUTE, bad) == ("payload_error", "tool_arguments_mismatch")


# Computer use guide: a computer_call with a click action and no pending safety checks.
COMPUTER = {"type": "computer_call", "id": "cu_67cc", "call_id": "call_zw3", "status": "completed",
            "action": {"type": "click", "button": "left", "x": 156, "y": 50}, "pending_safety_checks": []}
# Local shell guide: a local_shell_call with an exec action.
LOCAL_SHELL = {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_ls", "status": "completed",
               "action": {"type": "exec", "command": ["ls", "-la"], "env": {}, "timeout_ms": 10000}}
# Shell guide: a shell_call in the local environment (the client runs the commands).
SHELL = {"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "completed",
         "action": {"commands": ["ls -la"], "timeout_ms": 120000, "max_output_length": 4096},
         "environment": {"type": "local"}}
# apply_patch guide: an update_file operation with a V4A diff.
APPLY_PATCH = {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_ap", "status": "completed",
               "operation": {"type": "update_file", "path": "lib/fib.py",
                             "diff": "@@\n-def fib(n):\n+def fib(n: int):\n"}}


@pytest.mark.parametrize(
    ("item", "kind", "arguments"),
    [
        (COMPUTER, "computer", {"action": COMPUTER["action"], "pending_safety_checks": []}),
        (LOCAL_SHELL, "local_shell", {"action": LOCAL_SHELL["action"]}),
        (SHELL, "shell", {"action": SHELL["action"], "environment": {"type": "local"}}),
        (APPLY_PATCH, "apply_patch", {"operation": APPLY_PATCH["operation"]}),
    ],
    ids=["computer_call", "local_shell_call", "shell_call", "apply_patch_call"],
)
def test_whole_item_client_calls_surface_as_tool_calls_of_their_kind(item: dict[str, Any], kind: str,
                                                                       arguments: dict[str, Any]) -> None:
    result, _ = check(ROUTE, stream(*whole_item(0, item)))
    assert result.outcome.value == "complete"
    assert calls(result) == [(kind, item["call_id"], kind, "valid", arguments,
                              json.dumps(arguments, ensure_ascii=False), True)]
    assert result.assistant_message == [item] and result.items == ()
    # gated exactly like function calls: registered tools must name the kind, validators see the action
    assert outcome_of(ROUTE, stream(*whole_item(0, item)), tools={"get_weather": {}}) == ("payload_error",
                                                                                          "tool_unknown")
    assert outcome_of(ROUTE, stream(*whole_item(0, item)), tools={kind: lambda a: False}) == ("payload_error",
                                                                                             "tool_schema")


def test_a_computer_call_with_batched_actions_carries_them_as_its_arguments() -> None:
    # computer-use with batched actions: ResponseComputerToolCall.actions (a list) beside or instead of action.
    actions = [{"type": "click", "button": "left", "x": 1, "y": 2}, {"type": "type", "text": "hi"}]
    item = {"type": "computer_call", "id": "cu_2", "call_id": "call_b", "status": "completed", "actions": actions,
            "pending_safety_checks": []}
    result, _ = check(ROUTE, stream(*whole_item(0, item)))
    assert calls(result)[0][:5] == ("computer", "call_b", "computer", "valid", {"actions": actions,
                                                                               "pending_safety_checks": []})


def test_a_whole_item_call_whose_item_never_closes_is_not_ready() -> None:
    data = stream(*whole_item(0, COMPUTER)[:1])
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "open_block")
    assert [(c.kind, c.state, c.ready) for c in result.tool_calls] == [("computer", "streaming", False)]


def test_shell_command_deltas_are_shown_while_the_call_streams() -> None:
    # response.shell_call_command.added / .delta / .done (ResponseShellCallCommand*Event).
    events = whole_item(0, SHELL,
                        ev("response.shell_call_command.added", output_index=0, command_index=0, command=""),
                        ev("response.shell_call_command.delta", output_index=0, command_index=0, delta="ls "),
                        ev("response.shell_call_command.delta", output_index=0, command_index=0, delta="-la"),
                        ev("response.shell_call_command.done", output_index=0, command_index=0, command="ls -la"),
                        added={**SHELL, "action": {"commands": []}, "status": "in_progress"})
    result, updates = check(ROUTE, stream(*events))
    assert [u["fragment"] for u in updates if u["kind"] == "tool_input_delta"] == ["ls -la"]
    assert result.tool_calls[0].arguments == {"action": SHELL["action"], "environment": {"type": "local"}}


def test_a_shell_call_in_a_container_is_hosted_with_its_output_item() -> None:
    hosted = {**SHELL, "environment": {"type": "container_reference", "container_id": "cntr_1"}}
    output = {"type": "shell_call_output", "id": "sho_1", "call_id": "call_sh", "status": "completed",
              "output": [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
    events = [*whole_item(0, hosted, ev("response.shell_call_command.delta", output_index=0, command_index=0,
                                        delta="ls")),
              *whole_item(1, output, ev("response.shell_call_output_content.delta", item_id="sho_1", output_index=1,
                                        command_index=0, delta={"stdout": "a.txt\n"}))]
    result, _ = check(ROUTE, stream(*events))
    assert (result.outcome.value, result.tool_calls, result.items) == ("complete", (), (hosted, output))


def test_mcp_approval_request_is_a_call_validated_like_a_function() -> None:
    # Remote MCP guide: an mcp_approval_request the client approves or rejects.
    item = {"type": "mcp_approval_request", "id": "mcpr_682d", "server_label": "deepwiki", "name": "ask_question",
            "arguments": '{"repoName":"modelcontextprotocol/modelcontextprotocol","question":"transports?"}'}
    result, _ = check(ROUTE, stream(*whole_item(0, item, added=item)))
    assert calls(result) == [("mcp_approval", "mcpr_682d", "ask_question", "valid",
                              {"repoName": "modelcontextprotocol/modelcontextprotocol", "question": "transports?"},
                              item["arguments"], True)]
    assert result.assistant_message == [item]
    broken = {**item, "arguments": '{"repoName":'}
    assert outcome_of(ROUTE, stream(*whole_item(0, broken, added=broken))) == ("payload_error", "tool_json")


# Tool search the client runs (execution "client"): vercel/ai's recorded openai-client-tool-search.1.chunks.txt.
# The item is added with one call_id and empty arguments, and done with another call_id and the arguments;
# the client answers with a tool_search_output quoting the done item's call_id.
CLIENT_SEARCH = {"id": "tsc_0514", "type": "tool_search_call", "status": "completed",
                 "arguments": {"goal": "Find a tool that can provide current weather information."},
                 "call_id": "call_RWTIIVfxsJW9fecsg6fy23Dy", "execution": "client"}
CLIENT_SEARCH_ADDED = {**CLIENT_SEARCH, "status": "in_progress", "arguments": {},
                       "call_id": "call_NHis2zQiYcIaO6pf9nb5q1wY"}


def test_a_tool_search_the_client_runs_is_a_call_with_the_closed_items_call_id_and_arguments() -> None:
    data = stream(*whole_item(0, CLIENT_SEARCH, added=CLIENT_SEARCH_ADDED))
    result, updates = check(ROUTE, data)
    arguments = {"arguments": CLIENT_SEARCH["arguments"]}
    assert calls(result) == [("tool_search", "call_RWTIIVfxsJW9fecsg6fy23Dy", "tool_search", "valid", arguments,
                              json.dumps(arguments, ensure_ascii=False), True)]
    assert (result.assistant_message, result.items) == ([CLIENT_SEARCH], ())
    assert [u["id"] for u in updates if u["kind"] == "tool_call"] == [
        "call_NHis2zQiYcIaO6pf9nb5q1wY", "call_RWTIIVfxsJW9fecsg6fy23Dy", "call_RWTIIVfxsJW9fecsg6fy23Dy"]
    assert outcome_of(ROUTE, data, tools={"get_weather": {}}) == ("payload_error", "tool_unknown")
    assert outcome_of(ROUTE, data, tools={"tool_search": {"type": "object"}}) == ("complete", None)


def test_only_a_client_tool_search_may_change_its_call_id_when_it_closes() -> None:
    moved = {**APPLY_PATCH, "call_id": "call_other"}
    assert outcome_of(ROUTE, stream(*whole_item(0, moved, added={**APPLY_PATCH, "status": "in_progress"}))) == (
        "protocol_error", "item_mismatch")


@pytest.mark.parametrize("execution", [None, "browser", 1], ids=["absent", "unknown", "number"])
def test_a_tool_search_run_by_whom_the_route_does_not_know_fails_closed(execution: Any) -> None:
    item = {**CLIENT_SEARCH, "execution": execution}
    data = stream(*whole_item(0, item, added={**item, "status": "in_progress"}))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "unknown_type")
    assert (result.items, result.tool_calls, result.assistant_message) == ((), (), [])  # nothing of it taken
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.outcome.value, kept.items, kept.tool_calls) == ("complete", (item,), ())


@pytest.mark.parametrize(("environment", "stage"), [
    ({"type": "cloud_sandbox"}, "unknown_type"), (5, "envelope"), ("container_reference", "envelope"),
    ({"type": 5}, "envelope"), ({}, "envelope"),
], ids=["unknown-type", "number", "string", "type-not-a-string", "no-type"])
def test_a_shell_call_whose_environment_says_no_known_runner_fails_closed(environment: Any, stage: str) -> None:
    # Never a guess that the client runs it: a malformed environment is not "no environment".
    item = {**SHELL, "environment": environment}
    result, _ = check(ROUTE, stream(*whole_item(0, item)))
    assert (result.outcome.value, result.stage, result.tool_calls) == ("protocol_error", stage, ())
    if stage == "unknown_type":
        kept, _ = check(ROUTE, stream(*whole_item(0, item)), keep_unknown_items=True)
        assert (kept.outcome.value, kept.items, kept.tool_calls) == ("complete", (item,), ())


HOSTED_SHELL = {**SHELL, "environment": {"type": "container_reference", "container_id": "cntr_1"}}


@pytest.mark.parametrize("added", [{k: v for k, v in SHELL.items() if k != "environment"},
                                   {**SHELL, "environment": None}, SHELL], ids=["absent", "null", "local"])
def test_a_shell_call_without_an_environment_or_in_the_local_one_is_the_clients_whichever_the_closed_item_says(
        added: dict[str, Any]) -> None:
    # openai-python: environment is Optional (null or absent: the client's own machine), or {"type": "local"}.
    for done in (added, SHELL):
        result, _ = check(ROUTE, stream(*whole_item(0, done, added={**added, "status": "in_progress"})))
        assert result.outcome.value == "complete"
        assert [(c.kind, c.ready) for c in result.tool_calls] == [("shell", True)]


@pytest.mark.parametrize(("added", "done"), [
    (SHELL, HOSTED_SHELL), (HOSTED_SHELL, SHELL), (HOSTED_SHELL, {**SHELL, "environment": {"type": "gpu"}}),
    (CLIENT_SEARCH, {**CLIENT_SEARCH, "execution": "server"}),
], ids=["local-then-container", "container-then-local", "container-then-unknown", "client-then-server-search"])
def test_a_closed_item_that_says_another_runner_than_the_added_one_is_item_mismatch(added: dict[str, Any],
                                                                                  done: dict[str, Any]) -> None:
    result, _ = check(ROUTE, stream(*whole_item(0, done, added={**added, "status": "in_progress"})))
    assert (result.outcome.value, result.stage) == ("protocol_error", "item_mismatch")
    assert not any(call.ready for call in result.tool_calls)  # (a call opened when added stays unready)


@pytest.mark.parametrize("item", [SHELL, HOSTED_SHELL, CLIENT_SEARCH], ids=["local", "container", "client-search"])
def test_a_closed_item_that_leaves_out_who_runs_it_keeps_the_added_ones_runner(item: dict[str, Any]) -> None:
    field = "execution" if item["type"] == "tool_search_call" else "environment"
    done = {k: v for k, v in item.items() if k != field}
    result, _ = check(ROUTE, stream(*whole_item(0, done, added={**item, "status": "in_progress"})))
    assert result.outcome.value == "complete"
    assert bool(result.tool_calls) is (item is not HOSTED_SHELL)


def test_a_programmatic_tool_call_is_a_function_call_sent_back_with_its_caller() -> None:
    # vercel/ai programmatic-tool-calling.1.chunks.txt: the program item, then the client call it made.
    program = HOSTED[-2][0]
    call = {"id": "fc_0bac", "type": "function_call", "status": "in_progress", "arguments": '{"sku":"sku_123"}',
            "call_id": "call_VgDS", "caller": {"type": "program", "caller_id": "call_voPd"}, "name": "getInventory"}
    events = [*whole_item(0, program, added={**program, "code": ""}),
              *whole_item(1, call, ev("response.function_call_arguments.delta", item_id="fc_0bac", output_index=1,
                                      delta='{"sku":"sku_123"}'),
                          ev("response.function_call_arguments.done", item_id="fc_0bac", output_index=1,
                             arguments='{"sku":"sku_123"}'), added={**call, "arguments": ""})]
    result, _ = check(ROUTE, stream(*events))
    assert [(c.kind, c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("function", "call_VgDS", "getInventory", {"sku": "sku_123"})]
    assert (result.items, result.assistant_message) == ((program,), [program, call])


# -- hosted tools: items, never calls ------------------------------------------------------------------

HOSTED = [
    # Web search guide: a web_search_call with its search action, and its progress events.
    ({"type": "web_search_call", "id": "ws_67c9", "status": "completed",
      "action": {"type": "search", "query": "positive news today"}},
     ["response.web_search_call.in_progress", "response.web_search_call.searching",
      "response.web_search_call.completed"]),
    # File search guide.
    ({"type": "file_search_call", "id": "fs_67c0", "status": "completed",
      "queries": ["What is deep research?"], "results": None},
     ["response.file_search_call.in_progress", "response.file_search_call.searching",
      "response.file_search_call.completed"]),
    # Code interpreter guide, with its code deltas.
    ({"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "code": "print(4 + 4)",
      "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "8\n"}]},
     ["response.code_interpreter_call.in_progress", "response.code_interpreter_call_code.delta",
      "response.code_interpreter_call_code.done", "response.code_interpreter_call.interpreting",
      "response.code_interpreter_call.completed"]),
    # Image generation guide, with a partial image.
    ({"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo="},
     ["response.image_generation_call.in_progress", "response.image_generation_call.generating",
      "response.image_generation_call.partial_image", "response.image_generation_call.completed"]),
    # Remote MCP guide: mcp_list_tools, then an mcp_call with streamed arguments.
    ({"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "deepwiki",
      "tools": [{"name": "ask_question", "input_schema": {"type": "object"}}]},
     ["response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed"]),
    ({"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki", "name": "ask_question",
      "arguments": '{"question":"x"}', "output": "answer", "error": None},
     ["response.mcp_call.in_progress", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
      "response.mcp_call.completed"]),
    # Compaction item (ResponseCompactionItem): opaque, sent back as is.
    ({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABo-opaque"},
     ["response.compaction.compacting"]),
    # Tool search run by OpenAI (ResponseToolSearchCall / ResponseToolSearchOutputItem, execution "server"):
    # vercel/ai's recorded openai-tool-search.1.chunks.txt, shortened.
    ({"type": "tool_search_call", "id": "tsc_08a1", "status": "completed", "arguments": {"paths": ["get_weather"]},
      "call_id": None, "execution": "server"}, []),
    ({"type": "tool_search_output", "id": "tso_08a1", "status": "completed", "call_id": None, "execution": "server",
      "tools": [{"type": "function", "name": "get_weather", "defer_loading": True,
                 "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}]}, []),
    # Programmatic tool calling (openai-python Program / ProgramOutput): code OpenAI runs, and its result;
    # vercel/ai's recorded programmatic-tool-calling.1/.3.chunks.txt, shortened.
    ({"type": "program", "id": "cm_0bac", "call_id": "call_voPd", "code": "const r = await tools.getInventory({});",
      "fingerprint": "gAAAAABqYUYA-opaque"}, []),
    ({"type": "program_output", "id": "cmo_0bac", "call_id": "call_voPd", "result": '{"inventory":{}}',
      "status": "completed"}, []),
]


@pytest.mark.parametrize(("item", "progress"), HOSTED, ids=[i["type"] for i, _ in HOSTED])
def test_hosted_tool_items_are_result_items_never_tool_calls(item: dict[str, Any], progress: list[str]) -> None:
    between = [ev(kind, item_id=item["id"], output_index=0, delta="x") for kind in progress]
    result, _ = check(ROUTE, stream(*whole_item(0, item, *between), *message(1, "Done.")),
                      tools={"get_weather": {"type": "object"}})
    assert (result.outcome.value, result.text, result.tool_calls) == ("complete", "Done.", ())
    assert result.items == (item,)
    assert result.assistant_message[0] == item and result.assistant_message[1]["type"] == "message"


# -- reasoning, messages, annotations ----------------------------------------------------------------


def test_reasoning_item_keeps_its_encrypted_content_from_output_item_done() -> None:
    # Reasoning guide: with include=["reasoning.encrypted_content"] the done item carries
    # encrypted_content (the added one may not be complete: ResponseReasoningItem docstring).
    done = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan."}],
            "encrypted_content": "gAAAAABoTfOsyE0Zb3xvE-opaque=="}
    events = whole_item(0, done,
                        ev("response.reasoning_summary_part.added", item_id="rs_1", output_index=0, summary_index=0,
                           part={"type": "summary_text", "text": ""}),
                        ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0,
                           delta="Plan."),
                        added={"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA"})
    result, _ = check(ROUTE, stream(*events, *message(1, "Answer")))
    assert (result.reasoning, result.text) == ("Plan.", "Answer")
    assert result.assistant_message[0] == done
    assert result.response_id == "resp_67c" and result.model == "gpt-4.1-2025-04-14"


def test_annotations_are_citations() -> None:
    # response.output_text.annotation.added with a url_citation (web search guide's annotation).
    cite = {"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://example.com/a",
            "title": "A"}
    result, _ = check(ROUTE, stream(*message(0, "Hello", [cite])))
    assert result.citations == (cite,)
    assert result.assistant_message[0]["content"][0]["annotations"] == [cite]
    assert outcome_of(ROUTE, stream(*message(0, "Hello", [cite])), limits=Limits(max_citations=1)) == (
        "complete", None)


def test_a_closed_message_must_agree_with_its_deltas_and_gives_its_text_when_none_came() -> None:
    good = message(0, "Hello")
    wrong = [*good[:-1], ev("response.output_item.done", output_index=0,
                            item={**good[-1][1]["item"], "content": [{"type": "output_text", "text": "Bye"}]})]
    assert outcome_of(ROUTE, stream(*wrong)) == ("protocol_error", "item_mismatch")
    no_delta = [good[0], good[-1]]
    result, updates = check(ROUTE, stream(*no_delta))
    assert (result.outcome.value, result.text) == ("complete", "Hello")
    assert updates == [{"kind": "text_delta", "channel": "text", "index": 0, "text": "Hello"}]


# -- types the route does not know ------------------------------------------------------------------

UNKNOWN = {"type": "hologram_call", "id": "hc_1", "call_id": "call_h", "code": "run()", "fingerprint": "f"}


def test_an_unknown_item_type_fails_closed_unless_the_caller_keeps_unknown_items() -> None:
    data = stream(*whole_item(0, UNKNOWN, added=UNKNOWN), *message(1, "x"))
    result, _ = check(ROUTE, data)
    assert (result.outcome.value, result.stage) == ("protocol_error", "unknown_type")
    # nothing of it is taken: no item, nothing open, nothing to send back
    assert (result.items, result.assistant_message, result.telemetry.open_payload_accumulator_count) == ((), [], 0)
    kept, _ = check(ROUTE, data, keep_unknown_items=True)
    assert (kept.outcome.value, kept.items, kept.tool_calls) == ("complete", (UNKNOWN,), ())
    assert kept.assistant_message[0] == UNKNOWN


def test_an_unknown_content_part_type_fails_closed() -> None:
    events = message(0, "x")
    events[1] = ev("response.content_part.added", item_id="msg_0", output_index=0, content_index=0,
                   part={"type": "output_audio", "data": ""})
    assert outcome_of(ROUTE, stream(*events)) == ("protocol_error", "unknown_type")
    assert outcome_of(ROUTE, stream(*events), keep_unknown_items=True) == ("complete", None)


@pytest.mark.parametrize("kind", ["response.queued", "response.in_progress", "response.output_item.added"])
def test_a_known_event_before_response_created_is_order_and_an_unknown_one_is_tolerated(kind: str) -> None:
    # background mode's response.queued comes after response.created, as every known event does
    early = sse(ev(kind, response={"id": "resp_67c", "status": "queued"}), CREATED, *message(0, "x"), completed())
    assert outcome_of(ROUTE, early) == ("protocol_error", "order")
    unknown = sse(ev("response.audio.transcript.delta", delta="x"), CREATED, *message(0, "x"), completed())
    assert outcome_of(ROUTE, unknown) == ("complete", None)


def test_unknown_event_types_that_open_nothing_stay_tolerated() -> None:
    events = [ev("response.audio.transcript.delta", delta="x"), *message(0, "x")]
    assert outcome_of(ROUTE, stream(*events)) == ("complete", None)


def test_kept_items_count_against_the_item_ceiling() -> None:
    item = HOSTED[0][0]
    data = stream(*whole_item(0, item))
    needed = sum(len(json.dumps(e[1], separators=(",", ":"))) for e in whole_item(0, item))
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=needed)) == ("complete", None)
    assert outcome_of(ROUTE, data, limits=Limits(max_item_chars=needed - 1)) == ("buffer_limit", "items")


# -- hosted items the API finishes without output_item.done ------------------------------------------------------
# pydantic-ai's live recording with three MCP servers (tests/recordings/pydantic-ai, pydantic/pydantic-ai#5419):
# every mcp_list_tools item gets its in_progress and completed progress events, only the last one its
# output_item.done; response.completed lists all three.

def list_tools(n: int) -> dict[str, Any]:
    return {"type": "mcp_list_tools", "id": f"mcpl_{n}", "server_label": f"server{n}",
            "tools": [{"name": f"tool{n}", "input_schema": {"type": "object"}}]}


DONE_MESSAGE = {"id": "msg_2", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}


def list_tools_stream(*, first_progress: str = "response.mcp_list_tools.completed",
                      output: Any = None) -> bytes:
    """Two mcp_list_tools items, both finished by their progress event (the first by ``first_progress``), only
    the second closed by output_item.done; then a message; response.completed lists ``output``."""
    events: list[Any] = []
    for n in (0, 1):
        events += [ev("response.output_item.added", output_index=n, item={**list_tools(n), "tools": []}),
                   ev("response.mcp_list_tools.in_progress", item_id=f"mcpl_{n}", output_index=n)]
    events += [ev(first_progress, item_id="mcpl_0", output_index=0),
               ev("response.mcp_list_tools.completed", item_id="mcpl_1", output_index=1),
               ev("response.output_item.done", output_index=1, item=list_tools(1)), *message(2, "Done.")]
    final = [list_tools(0), list_tools(1), DONE_MESSAGE] if output is None else output
    return sse(CREATED, *events, ev("response.completed", response={"id": "resp_67c", "status": "completed",
                                                                       "output": final}))


def test_a_hosted_item_the_server_finished_but_never_closed_takes_its_entry_in_the_completed_response() -> None:
    result, _ = check(ROUTE, list_tools_stream())
    assert (result.outcome.value, result.text) == ("complete", "Done.")
    assert result.items == (list_tools(0), list_tools(1))  # item 0 as response.completed lists it
    assert result.assistant_message == [list_tools(0), list_tools(1), DONE_MESSAGE]


@pytest.mark.parametrize("progress", ["response.mcp_list_tools.in_progress", "response.web_search_call.completed"])
def test_a_hosted_item_its_own_completed_event_did_not_finish_is_still_open_at_the_terminal(progress: str) -> None:
    assert outcome_of(ROUTE, list_tools_stream(first_progress=progress)) == ("protocol_error", "open_block")


@pytest.mark.parametrize(("output", "stage"), [
    ([], "open_block"), ("x", "open_block"), ([None, list_tools(1), DONE_MESSAGE], "open_block"),
    ([{**list_tools(0), "id": "mcpl_other"}, list_tools(1), DONE_MESSAGE], "item_mismatch"),
    ([{**list_tools(0), "type": "web_search_call"}, list_tools(1), DONE_MESSAGE], "item_mismatch"),
], ids=["empty", "not-a-list", "no-entry", "other-id", "other-type"])
def test_without_a_matching_entry_in_the_completed_response_the_item_fails_closed(output: Any, stage: str) -> None:
    result, _ = check(ROUTE, list_tools_stream(output=output))
    assert (result.outcome.value, result.stage) == ("protocol_error", stage)
    # The item stays as it was added; a refused entry also leaves the terminal untaken (no stop reason).
    assert result.items[0] == result.assistant_message[0] == {**list_tools(0), "tools": []}
    if stage == "item_mismatch":
        assert (result.stop_reason, result.telemetry.terminal_condition_seen) == (None, False)


def test_the_recorded_three_server_stream_commits_every_servers_tool_list() -> None:
    name = "test_openai_responses__test_openai_responses_model_mcp_list_tools_stream_backfills_missing_results"
    result, _ = check(ROUTE, (LOCAL / "pydantic-ai" / f"{name}.interaction0.sse").read_bytes())
    assert result.outcome.value == "complete"
    lists = [item for item in result.items if item["type"] == "mcp_list_tools"]
    assert [item["server_label"] for item in lists] == ["deepwiki", "microsoft_learn", "gitmcp"]
    assert all(item["tools"] for item in lists)  # (the first two as response.completed lists them: added empty)


def test_a_completed_progress_event_closes_nothing_but_a_hosted_item() -> None:
    # Naming the message's index, or an index with no item, changes nothing: the message still needs its done.
    events = [*message(0, "Hi")[:-1], ev("response.mcp_list_tools.completed", item_id="msg_0", output_index=0),
              ev("response.mcp_list_tools.completed", item_id="mcpl_9", output_index=9)]
    final = [{"id": "msg_0", "type": "message", "status": "completed", "role": "assistant",
              "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}]
    data = sse(CREATED, *events, ev("response.completed", response={"id": "resp_67c", "status": "completed",
                                                                     "output": final}))
    assert outcome_of(ROUTE, data) == ("protocol_error", "open_block")
