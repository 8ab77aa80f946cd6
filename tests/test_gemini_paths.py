"""Gemini streamed-argument paths (``partialArgs[].jsonPath``) are parsed and assembled in linear
time: proved by counting the work on pathological inputs, never by timing."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.test_retained import GEMINI, gemini_stream, outcome_of, streamed_call
from webclient import Limits
from webclient._routes import gemini as route
from webclient._routes.gemini import MAX_INDEX_DIGITS, MAX_PATH_STEPS, assemble, build_arguments, parse_path

#: Characters of work per character of input (paths and string values): each path character is
#: read once by a matching step and at most once more by the one failing step that ends a parse;
#: each step costs one unit and takes at least two characters; each value character is joined once.
WORK_PER_CHAR = 3

MIB = 1 << 20

PATHOLOGICAL_PATHS = {
    "huge-name": "$." + "a" * (4 * MIB),
    "huge-quoted-name": "$['" + "q" * (4 * MIB) + "']",
    "unterminated-quote": "$['" + "a" * MIB,
    "unterminated-double-quote": '$["' + "a" * MIB + '"',
    "quote-without-bracket": "$['" + "a'" * (MIB // 2),
    "huge-index": "$.a[" + "9" * MIB + "]",
    "index-without-bracket": "$.a[" + "1" * MIB,
    "deep-quoted": "$" + "['a']" * (MIB // 5),
    "deep-dotted": "$" + ".a" * (MIB // 2),
    "deep-indexes": "$.a" + "[0]" * (MIB // 3),
    "brackets-only": "$" + "[" * MIB,
    "dots-only": "$" + "." * MIB,
}


class CountingStep:
    """Wraps the path-step regex: counts the matches tried and the characters each consumed."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.calls = 0
        self.consumed = 0

    def match(self, text: str, pos: int) -> re.Match[str] | None:
        self.calls += 1
        m = self.pattern.match(text, pos)
        if m is not None:
            self.consumed += m.end() - pos
        return m


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL_PATHS))
def test_parsing_a_pathological_path_reads_each_character_a_bounded_number_of_times(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = PATHOLOGICAL_PATHS[name]
    counter = CountingStep(route._PATH_STEP)
    monkeypatch.setattr(route, "_PATH_STEP", counter)
    steps, work = parse_path(path)
    assert work <= WORK_PER_CHAR * len(path)
    assert counter.consumed <= len(path)  # every matched character belongs to exactly one step
    assert counter.calls <= MAX_PATH_STEPS + 1  # one match per step; the parse ends at the first failure
    if steps is not None:
        assert len(steps) <= MAX_PATH_STEPS


def test_paths_deeper_than_the_json_depth_limit_or_with_long_indexes_cannot_be_placed() -> None:
    assert parse_path("$" + "['a']" * MAX_PATH_STEPS)[0] == ["a"] * MAX_PATH_STEPS
    assert parse_path("$" + "['a']" * (MAX_PATH_STEPS + 1))[0] is None
    assert parse_path("$.a[" + "0" * MAX_INDEX_DIGITS + "]")[0] == ["a", 0]
    assert parse_path("$.a[" + "0" * (MAX_INDEX_DIGITS + 1) + "]")[0] is None
    assert parse_path("$.a[5000]")[0] == ["a", 5000]


def assembled_work(paths: dict[str, Any]) -> tuple[dict[str, Any] | None, int, int]:
    result, work = assemble(paths)
    size = sum(len(p) for p in paths) + sum(len("".join(v)) for v in paths.values() if isinstance(v, list))
    return result, work, size


PATH_SETS = {
    "many-paths": lambda: {f"$.k{i}": [str(i)] for i in range(100_000)},
    "many-indexes": lambda: {f"$.a[{i}]": [str(i)] for i in range(100_000)},
    "indexes-far-beyond-the-list": lambda: {"$.a[0]": ["x"], **{f"$.a[{10**8 + i}]": ["y"] for i in range(10_000)}},
    "long-shared-prefix": lambda: {"$." + "p" * 1000 + f".k{i}": ["v"] for i in range(1000)},
    "deep-shared-prefix": lambda: {"$" + "['a']" * 500 + f"['k{i}']": ["v"] for i in range(1000)},
    "many-fragments": lambda: {"$.s": ["z"] * 200_000},
    "deep-list": lambda: {"$.a" + "[0]" * 500: ["v"]},
}


@pytest.mark.parametrize("name", sorted(PATH_SETS))
def test_assembling_pathological_path_sets_is_linear_in_their_size(name: str) -> None:
    _, work, size = assembled_work(PATH_SETS[name]())
    assert work <= WORK_PER_CHAR * size


def test_assembly_places_indexes_only_at_or_below_the_list_length() -> None:
    assert build_arguments({"$.a[0]": ["x"], "$.a[1]": ["y"]}) == {"a": ["x", "y"]}
    assert build_arguments({"$.a[0]": ["x"], "$.a[100000000]": ["y"]}) is None
    deep, _ = assemble({"$.a" + "[0]" * 500: ["v"]})
    assert deep is not None


@pytest.mark.parametrize(("path", "stage"), [
    ("$" + "['a']" * (MAX_PATH_STEPS + 1), "tool_json"),
    ("$.a[" + "9" * 5000 + "]", "tool_json"),  # int() of 5000 digits would raise: never attempted
    ("$.a[99999]", "tool_json"),
])
def test_a_streamed_call_with_an_unplaceable_path_is_an_invalid_call_not_a_crash(path: str, stage: str) -> None:
    data = gemini_stream(streamed_call([{"jsonPath": path, "stringValue": "v"}]))
    limits = Limits(max_tool_input_chars=1 << 20, max_line_chars=1 << 20, max_event_chars=1 << 21)
    assert outcome_of(GEMINI, data, limits=limits) == ("payload_error", stage)


def test_a_streamed_call_nested_to_the_depth_limit_commits() -> None:
    data = gemini_stream(streamed_call([{"jsonPath": "$" + "['a']" * MAX_PATH_STEPS, "numberValue": 1}]))
    assert outcome_of(GEMINI, data) == ("complete", None)


def _steps_by_the_loop(path: str) -> tuple[list[str | int] | None, int]:
    """parse_path's step loop alone (its one-step shortcut bypassed): the reference for the shortcut."""
    counting = CountingStep(route._PATH_STEP)
    saved_step, saved_one = route._PATH_STEP, route._ONE_STEP
    route._PATH_STEP, route._ONE_STEP = counting, (lambda text: None)  # type: ignore[assignment]
    try:
        return parse_path(path)
    finally:
        route._PATH_STEP, route._ONE_STEP = saved_step, saved_one


@pytest.mark.parametrize("path", [
    "$.a", "$.location", "$.a-b_9", "$.", "$.é", "$.a.b", "$.a[0]", "$.a['b']", "$['a']", "$.a ", " $.a", "$..a",
    "$.a\n", "$.0", "$[0]", "$.a" + "b" * 5000, "$", "a.b",
])
def test_a_one_step_path_parses_as_the_step_loop_parses_it(path: str) -> None:
    assert parse_path(path) == _steps_by_the_loop(path)


def test_one_step_paths_assemble_as_deeper_paths_beside_them_expect() -> None:
    paths: dict[str, list[str] | tuple[object]] = {"$.a": ["x", "y"], "$.b": (1,), "$.c.d": ["z"], "$.e[0]": (None,)}
    assert assemble(paths) == ({"a": "xy", "b": 1, "c": {"d": "z"}, "e": [None]}, 3 + 3 + 5 + 6 + 2 + 1 + 1 + 1 + 2 + 2)
    assert build_arguments({"$.a": ["x"], "$.a.b": ["y"]}) is None  # "a" holds a string: no room for "b"
