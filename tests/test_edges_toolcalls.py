"""Tool calls at their edges: the problems an invalid call names, readiness only with a complete
attempt, and validators that refuse or raise (every chunking).

Found by mutation testing (``build_scripts/mutation.py``): each test fails if a verdict, a problem
text or the readiness rule of ``webclient/_toolcalls.py`` is changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.route_fixtures import check, sse
from webclient import StreamSession, UsageError
from webclient._toolcalls import Fragments, ToolRegistry, parse_tool_input

pytestmark = pytest.mark.usefixtures("no_safety_net")


def chat_call(name: str, args: str, finish: str = "tool_calls") -> bytes:
    frag = {"index": 0, "id": "c", "type": "function", "function": {"name": name, "arguments": args}}
    return sse({"choices": [{"index": 0, "delta": {"tool_calls": [frag]}, "finish_reason": None}]},
               {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}, "[DONE]")


@pytest.mark.parametrize(
    ("name", "args", "tools", "stage", "problems"),
    [
        ("rm", "{}", {"f": {}}, "tool_unknown", ("unknown tool",)),
        ("f", '{"a": ', None, "tool_json", ("input is not valid JSON",)),
        ("f", '{"a": NaN}', None, "tool_json", ("input is not valid JSON",)),
        ("f", "[1]", None, "tool_not_object", ("input is not a JSON object",)),
        ("f", '"x"', {"f": {}}, "tool_not_object", ("input is not a JSON object",)),
        ("f", '{"a": 1e999}', None, "non_finite_number", ("input holds a number that is not finite",)),
        ("f", '{"a": "\\ud800"}', {"f": {}}, "unpaired_surrogate", ("input holds an unpaired surrogate",)),
    ],
)
def test_an_invalid_call_names_its_problem_without_any_of_its_input(
        name: str, args: str, tools: dict[str, Any] | None, stage: str, problems: tuple[str, ...]) -> None:
    result, _ = check("openai-chat", chat_call(name, args), tools=tools)
    assert (result.outcome.value, result.stage) == ("payload_error", stage)
    call = result.tool_calls[0]
    assert (call.state, call.arguments, call.problems, call.ready) == ("invalid", None, problems, False)


def test_a_valid_call_in_an_attempt_that_did_not_complete_is_never_ready() -> None:
    # The call validates at its finish reason; the attempt then ends without [DONE].
    data = chat_call("f", '{"a": 1}')[: -len(b"data: [DONE]\n\n")]
    result, _ = check("openai-chat", data)
    assert (result.outcome.value, result.stage) == ("truncated", "eof")
    assert [(c.state, c.arguments, c.ready) for c in result.tool_calls] == [("valid", {"a": 1}, False)]
    assert [(c.state, c.ready) for c in result.choices[0].tool_calls] == [("valid", False)]


def test_a_valid_call_of_a_complete_attempt_is_ready_and_names_no_problem() -> None:
    result, _ = check("openai-chat", chat_call("f", '{"a": 1}'), tools={"f": lambda a: True})
    assert [(c.state, c.ready, c.problems) for c in result.tool_calls] == [("valid", True, ())]


@pytest.mark.parametrize(
    ("validator", "problems"),
    [(lambda a: False, None), (lambda a: ["too big", "too small"], ("too big", "too small")),
     ({"type": "object", "required": ["b"]}, None)],
    ids=["false", "problem-list", "schema"],
)
def test_a_refusing_validator_makes_the_call_invalid_with_its_arguments_and_problems(
        validator: object, problems: tuple[str, ...] | None) -> None:
    result, _ = check("openai-chat", chat_call("f", '{"a": 1}'), tools={"f": validator})
    assert (result.outcome.value, result.stage) == ("payload_error", "tool_schema")
    call = result.tool_calls[0]
    assert (call.state, call.arguments, call.ready) == ("invalid", {"a": 1}, False)
    assert call.problems and (problems is None or call.problems == problems)


def test_the_registry_checks_text_and_values_by_the_same_rules() -> None:
    registry = ToolRegistry({"f": {"type": "object"}, "code": {"type": "string", "maxLength": 3}})
    assert registry.check_value("g", {}) == (None, "tool_unknown", ("unknown tool",))
    assert registry.check_text("g", "x") == (None, "tool_unknown", ("unknown tool",))
    assert registry.check_value("f", [1])[1] == "tool_not_object"
    assert registry.check_text("code", "abc") == (None, None, ())
    assert registry.check_text("code", "abcd")[1] == "tool_schema"
    assert ToolRegistry(None).check("f", " \n") == ({}, None, ())
    # A call without a name is nobody's to run, whatever is registered, by every check.
    nameless = (None, "tool_unknown", ("tool call has no name",))
    for reg in (ToolRegistry(None), registry):
        for name in (None, ""):
            assert (reg.check(name, "{}"), reg.check_text(name, "x"), reg.check_value(name, {})) == (nameless,) * 3
    assert parse_tool_input("\t") == ({}, None) and parse_tool_input("[") == (None, "tool_json")


def test_joined_fragments_are_kept_as_one_so_a_later_join_copies_nothing() -> None:
    buf = Fragments()
    buf.parts += ["a", "b", "c"]
    text = buf.joined()
    assert text == "abc" and buf.parts == ["abc"]
    assert buf.joined() is text  # the cached fragment itself, not a new join
    assert Fragments().joined() == ""


@pytest.mark.parametrize("name", ["", 5, None], ids=["empty", "int", "none"])
def test_a_tool_name_that_is_not_a_non_empty_string_is_a_caller_bug(name: Any) -> None:
    with pytest.raises(UsageError, match="non-empty strings"):
        ToolRegistry({name: {"type": "object"}})
    with pytest.raises(UsageError):
        StreamSession("openai-chat", tools={name: {"type": "object"}})
