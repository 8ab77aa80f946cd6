"""The prebuilt JSON decoder and encoder (``_json.loads_strict``, ``_values.value_problem``) behave
exactly like the ``json.loads`` / ``json.dumps`` calls they replace, on well-formed and broken input."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webclient._json import loads_strict
from webclient._values import NON_FINITE_NUMBER, UNPAIRED_SURROGATE, has_surrogate, parsed_value_encoder, value_problem


def _refuse(name: str) -> Any:
    raise ValueError("non-standard JSON constant")


def _reference_loads(text: str) -> tuple[str, object]:
    """What ``json.loads(text, parse_constant=...)`` does: ("ok", value) or ("error", (exception type,
    message))."""
    try:
        return "ok", json.loads(text, parse_constant=_refuse)
    except ValueError as exc:
        return "error", (type(exc), str(exc))


def _prebuilt_loads(text: str) -> tuple[str, object]:
    try:
        return "ok", loads_strict(text)
    except ValueError as exc:
        return "error", (type(exc), str(exc))


EDGE_TEXTS = [
    '{"a": 1}', ' {"a": [1, 2.5, -3e2]} ', "\ufeff{}", "\ufeff", "", " ", "{} x", "{}{}", "[1,]", '"\\ud83d"',
    "NaN", "[Infinity]", '{"x": -Infinity}', "1e999", "nul", "null", "true ", '"\u2028"', "[\n1\r\n]\t", '{"a":1,}',
    "0123", '"abc', "[" * 50 + "]" * 50,
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("text", EDGE_TEXTS)
def test_the_strict_loader_gives_what_json_loads_with_parse_constant_gives(text: str) -> None:
    assert _prebuilt_loads(text) == _reference_loads(text)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from(["", " ", "\ufeff", "\n"]), st.sampled_from(["", " ", "x", "\r\n"]))
def test_the_strict_loader_agrees_with_json_loads_on_any_serialized_value(value: object, before: str,
                                                                       after: str) -> None:
    text = before + json.dumps(value) + after
    got, want = _prebuilt_loads(text), _reference_loads(text)
    if want[0] == "ok" and got[0] == "ok":  # nan != nan: compare the serialized forms
        assert json.dumps(got[1]) == json.dumps(want[1])
    else:
        assert got == want


def _reference_problem(value: object) -> str | None:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return NON_FINITE_NUMBER
    return UNPAIRED_SURROGATE if has_surrogate(text) else None


@pytest.mark.parametrize("value", [
    {"x": math.inf}, [1, [2, {"y": -math.inf}]], {"n": math.nan}, {"\ud800": 1}, ["ok", "\udc00"], "\ud83d",
    {"a": "é 日本 🙂"}, 1.5, None, {"k": [True, False, None]}, math.nan,
], ids=repr)
def test_value_problem_gives_what_json_dumps_with_allow_nan_false_gives(value: object) -> None:
    assert value_problem(value) == _reference_problem(value)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_value_problem_agrees_with_json_dumps_on_any_value(value: object) -> None:
    assert value_problem(value) == _reference_problem(value)


def _reference_dumps(value: object, allow_nan: bool) -> tuple[str, object]:
    try:
        return "ok", json.dumps(value, ensure_ascii=False, allow_nan=allow_nan)
    except ValueError as exc:
        return "error", (type(exc), str(exc))


def _prebuilt_dumps(value: object, allow_nan: bool) -> tuple[str, object]:
    try:
        return "ok", parsed_value_encoder(allow_nan)(value)
    except ValueError as exc:
        return "error", (type(exc), str(exc))


ENCODER_EDGES = [
    {"x": math.inf}, [1, [2, {"y": -math.inf}]], {"n": math.nan}, {"\ud800": 1}, "\ud83d", "plain", 1.5, -0.0, 10**30,
    None, True, {"k": [True, False, None, 1e-7, 1e22]}, {1: "int key", 2.5: "float key", None: "none", False: "b"},
    {"a": "é 日本 🙂 \u2028 \x00 \" \\ /"}, [], {}, [[[]]], {"z": 1, "a": 2},
]


@pytest.mark.parametrize("allow_nan", [True, False])
@pytest.mark.parametrize("value", ENCODER_EDGES, ids=repr)
def test_the_prebuilt_encoder_gives_what_json_dumps_gives(value: object, allow_nan: bool) -> None:
    assert _prebuilt_dumps(value, allow_nan) == _reference_dumps(value, allow_nan)


@settings(max_examples=150, deadline=None)
@given(json_values, st.booleans())
def test_the_prebuilt_encoder_agrees_with_json_dumps_on_any_value(value: object, allow_nan: bool) -> None:
    assert _prebuilt_dumps(value, allow_nan) == _reference_dumps(value, allow_nan)


def test_the_prebuilt_encoder_falls_back_to_the_python_encoder_without_the_c_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    for value in ENCODER_EDGES:
        for allow_nan in (True, False):
            assert _prebuilt_dumps(value, allow_nan) == _reference_dumps(value, allow_nan)
