"""The JSON nesting guard: exact on JSON text, and linear in the input on every input (proved by
counting the characters its passes handle, on the inputs that made the old guard quadratic)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webclient._json import (
    MAX_JSON_DEPTH,
    envelope_scan,
    holds_non_finite,
    loads,
    loads_strict,
    max_depth,
    more_openers_than,
    strict_scan,
    too_deep,
)

#: Characters handled per input character (six passes at most, see ``webclient/_json.py``).
WORK_PER_CHAR = 6
SIZE = 4 * 1024 * 1024  # the default line ceiling: the longest envelope a stream can deliver

PATHOLOGICAL = {
    # The input: the old string regex rescanned to the end from every quote.
    "open-string-of-escaped-quotes": "[" * 600 + '"' + '\\"' * (SIZE // 2),
    "open-string-of-backslashes": "[" * 600 + '"' + "\\" * SIZE,
    "escaped-quotes-outside-strings": "[" * 600 + '\\"' * (SIZE // 2),
    "many-empty-strings": "[" * 600 + '""' * (SIZE // 2),
    "quotes-and-backslashes": "[" * 600 + '"\\' * (SIZE // 2),
    "only-openers": "[" * SIZE,
    "alternating-brackets": "[]" * (SIZE // 2),
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_the_depth_scan_handles_each_character_a_bounded_number_of_times(name: str) -> None:
    text = PATHOLOGICAL[name]
    depth, work = max_depth(text)
    assert work <= WORK_PER_CHAR * len(text)
    assert depth >= 1


def test_an_unterminated_string_of_escaped_quotes_counts_only_the_brackets_before_it() -> None:
    text = PATHOLOGICAL["open-string-of-escaped-quotes"]
    assert max_depth(text)[0] == 600
    assert too_deep(text)
    with pytest.raises(ValueError):
        loads(text)


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        pytest.param('["\\"[[[", [1]]', 2, id="escaped-quote-keeps-the-string-open"),
        pytest.param('["\\\\", [[1]]]', 3, id="escaped-backslash-then-closing-quote"),
        pytest.param('["\\\\\\"[", [1]]', 2, id="backslash-pair-then-escaped-quote"),
        pytest.param('["\\\\\\\\", [1]]', 2, id="two-backslash-pairs"),
        pytest.param('{"a": "{[", "b": {"c": []}}', 3, id="brackets-in-keys-and-values"),
        pytest.param('["\\u0022[", [1]]', 2, id="unicode-escaped-quote-is-not-a-quote"),
        pytest.param('"[[["', 0, id="a-string-alone"),
        pytest.param("", 0, id="empty"),
        pytest.param("[[[", 3, id="unclosed-openers"),
    ],
)
def test_depth_counts_only_brackets_outside_strings(text: str, depth: int) -> None:
    assert max_depth(text)[0] == depth


def _nesting(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    return 0


TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\\\/ab:,\u00e9\U0001f600\n')), max_size=8)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY_TEXT, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_depth_of_any_json_text_is_the_nesting_of_its_value(value: object, ascii_only: bool,
                                                            indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    depth, work = max_depth(text)
    assert depth == _nesting(value)
    assert work <= WORK_PER_CHAR * max(len(text), 1)


def test_the_guard_refuses_exactly_one_level_past_the_limit() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads(at_limit) is not None and not too_deep(at_limit)
    over = "[" + at_limit + "]"
    assert too_deep(over)
    with pytest.raises(ValueError):
        loads(over)


def test_many_shallow_brackets_are_measured_and_pass() -> None:
    text = "[" + ",".join(['{"a": [1]}'] * (MAX_JSON_DEPTH + 1)) + "]"
    assert max_depth(text)[0] == 3
    assert not too_deep(text)


@pytest.mark.parametrize(("text", "depth", "work"), [
    # work = two replace passes over the text, split and join over what is left, the bracket pass
    # over the outside of strings, and the brackets themselves.
    pytest.param('["a"]', 1, 2 * 5 + 2 * 5 + 2 + 2, id="plain"),
    pytest.param('["\\\\", "\\"[", [{}]]', 3, 2 * 19 + 2 * 15 + 10 + 6, id="escapes"),
])
def test_the_depth_scan_counts_its_passes_exactly(text: str, depth: int, work: int) -> None:
    assert max_depth(text) == (depth, work)


@pytest.mark.parametrize("loader", [loads, loads_strict], ids=["loads", "loads_strict"])
def test_both_loaders_refuse_nesting_past_the_limit_in_arrays_and_in_objects(loader: object) -> None:
    for opener, closer, inner in (("[", "]", ""), ('{"a":', "}", "1")):
        at_limit = opener * MAX_JSON_DEPTH + inner + closer * MAX_JSON_DEPTH
        assert loader(at_limit) is not None  # type: ignore[operator]
        with pytest.raises(ValueError):
            loader(opener + at_limit + closer)  # type: ignore[operator]
    long_and_shallow = "[" + ",".join(['{"a": [1, "x"]}'] * MAX_JSON_DEPTH) + "]"
    assert loader(long_and_shallow) == [{"a": [1, "x"]}] * MAX_JSON_DEPTH  # type: ignore[operator]


def test_the_strict_loader_refuses_non_standard_constants() -> None:
    assert loads_strict('{"x": 1e3}') == {"x": 1000.0}
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError):
            loads_strict(f'{{"x": {constant}}}')
        assert loads(f'{{"x": {constant}}}') is not None


@pytest.mark.parametrize(("text", "holds"), [
    ('{"x": NaN}', True), ("[Infinity]", True), ('{"x": [1, {"y": -Infinity}]}', True), (" NaN ", True),
    ('{"x": 1e999}', True), ("[-1E+400]", True), ("1" + "0" * 400 + ".0", True), ('{"x": [0.1e0310]}', True),
    ('{"x": "NaN"}', False), ('{"Infinity": "-Infinity"}', False), ('{"x": "1e999"}', False), (' {"x": 1} ', False),
    ('{"x": "\\\\"} ', False), ("[]", False), ("[1e308, 1e-999, -0.0]", False), ("1" + "0" * 400, False),
], ids=lambda v: v if not isinstance(v, str) or len(v) < 40 else f"{len(v)}-chars")
def test_holds_non_finite_says_whether_json_loads_read_a_number_that_is_not_finite(text: str, holds: bool) -> None:
    parsed = json.loads(text)  # (the texts it is asked about are ones json.loads reads)
    assert holds_non_finite(text) is holds
    try:
        json.dumps(parsed, allow_nan=False)  # (the reference: what a strict encoder refuses)
    except ValueError:
        assert holds
    else:
        assert not holds


def test_the_strict_scanner_reads_what_json_loads_reads_but_raises_at_a_constant() -> None:
    text = '{"a": [1, 2.5, "NaN", null, true, 1e999]}'
    assert strict_scan(text, 0) == (json.loads(text), len(text))  # (an overflow is the tool input check's)
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError):
            strict_scan(f'{{"a": [1, {constant}]}}', 0)


_NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,400})(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,5})?\Z")


@settings(max_examples=400, deadline=None)
@given(_NUMBER)
def test_the_envelope_scanner_reads_what_json_loads_reads_and_raises_exactly_at_a_non_finite_number(
        number: str) -> None:
    text = f'{{"a": [1, "1e999", {number}]}}'
    expected = json.loads(text)
    finite = expected["a"][2] not in (float("inf"), float("-inf"))
    if finite:
        assert envelope_scan(text, 0) == (expected, len(text))
    else:
        with pytest.raises(ValueError):
            envelope_scan(text, 0)
    assert holds_non_finite(text) is not finite


def test_the_envelope_scanner_raises_at_a_constant_too() -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError):
            envelope_scan(f'{{"a": [1, {constant}]}}', 0)


def _count(text: str) -> int:
    return text.count("[") + text.count("{")


#: Texts on every path of the opener count: short (counted), long and sparse (found one by one),
#: long and dense (found until the budget runs out, then counted), long with more openers than the
#: limit within the budget (a text of 300k characters has a budget of the whole limit).
OPENER_TEXTS = {
    "short-at-the-limit": "[" * MAX_JSON_DEPTH + "x" * 100,
    "short-over-the-limit": "{" * (MAX_JSON_DEPTH + 1) + "x" * 100,
    "long-sparse-under": '{"a":["' + "\u00e9" * 40_000 + '"],"b":{"c":[]}}',
    "long-sparse-exactly-the-limit": ("[" + "x" * 600) * 256 + ("{" + "y" * 600) * 256,
    "long-dense-at-the-limit": "[" * 300 + "{" * (MAX_JSON_DEPTH - 300) + "z" * 20_000,
    "long-dense-over-the-limit": "[" * 300 + "{" * (MAX_JSON_DEPTH - 299) + "z" * 20_000,
    "long-dense-first-kind-only": "{" * 100 + "z" * 8_000,
    "huge-over-the-limit-within-budget": ("[" + "x" * 600) * (MAX_JSON_DEPTH + 1),
    "huge-at-the-limit-within-budget": ("{" + "x" * 600) * MAX_JSON_DEPTH,
    # found one by one until one past a budget of one less than the limit: exactly the limit
    "long-sparse-budget-one-under-the-limit": ("[" + "x" * 511) * (MAX_JSON_DEPTH - 1) + "[",
    # adjacent openers are two
    "long-sparse-adjacent-openers-over": ("[[" + "x" * 1000) * (MAX_JSON_DEPTH // 2 + 1),
}


@pytest.mark.parametrize("name", sorted(OPENER_TEXTS))
def test_the_opener_count_is_exact_on_every_path(name: str) -> None:
    text = OPENER_TEXTS[name]
    for limit in (MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1):
        assert more_openers_than(text, limit) is (_count(text) > limit), limit


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.tuples(st.sampled_from("[{"), st.integers(0, 3000)), max_size=40),
       limit=st.integers(0, 40))
def test_the_opener_count_agrees_with_counting_on_any_text(pieces: list[tuple[str, int]], limit: int) -> None:
    text = "".join(opener + "\u4e2d" * gap for opener, gap in pieces)
    assert more_openers_than(text, limit) is (_count(text) > limit)


@pytest.mark.parametrize("text", [
    '{"a": [1, "x"]}', ' {"a": 1}', '{"a": 1} ', '{"a": 1}\n', "\t[1]\r\n", '{"a": 1}x', '{"a": 1} {}', "", " ",
    "nul", '"s"', "12", "-0.5e3", "1e999", '{"a": NaN}', "Infinity", '{"a": "\\ud83d\\ude00"}', '{"a": "\\ud800"}',
    '{"a": "tab\t"}', '{"a" 1}', "[1,]", '{"a": 1, "a": 2}', "[" * 3 + "]" * 3,
])
def test_the_strict_loader_takes_and_refuses_what_the_strict_decoder_does(text: str) -> None:
    """The direct scanner call gives ``JSONDecoder(parse_constant=...).decode``'s value or error on every text:
    surrounding whitespace, trailing data, nothing to read, constants, bad strings, duplicate keys."""
    def refuse(name: str) -> object:
        raise ValueError("non-standard JSON constant")

    decoder = json.JSONDecoder(parse_constant=refuse)
    try:
        expected: object = ("value", decoder.decode(text))
    except ValueError as exc:
        expected = ("error", type(exc), str(exc))
    try:
        got: object = ("value", loads_strict(text))
    except ValueError as exc:
        got = ("error", type(exc), str(exc))
    assert got == expected
