"""The built-in JSON Schema subset validator, the jsonschema adapter and ``validator_for``.

Every implemented keyword has a passing and a failing case; unsupported keywords and invalid schemas
are refused at construction; no problem description or exception text ever carries instance or schema
content; and a differential property test checks the built-in validator against ``jsonschema``.
"""

from __future__ import annotations

import enum
import math
import sys
from collections.abc import Callable

import pytest

from webclient import UsageError
from webclient import _schema as schema_module
from webclient._schema import (
    MAX_DEPTH,
    MAX_PROBLEMS,
    JsonschemaValidator,
    SchemaValidator,
    _name,
    _where,
    validator_for,
)

CANARY = "CANARY-7f3a9c"
#: In the keyword table: "this schema has no instance of that kind" (false accepts nothing ...).
NOTHING = object()


def problems(schema: object, instance: object) -> list[str]:
    return SchemaValidator(schema)(instance)  # type: ignore[arg-type]


# -- each keyword: a passing and a failing case --------------------------------------------------

KEYWORD_CASES = [
    # (id, schema, valid instance, invalid instance, expected problem for the invalid one)
    ("type-string", {"type": "string"}, "x", 1, "(root): type"),
    ("type-object", {"type": "object"}, {}, [], "(root): type"),
    ("type-array", {"type": "array"}, [], {}, "(root): type"),
    ("type-null", {"type": "null"}, None, False, "(root): type"),
    ("type-boolean", {"type": "boolean"}, False, 0, "(root): type"),
    ("type-number-accepts-int", {"type": "number"}, 3, "3", "(root): type"),
    ("type-integer-accepts-integral-float", {"type": "integer"}, 1.0, 1.5, "(root): type"),
    ("type-integer-rejects-bool", {"type": "integer"}, -7, True, "(root): type"),
    ("type-number-rejects-bool", {"type": "number"}, 0.5, False, "(root): type"),
    ("type-number-rejects-nan", {"type": "number"}, 1e308, math.nan, "(root): type"),
    ("type-integer-rejects-infinity", {"type": "integer"}, 10**30, math.inf, "(root): type"),
    ("type-list", {"type": ["string", "null"]}, None, 0, "(root): type"),
    ("type-list-integer-in-list", {"type": ["integer", "string"]}, 2.0, 2.5, "(root): type"),
    ("enum", {"enum": ["a", 1, None]}, None, "b", "(root): enum"),
    ("enum-int-equals-float", {"enum": [1]}, 1.0, 1.5, "(root): enum"),
    ("enum-true-is-not-one", {"enum": [1]}, 1, True, "(root): enum"),
    ("enum-zero-is-not-false", {"enum": [False]}, False, 0, "(root): enum"),
    ("enum-containers", {"enum": [[1, {"a": True}]]}, [1.0, {"a": True}], [1, {"a": 1}], "(root): enum"),
    ("enum-empty-rejects-everything", {"enum": []}, NOTHING, None, "(root): enum"),
    ("const", {"const": "c"}, "c", "C", "(root): const"),
    ("const-object", {"const": {"k": [1, 2]}}, {"k": [1, 2.0]}, {"k": [2, 1]}, "(root): const"),
    ("const-null", {"const": None}, None, False, "(root): const"),
    ("properties", {"properties": {"a": {"type": "string"}}}, {"a": "x", "b": 1}, {"a": 1}, "/a: type"),
    ("required", {"required": ["location"]}, {"location": 1}, {"other": 1}, "/location: required"),
    ("additionalProperties-false", {"properties": {"a": {}}, "additionalProperties": False},
     {"a": 1}, {"a": 1, "b": 2}, "(root): additionalProperties"),
    ("additionalProperties-schema", {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
     {"a": "x", "b": 2}, {"a": 1, "b": "2"}, "/*: type"),
    ("items", {"items": {"type": "integer"}}, [1, 2], [1, "2"], "/1: type"),
    ("items-false", {"items": False}, [], [0], "/0: false"),
    ("minItems", {"minItems": 2}, [1, 2], [1], "(root): minItems"),
    ("maxItems", {"maxItems": 1}, [1], [1, 2], "(root): maxItems"),
    ("minLength-code-points", {"minLength": 2}, "\U0001f600\u00e9", "\U0001f600", "(root): minLength"),
    ("maxLength-code-points", {"maxLength": 1}, "\U0001f600", "ab", "(root): maxLength"),
    ("minimum", {"minimum": 1}, 1, 0.999, "(root): minimum"),
    ("maximum", {"maximum": 1.5}, 1.5, 2, "(root): maximum"),
    ("exclusiveMinimum", {"exclusiveMinimum": 0}, 1e-9, 0, "(root): exclusiveMinimum"),
    ("exclusiveMaximum", {"exclusiveMaximum": 10}, 9, 10.0, "(root): exclusiveMaximum"),
    ("minimum-big-int", {"minimum": 10**20}, 10**20, 10**20 - 1, "(root): minimum"),
    ("pattern-search-is-unanchored", {"pattern": "b+"}, "abbc", "ac", "(root): pattern"),
    ("pattern-anchored", {"pattern": "^[a-z]+$"}, "abc", "abc1", "(root): pattern"),
    ("anyOf", {"anyOf": [{"type": "string"}, {"minimum": 3}]}, 5, 2, "(root): anyOf"),
    ("ref-defs", {"$defs": {"pos": {"minimum": 0}}, "$ref": "#/$defs/pos"}, 0, -1, "(root): minimum"),
    ("ref-definitions", {"definitions": {"s": {"type": "string"}}, "items": {"$ref": "#/definitions/s"}},
     ["a"], ["a", 2], "/1: type"),
    ("ref-escaped-name", {"$defs": {"a/b~c": {"const": 1}}, "$ref": "#/$defs/a~1b~0c"}, 1, 2, "(root): const"),
    ("ref-percent-encoded-name", {"$defs": {"a b%": {"const": 1}}, "$ref": "#/$defs/a%20b%25"}, 1, 2,
     "(root): const"),
    ("ref-root-recursion", {"type": ["integer", "array"], "items": {"$ref": "#"}}, [1, [2, [3]]], [1, [2, ["x"]]],
     "/1/1/0: type"),
    ("ref-siblings-apply", {"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "minimum": 5}, 5, 4,
     "(root): minimum"),
    ("true-schema", True, {"any": [1]}, NOTHING, ""),
    ("false-schema", False, NOTHING, 1, "(root): false"),
    ("false-property", {"properties": {"a": False}}, {}, {"a": 1}, "/a: false"),
]


@pytest.mark.parametrize(("schema", "valid", "invalid", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in KEYWORD_CASES])
def test_each_keyword_accepts_its_passing_case_and_reports_its_failing_case(
        schema: object, valid: object, invalid: object, expected: str) -> None:
    validator = SchemaValidator(schema)  # type: ignore[arg-type]
    if valid is not NOTHING:
        assert validator(valid) == []
    if invalid is not NOTHING:
        assert validator(invalid) == [expected]


@pytest.mark.parametrize(("schema", "instance"), [
    ({"minLength": 5, "maxLength": 0, "pattern": "x"}, 3),
    ({"minimum": 5, "exclusiveMaximum": 0}, "text"),
    ({"minItems": 3, "items": False}, {"a": 1}),
    ({"required": ["a"], "additionalProperties": False}, ["list"]),
    ({"minimum": 5}, True),
])
def test_type_specific_keywords_ignore_instances_of_other_types(schema: object, instance: object) -> None:
    assert problems(schema, instance) == []


def test_boundaries_are_inclusive_for_min_max_and_exclusive_for_exclusive_bounds() -> None:
    schema = {"minimum": 1, "maximum": 3, "minLength": 1, "maxLength": 3, "minItems": 1, "maxItems": 3}
    for ok in (1, 3, 1.0, 3.0, "a", "abc", [0], [0, 0, 0]):
        assert problems(schema, ok) == [], ok
    assert problems({"exclusiveMinimum": 1, "exclusiveMaximum": 3}, 2) == []
    assert problems({"exclusiveMinimum": 1, "exclusiveMaximum": 3}, 3) == ["(root): exclusiveMaximum"]


def test_integral_float_counts_as_integer_for_min_items_and_lengths() -> None:
    assert problems({"minItems": 2.0}, [1]) == ["(root): minItems"]
    assert problems({"maxLength": 1.0}, "ab") == ["(root): maxLength"]


def test_non_finite_numbers_fail_every_numeric_bound() -> None:
    schema = {"minimum": 0, "maximum": 10}
    assert problems(schema, math.nan) == ["(root): minimum", "(root): maximum"]
    assert problems(schema, math.inf) == ["(root): minimum", "(root): maximum"]


def test_missing_required_members_are_each_reported_at_their_own_pointer() -> None:
    schema = {"required": ["a", "b/c", "d~"], "properties": {"a": {"type": "string"}}}
    assert problems(schema, {}) == ["/a: required", "/b~1c: required", "/d~0: required"]


def test_nested_problems_carry_the_full_instance_pointer() -> None:
    schema = {"properties": {"rows": {"items": {"properties": {"cell": {"type": "integer"}}}}}}
    assert problems(schema, {"rows": [{"cell": 1}, {"cell": "x"}]}) == ["/rows/1/cell: type"]


def test_additional_properties_false_is_reported_once_per_object() -> None:
    schema = {"properties": {"a": {}}, "additionalProperties": False}
    assert problems(schema, {"a": 1, "b": 2, "c": 3}) == ["(root): additionalProperties"]


def test_all_problems_are_reported_in_keyword_order() -> None:
    schema = {"type": "string", "enum": ["a"], "minLength": 3, "pattern": "^z"}
    assert problems(schema, "bb") == ["(root): enum", "(root): minLength", "(root): pattern"]


def test_any_of_passes_when_a_later_branch_accepts() -> None:
    schema = {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}, {"type": "null"}]}
    assert problems(schema, None) == []
    assert problems(schema, "ab") == ["(root): anyOf"]


def test_any_of_with_an_accept_all_branch_accepts_everything() -> None:
    assert problems({"anyOf": [{"type": "integer"}, {}]}, "x") == []


def test_recursive_schema_through_properties_validates_finite_instances() -> None:
    schema = {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"},
                                                                 "v": {"type": "integer"}}}},
              "$ref": "#/$defs/node"}
    assert problems(schema, {"v": 1, "next": {"v": 2, "next": {"v": 3}}}) == []
    assert problems(schema, {"v": 1, "next": {"v": 2, "next": {"v": "3"}}}) == ["/next/next/v: type"]


def test_instance_deeper_than_the_depth_limit_is_a_depth_problem_not_a_recursion_error() -> None:
    schema = {"type": "array", "items": {"$ref": "#"}}
    deep: list[object] = []
    for _ in range(MAX_DEPTH * 4):
        deep = [deep]
    result = problems(schema, deep)
    assert len(result) == 1 and result[0].endswith(": depth")
    shallow: list[object] = []
    for _ in range(MAX_DEPTH // 4):
        shallow = [shallow]
    assert problems(schema, shallow) == []


def test_problem_list_is_capped() -> None:
    result = problems({"items": {"type": "string"}}, list(range(10 * MAX_PROBLEMS)))
    assert result == [f"/{i}: type" for i in range(MAX_PROBLEMS)]


def test_validation_never_raises_on_non_json_instances() -> None:
    schema = {"type": "object", "properties": {"a": {"enum": [1, [2]]}}, "additionalProperties": {"const": 1}}
    for instance in (object(), {1: 2, (3,): 4}, {"a": {1, 2}}, b"bytes", 3j, {"a": math.nan}):
        assert isinstance(problems(schema, instance), list)


def test_validator_is_reusable_and_stateless_between_calls() -> None:
    validator = SchemaValidator({"required": ["a"]})
    assert validator({}) == ["/a: required"]
    assert validator({"a": 1}) == []
    assert validator({}) == ["/a: required"]


# -- annotations, unsupported keywords, invalid schemas ------------------------------------------

def test_annotation_keywords_are_accepted_and_do_not_affect_validation() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.invalid/tool",
        "$comment": "c", "title": "t", "description": "d", "default": {"x": 1}, "examples": [1, "a"],
        "deprecated": True, "readOnly": False, "writeOnly": False, "format": "email",
        "type": "object", "properties": {"when": {"type": "string", "format": "date-time", "title": "w"}},
    }
    validator = SchemaValidator(schema)
    assert validator({"when": "not a date"}) == []  # format is an annotation, not an assertion
    assert validator({"when": 1}) == ["/when: type"]


UNSUPPORTED = ["allOf", "oneOf", "not", "if", "then", "else", "uniqueItems", "multipleOf", "patternProperties",
               "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
               "prefixItems", "contains", "minContains", "unevaluatedProperties", "unevaluatedItems",
               "contentMediaType", "$anchor", "$dynamicRef", "$vocabulary", "nullable", "x-vendor", "$recursiveRef"]


@pytest.mark.parametrize("keyword", UNSUPPORTED)
def test_unsupported_keyword_is_refused_at_construction_naming_the_keyword(keyword: str) -> None:
    schema = {"type": "object", "properties": {"inner": {keyword: [CANARY], "description": CANARY}}}
    with pytest.raises(UsageError) as caught:
        SchemaValidator(schema)
    message = str(caught.value)
    assert repr(keyword) in message and "#/properties/inner" in message
    assert CANARY not in message


@pytest.mark.parametrize("schema", [
    pytest.param({"type": "text"}, id="type-unknown-name"),
    pytest.param({"type": []}, id="type-empty-list"),
    pytest.param({"type": ["string", "string"]}, id="type-duplicate"),
    pytest.param({"type": 1}, id="type-not-string"),
    pytest.param({"properties": []}, id="properties-not-object"),
    pytest.param({"properties": {"a": 1}}, id="property-schema-not-schema"),
    pytest.param({"required": "a"}, id="required-not-array"),
    pytest.param({"required": ["a", "a"]}, id="required-duplicate"),
    pytest.param({"required": [1]}, id="required-not-strings"),
    pytest.param({"additionalProperties": "no"}, id="additionalProperties-not-schema"),
    pytest.param({"enum": "abc"}, id="enum-not-array"),
    pytest.param({"items": [{}]}, id="items-tuple-form"),
    pytest.param({"items": 3}, id="items-not-schema"),
    pytest.param({"minItems": -1}, id="minItems-negative"),
    pytest.param({"maxLength": 1.5}, id="maxLength-fraction"),
    pytest.param({"minLength": True}, id="minLength-bool"),
    pytest.param({"minimum": "1"}, id="minimum-string"),
    pytest.param({"maximum": math.inf}, id="maximum-infinite"),
    pytest.param({"exclusiveMinimum": True}, id="exclusiveMinimum-draft4-boolean"),
    pytest.param({"pattern": "(unclosed"}, id="pattern-invalid-regex"),
    pytest.param({"pattern": 5}, id="pattern-not-string"),
    pytest.param({"anyOf": []}, id="anyOf-empty"),
    pytest.param({"anyOf": {}}, id="anyOf-not-array"),
    pytest.param({"$ref": 1}, id="ref-not-string"),
    pytest.param({"$ref": "#/$defs/missing"}, id="ref-dangling"),
    pytest.param({"$defs": {"a": {}}, "$ref": "#/definitions/a"}, id="ref-wrong-section"),
    pytest.param({"$ref": "other.json#/$defs/a"}, id="ref-remote"),
    pytest.param({"$defs": {"a": {"properties": {"b": {}}}}, "$ref": "#/$defs/a/properties/b"}, id="ref-deep-pointer"),
    pytest.param({"$ref": "#/properties/a", "properties": {"a": {}}}, id="ref-outside-defs"),
    pytest.param({"$defs": {"a": {"$ref": "#/$defs/a"}}}, id="ref-self-cycle"),
    pytest.param({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}}, id="ref-cycle"),
    pytest.param({"anyOf": [{"$ref": "#"}]}, id="root-cycle-through-anyOf"),
    pytest.param({"$defs": []}, id="defs-not-object"),
    pytest.param({"properties": {"a": {"$defs": {}}}}, id="defs-not-at-root"),
    pytest.param({"items": {"$id": "x"}}, id="id-not-at-root"),
    pytest.param({"items": {"$schema": "x"}}, id="schema-not-at-root"),
    pytest.param({"title": 1}, id="title-not-string"),
    pytest.param({"deprecated": "yes"}, id="deprecated-not-bool"),
    pytest.param({"examples": "e"}, id="examples-not-array"),
    pytest.param({1: {}}, id="keyword-not-string"),
    pytest.param("string", id="schema-not-object"),
    pytest.param(None, id="schema-none"),
    pytest.param({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {}},
                  "$ref": "#/definitions/a", "type": "string"}, id="draft7-ref-with-ignored-siblings"),
])
def test_invalid_schema_is_refused_at_construction(schema: object) -> None:
    with pytest.raises(UsageError):
        SchemaValidator(schema)  # type: ignore[arg-type]


def test_draft7_ref_with_only_annotation_siblings_is_accepted() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"type": "string"}},
              "properties": {"x": {"$ref": "#/definitions/a", "description": "d"}}}
    assert problems(schema, {"x": 1}) == ["/x: type"]


def test_schema_nested_deeper_than_the_limit_is_refused() -> None:
    schema: dict[str, object] = {}
    for _ in range(MAX_DEPTH + 2):
        schema = {"items": schema}
    with pytest.raises(UsageError, match="deeper"):
        SchemaValidator(schema)


def test_unused_definitions_are_still_checked() -> None:
    with pytest.raises(UsageError, match="'oneOf'"):
        SchemaValidator({"$defs": {"unused": {"oneOf": [{}]}}, "type": "object"})


def test_schema_error_messages_carry_no_schema_values() -> None:
    for schema in ({"pattern": "(" + CANARY}, {"enum": CANARY}, {"const": 1, "minimum": CANARY},
                   {"$ref": "#/$defs/" + CANARY}, {"type": CANARY}, {"x": CANARY}):
        with pytest.raises(UsageError) as caught:
            SchemaValidator(schema)
        assert CANARY not in str(caught.value), schema



# -- pattern: ECMA-262 meaning, linear time ------------------------------------------------------

#: Patterns a backtracking engine (Python's re) needs exponential time for on the almost-matching
#: instance, each with an instance that matches.
CATASTROPHIC = [
    ("^(a+)+$", "a" * 100_000 + "!", "a" * 100_000),
    ("^(\\w+\\s?)*$", "word " * 20_000 + "!", "word " * 20_000),
    ("^(a|aa)+$", "a" * 100_000 + "b", "a" * 100_000),
    ("^([a-z0-9]+[-_.]?)+@example\\.com$", "a-" * 50_000 + "@example.org", "a-" * 50_000 + "a@example.com"),
]


@pytest.mark.parametrize(("pattern", "bad", "good"), CATASTROPHIC, ids=[p for p, _, _ in CATASTROPHIC])
def test_a_pattern_that_makes_backtracking_exponential_is_checked_in_linear_time(pattern: str, bad: str,
                                                                                 good: str) -> None:
    # re.search would not finish on ``bad`` in the age of the universe; the validator's matcher
    # visits each automaton state at most once per character (proved by counting in test_regex.py).
    validator = SchemaValidator({"type": "string", "pattern": pattern})
    assert validator(bad) == ["(root): pattern"]
    assert validator(good) == []


def test_pattern_follows_ecma_262_not_python() -> None:
    assert problems({"pattern": "^a$"}, "a\n") == ["(root): pattern"]  # re's $ also matches before a final LF
    assert problems({"pattern": "^\\d+$"}, "\u0663") == ["(root): pattern"]  # re's \d is Unicode
    assert problems({"pattern": "^.$"}, "\U0001f600") == []  # one code point


@pytest.mark.parametrize("pattern", ["(?=a)", "(a)\\1", "\\p{L}", "(?i)a"])
def test_a_pattern_outside_the_supported_subset_is_refused_naming_its_location(pattern: str) -> None:
    with pytest.raises(UsageError) as caught:
        SchemaValidator({"properties": {"code": {"type": "string", "pattern": pattern}}})
    message = str(caught.value)
    assert message.startswith("unsupported schema: pattern") and "#/properties/code" in message
    assert pattern not in message


def test_an_invalid_pattern_is_refused_as_invalid() -> None:
    with pytest.raises(UsageError, match=r"^invalid schema: pattern is not a valid regular expression"):
        SchemaValidator({"pattern": "[unclosed"})

# -- no content in problem descriptions (canary) -------------------------------------------------

CANARY_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 3, "pattern": "^[0-9]"},
        "days": {"type": "integer"},
        "unit": {"enum": ["c", "f"]},
        "tags": {"type": "array", "items": {"const": "ok"}},
        "nested": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["city", "unit", "days"],
    "additionalProperties": False,
}
CANARY_INSTANCE = {
    "city": CANARY, "unit": CANARY, "tags": [CANARY, {CANARY: CANARY}],
    "nested": {CANARY: CANARY}, CANARY: CANARY,
}


def test_problem_descriptions_never_contain_instance_values_or_undeclared_keys() -> None:
    result = SchemaValidator(CANARY_SCHEMA)(CANARY_INSTANCE)
    assert result == ["/days: required", "/city: maxLength", "/city: pattern", "/unit: enum", "/tags/0: const",
                      "/tags/1: const", "/nested/*: type", "(root): additionalProperties"]
    assert all(CANARY not in p for p in result)


#: "a" is declared by ``required``, "b" by another object's ``properties``; "z" by nothing: written "*".
DECLARED_SCHEMA = {"type": "object", "required": ["a"], "additionalProperties": {"type": "integer"},
                   "properties": {"n": {"properties": {"b": {}}}}}
DECLARED_INSTANCE = {"a": "x", "b": "y", "z": CANARY, "n": {}}


def test_a_member_checked_by_additional_properties_is_named_only_when_the_schema_declares_its_name() -> None:
    assert problems(DECLARED_SCHEMA, DECLARED_INSTANCE) == ["/a: type", "/b: type", "/*: type"]


@pytest.mark.host
def test_the_jsonschema_adapter_names_the_same_members_under_additional_properties() -> None:
    pytest.importorskip("jsonschema")
    assert sorted(JsonschemaValidator(DECLARED_SCHEMA)(DECLARED_INSTANCE)) == sorted(
        problems(DECLARED_SCHEMA, DECLARED_INSTANCE))


@pytest.mark.host
def test_the_jsonschema_adapter_reports_a_problem_found_twice_at_one_place_once() -> None:
    pytest.importorskip("jsonschema")
    validator = JsonschemaValidator({"allOf": [{"type": "string"}, {"type": "string", "minLength": 2}]})
    assert validator(5) == ["(root): type"]  # both branches' "type" at the root: one problem
    assert validator("a") == ["(root): minLength"]


def test_callable_validator_exception_text_never_appears() -> None:
    def explode(instance: object) -> bool:
        raise ValueError(f"bad value {instance!r}")

    result = validator_for(explode)({"secret": CANARY})
    assert result == ["(root): validator raised ValueError"]


# -- validator_for -------------------------------------------------------------------------------

def test_validator_for_compiles_a_mapping_into_a_schema_validator() -> None:
    validator = validator_for({"type": "object", "required": ["a"]})
    assert isinstance(validator, SchemaValidator)
    assert validator({}) == ["/a: required"]


def test_validator_for_accepts_boolean_schemas() -> None:
    assert validator_for(True)(1) == []
    assert validator_for(False)(1) == ["(root): false"]


def test_validator_for_returns_existing_validators_unchanged() -> None:
    compiled = SchemaValidator({})
    assert validator_for(compiled) is compiled


def test_validator_for_refuses_an_unsupported_schema_immediately() -> None:
    with pytest.raises(UsageError, match="'not'"):
        validator_for({"not": {}})


@pytest.mark.parametrize(("verdict", "expected"), [
    (True, []),
    (None, []),
    (False, ["(root): validator"]),
    ([], []),
    ((), []),
    (["/a: mine"], ["/a: mine"]),
    (("one", "two"), ["one", "two"]),
    (["ok", 3], ["(root): validator returned an unsupported value"]),
    ("a string", ["(root): validator returned an unsupported value"]),
    ({"errors": []}, ["(root): validator returned an unsupported value"]),
    (1, ["(root): validator returned an unsupported value"]),
])
def test_callable_verdicts_are_normalised(verdict: object, expected: list[str]) -> None:
    assert validator_for(lambda instance: verdict)({"a": 1}) == expected


def test_callable_problem_list_is_capped() -> None:
    many = [f"p{i}" for i in range(3 * MAX_PROBLEMS)]
    assert validator_for(lambda instance: many)(None) == many[:MAX_PROBLEMS]


def test_callable_that_raises_is_a_rejection_that_never_propagates() -> None:
    def broken(instance: object) -> bool:
        return 1 / 0 > 0

    assert validator_for(broken)(None) == ["(root): validator raised ZeroDivisionError"]


def test_callable_receives_the_instance_unchanged() -> None:
    seen: list[object] = []
    instance = {"a": [1, 2]}
    validator_for(lambda x: seen.append(x))(instance)
    assert seen == [instance] and seen[0] is instance


@pytest.mark.parametrize("spec", [None, 3, "schema", ["type"], b"{}"])
def test_validator_for_refuses_anything_else(spec: object) -> None:
    with pytest.raises(UsageError):
        validator_for(spec)


# -- JsonschemaValidator -------------------------------------------------------------------------

def test_jsonschema_validator_without_the_library_raises_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # makes ``import jsonschema`` fail
    with pytest.raises(UsageError, match="jsonschema"):
        JsonschemaValidator({"type": "object"})


@pytest.mark.host
def test_jsonschema_validator_reports_the_same_content_free_problems() -> None:
    pytest.importorskip("jsonschema")
    validator = JsonschemaValidator(CANARY_SCHEMA)
    result = validator(CANARY_INSTANCE)
    assert sorted(result) == sorted(SchemaValidator(CANARY_SCHEMA)(CANARY_INSTANCE))
    assert all(CANARY not in p for p in result)
    assert validator({"city": "1", "unit": "c", "days": 1}) == []


@pytest.mark.host
def test_jsonschema_validator_refuses_an_invalid_schema_without_its_content() -> None:
    pytest.importorskip("jsonschema")
    with pytest.raises(UsageError) as caught:
        JsonschemaValidator({"properties": {"a": {"type": CANARY}}})
    assert "#/properties/a/type" in str(caught.value) and CANARY not in str(caught.value)


@pytest.mark.host
def test_jsonschema_validator_turns_library_exceptions_into_a_problem() -> None:
    pytest.importorskip("jsonschema")
    url = f"https://example.invalid/{CANARY}.json"  # never fetched: referencing does not retrieve by default
    result = JsonschemaValidator({"$ref": url})(1)
    assert len(result) == 1 and result[0].startswith("(root): jsonschema raised ")
    assert CANARY not in result[0]


@pytest.mark.host
def test_jsonschema_validator_supports_keywords_the_builtin_refuses() -> None:
    pytest.importorskip("jsonschema")
    validator = JsonschemaValidator({"type": "array", "uniqueItems": True})
    assert validator([1, 2]) == []
    assert validator([1, 1]) == ["(root): uniqueItems"]


# -- differential property test against jsonschema ---------------------------------------------

KEYS = ["a", "b", "c"]
#: Checked against every generated schema besides the generated instances, so that every keyword
#: meets instances of its own kind on both sides of its bounds.
PROBES = [None, True, False, 0, 1, -2, 3, 1.0, 2.5, -1.5, "", "a", "ab", "b1a", "1", [], [1], ["a", "b"],
          [None, 2, "a"], {}, {"a": 1}, {"a": "x", "b": []}, {"c": None, "z": 1},
          {"a": {"b": [1.0]}, "b": True, "c": "ab"}]


@pytest.mark.host
def test_builtin_validator_agrees_with_jsonschema_on_generated_schemas_and_instances() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    scalars = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, 2.5, -1.5])
               | st.text(alphabet="ab1", max_size=3))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.sampled_from([*KEYS, "z"]), inner, max_size=3), max_leaves=8)
    numbers = st.integers(-3, 3) | st.sampled_from([0.5, -1.5, 2.0])
    counts = st.integers(0, 3)
    patterns = st.sampled_from(["a", "^a", "b$", "^[ab]*$", "1", "a|1", "^$"])
    type_names = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
    # enum/const values that probes equal under JSON rules but not under Python's (1.0 == 1 != True)
    members = st.sampled_from([1.0, 0.0, -2.0, [1.0], {"a": 1.0}, 1, 0, True, False, "a", None]) | values

    # One keyword with a non-schema value: the leaves of generated schemas, and the definitions.
    assertion = st.one_of(
        st.builds(lambda t: {"type": t}, type_names | st.lists(type_names, min_size=1, max_size=3, unique=True)),
        st.builds(lambda e: {"enum": e}, st.lists(members, max_size=3)),
        st.builds(lambda c: {"const": c}, members),
        st.builds(lambda k, n: {k: n}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum",
                                                       "exclusiveMaximum"]), numbers),
        st.builds(lambda k, n: {k: n}, st.sampled_from(["minLength", "maxLength", "minItems", "maxItems"]), counts),
        st.builds(lambda p: {"pattern": p}, patterns),
        st.builds(lambda r: {"required": r}, st.lists(st.sampled_from(KEYS), unique=True, min_size=1, max_size=3)),
        st.builds(lambda a: {"additionalProperties": a}, st.booleans()),
        st.builds(lambda d: {"$ref": d}, st.sampled_from(["#/$defs/d0", "#/$defs/d1"])),
        st.booleans(),
    )

    def merge(parts: list[object]) -> object:
        if len(parts) == 1:
            return parts[0]
        return {k: v for p in parts if isinstance(p, dict) for k, v in p.items()}

    def applicators(inner: object) -> object:
        return st.one_of(
            st.builds(lambda p: {"properties": p},
                      st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=3)),
            st.builds(lambda a: {"additionalProperties": a}, inner),
            st.builds(lambda p, a: {"properties": p, "additionalProperties": a},
                      st.dictionaries(st.sampled_from(KEYS), inner, max_size=2), st.booleans() | inner),
            st.builds(lambda i: {"items": i}, inner),
            st.builds(lambda b: {"anyOf": b}, st.lists(inner, min_size=1, max_size=3)),
            inner,
        )

    subschemas = st.recursive(st.lists(assertion, min_size=1, max_size=3).map(merge),
                              lambda inner: st.lists(applicators(inner), min_size=1, max_size=3).map(merge),
                              max_leaves=8)
    simple_defs = st.lists(assertion.filter(lambda a: not (isinstance(a, dict) and "$ref" in a)),
                           min_size=1, max_size=2).map(merge)

    @hypothesis.settings(max_examples=500, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(body=subschemas, d0=simple_defs, d1=simple_defs,
                      instances=st.lists(values, min_size=1, max_size=8))
    def check(body: object, d0: object, d1: object, instances: list[object]) -> None:
        schema = dict(body) if isinstance(body, dict) else {"anyOf": [body]}
        schema["$defs"] = {"d0": d0, "d1": d1}
        ours, adapter = SchemaValidator(schema), JsonschemaValidator(schema)
        theirs = jsonschema.Draft202012Validator(schema)
        for instance in PROBES + instances:
            expected = theirs.is_valid(instance)
            assert (ours(instance) == []) == expected, (schema, instance, ours(instance))
            assert (adapter(instance) == []) == expected, (schema, instance)

    check()


# -- edges the keyword table does not reach ------------------------------------------------------

def nested(key: str, levels: int, leaf: object) -> object:
    """``leaf`` wrapped ``levels`` times in ``{key: ...}``."""
    for _ in range(levels):
        leaf = {key: leaf}
    return leaf


def nested_lists(levels: int) -> object:
    value: list[object] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("schema", "make", "per_level", "problem"), [
    # Each items/properties/additionalProperties/anyOf step and each $ref is one level of depth.
    pytest.param({"type": "array", "items": {"$ref": "#"}}, nested_lists, 2, "depth", id="items-and-ref"),
    pytest.param({"type": "object", "properties": {"a": {"$ref": "#"}}}, lambda n: nested("a", n, {}), 2, "depth",
                 id="properties-and-ref"),
    pytest.param({"type": "object", "additionalProperties": {"$ref": "#"}}, lambda n: nested("z", n, {}), 2, "depth",
                 id="additionalProperties-and-ref"),
    pytest.param({"anyOf": [{"type": "object", "properties": {"a": {"$ref": "#"}}}]}, lambda n: nested("a", n, {}), 3,
                 "anyOf", id="anyOf-properties-and-ref"),
])
def test_an_instance_exactly_at_the_depth_limit_passes_and_one_level_more_does_not(
        schema: dict[str, object], make: Callable[[int], object], per_level: int, problem: str) -> None:
    levels = MAX_DEPTH // per_level
    assert problems(schema, make(levels)) == []
    result = problems(schema, make(levels + 1))
    assert len(result) == 1 and result[0].endswith(f": {problem}")


def wrapped(levels: int, wrap: Callable[[object], object]) -> object:
    """``{}`` wrapped ``levels`` times by ``wrap`` (one schema nesting level each)."""
    schema: object = {}
    for _ in range(levels):
        schema = wrap(schema)
    return schema


#: One schema nesting level each: an ``items``, an ``anyOf`` branch, a ``properties`` member, an
#: ``additionalProperties`` schema.
NESTINGS = {"items": lambda s: {"items": s}, "anyOf": lambda s: {"anyOf": [s]},
            "properties": lambda s: {"properties": {"a": s}},
            "additionalProperties": lambda s: {"additionalProperties": s}}


@pytest.mark.parametrize("wrap", NESTINGS.values(), ids=NESTINGS.keys())
def test_a_schema_exactly_at_the_nesting_limit_compiles_and_one_level_more_does_not(
        wrap: Callable[[object], object]) -> None:
    SchemaValidator(wrapped(MAX_DEPTH, wrap))  # type: ignore[arg-type]
    SchemaValidator({"$defs": {"d": wrapped(MAX_DEPTH - 1, wrap)}})
    for schema in (wrapped(MAX_DEPTH + 1, wrap), {"$defs": {"d": wrapped(MAX_DEPTH, wrap)}}):
        with pytest.raises(UsageError, match="deeper"):
            SchemaValidator(schema)  # type: ignore[arg-type]


def test_ref_siblings_apply_under_the_current_dialect() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"s": {"type": "string"}},
              "$ref": "#/$defs/s", "maxLength": 1}
    assert problems(schema, "ab") == ["(root): maxLength"]


def test_instances_of_subclasses_have_their_base_json_type() -> None:
    class Color(enum.IntEnum):
        RED = 1

    class Text(str):
        pass

    class Ratio(float):
        pass

    class Table(dict):  # type: ignore[type-arg]
        pass

    class Row(list):  # type: ignore[type-arg]
        pass

    for kind, instance in (("integer", Color.RED), ("string", Text("x")), ("number", Ratio(0.5)),
                           ("object", Table()), ("array", Row())):
        assert problems({"type": kind}, instance) == [], kind
        assert problems({"type": "null"}, instance) == ["(root): type"], kind


def test_long_locations_and_names_in_error_messages_are_shortened() -> None:
    long_name = "p" * 300
    with pytest.raises(UsageError) as caught:
        SchemaValidator({"properties": {long_name: {"oneOf": []}}})
    message = str(caught.value)
    assert "..." in message and len(message) < 200 and long_name not in message
    with pytest.raises(UsageError) as caught:
        SchemaValidator({"x" * 300: 1})
    message = str(caught.value)
    assert "..." in message and len(message) < 120


def test_defs_are_root_only_even_inside_defs() -> None:
    with pytest.raises(UsageError, match="only supported at the root"):
        SchemaValidator({"$defs": {"a": {"$defs": {}}}})


def test_a_ref_into_a_definitions_member_is_unsupported_not_dangling() -> None:
    with pytest.raises(UsageError, match=r"\$ref must be"):
        SchemaValidator({"$defs": {"a": {}}, "$ref": "#/$defs/a/b"})


@pytest.mark.parametrize(("schema", "cycle"), [
    pytest.param({"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}}, True,
                 id="cycle-through-a-later-branch"),
    pytest.param({"$defs": {"a": {"type": "string"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]},
                            "c": {"anyOf": [{"$ref": "#/$defs/b"}, {"$ref": "#/$defs/a"}]}}}, False,
                 id="diamond-is-not-a-cycle"),
])
def test_ref_and_anyof_cycles_are_found_wherever_they_close(schema: dict[str, object], cycle: bool) -> None:
    if cycle:
        with pytest.raises(UsageError, match="cycle"):
            SchemaValidator(schema)
    else:
        SchemaValidator(schema)


@pytest.mark.parametrize("keyword", ["title", "description", "$comment", "format", "$schema", "$id", "deprecated",
                                     "readOnly", "writeOnly", "examples"])
def test_each_annotation_with_a_value_of_the_wrong_type_is_refused(keyword: str) -> None:
    with pytest.raises(UsageError, match="wrong type"):
        SchemaValidator({keyword: 3.5})


def test_the_tuple_form_of_items_is_refused_as_unsupported() -> None:
    with pytest.raises(UsageError, match="array form of items"):
        SchemaValidator({"items": [{"type": "string"}]})


@pytest.mark.host
def test_jsonschema_validator_names_false_caps_problems_and_hides_undeclared_names() -> None:
    pytest.importorskip("jsonschema")
    assert JsonschemaValidator(False)(1) == ["(root): false"]
    many = JsonschemaValidator({"type": "array", "items": {"type": "string"}})(list(range(3 * MAX_PROBLEMS)))
    assert many == [f"/{i}: type" for i in range(MAX_PROBLEMS)]
    schema = {"anyOf": [{"type": "object", "required": ["known"],
                         "additionalProperties": {"type": "string"}}]}
    validator = JsonschemaValidator({"type": "object", "properties": {"p": schema}})
    result = validator({"p": {"secret": 1}})
    assert result == ["/p: anyOf"]
    nested_validator = JsonschemaValidator({"type": "object", "additionalProperties": schema["anyOf"][0]})
    assert nested_validator({"secret": {"other": 1}}) == ["/*/known: required", "/*/*: type"]


@pytest.mark.host
def test_jsonschema_validator_stops_at_the_cap_before_reaching_a_fault_beyond_it() -> None:
    """The adapter stops pulling errors from ``jsonschema`` once it holds ``MAX_PROBLEMS``: a subschema
    that would raise (an unresolvable remote ``$ref``) after them is never evaluated."""
    pytest.importorskip("jsonschema")
    url = f"https://example.invalid/{CANARY}.json"
    schema = {"type": "array", "prefixItems": [*([{"type": "string"}] * MAX_PROBLEMS), {"$ref": url}]}
    assert JsonschemaValidator(schema)(list(range(MAX_PROBLEMS + 1))) == [
        f"/{i}: type" for i in range(MAX_PROBLEMS)]
    # One problem fewer and the fault is reached: it becomes a problem of its own.
    fewer = JsonschemaValidator(schema)([*range(MAX_PROBLEMS - 1), "s", 0])
    assert len(fewer) == MAX_PROBLEMS and fewer[-1].startswith("(root): jsonschema raised ")


def test_a_ref_cycle_that_an_earlier_definition_only_leads_into_is_refused() -> None:
    """Definitions are walked first, in order: ``x`` is not on the cycle y -> z -> y but is the first
    way into it, and the cycle is found all the same."""
    with pytest.raises(UsageError, match="cycle"):
        SchemaValidator({"$defs": {"x": {"anyOf": [{"$ref": "#/$defs/y"}]}, "y": {"anyOf": [{"$ref": "#/$defs/z"}]},
                                   "z": {"$ref": "#/$defs/y"}}})
    with pytest.raises(UsageError, match="cycle"):  # a definition that refers to itself, entered from another
        SchemaValidator({"$defs": {"x": {"$ref": "#/$defs/y"},
                                   "y": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/y"}]}}})


def test_the_cycle_check_walks_each_definition_once() -> None:
    """A chain of 40 diamonds (each definition refers twice to the next), defined deepest first: a check that
    walked a finished definition again would take 2**40 steps; this one compiles at once."""
    defs: dict[str, object] = {"d40": {"type": "string"}}
    for i in range(39, -1, -1):
        defs[f"d{i}"] = {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
    assert SchemaValidator({"$defs": defs, "$ref": "#/$defs/d0"})("s") == []


def diamond_chain(levels: int) -> dict[str, object]:
    """``levels`` nested two-branch ``anyOf``, both branches of each referring to the next level, which
    ends in ``{"type": "string"}``: a string passes, anything else fails on every one of the 2**levels paths."""
    defs: dict[str, object] = {f"d{levels}": {"type": "string"}}
    for i in range(levels - 1, -1, -1):
        defs[f"d{i}"] = {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def test_nested_anyof_sharing_definitions_evaluates_each_branch_once_per_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing value on a chain of 24 diamonds: trying every path would evaluate 2**25 schema objects (the
    count is stopped far below that); each branch is evaluated once per value and depth instead."""
    levels = 24
    validator = SchemaValidator(diamond_chain(levels))  # type: ignore[arg-type]
    bound = 6 * levels  # per value: each level runs its definition, its two branches and their references
    runs = 0
    real_run = schema_module._run

    def counting_run(*args: object) -> None:
        nonlocal runs
        runs += 1
        assert runs <= bound, "a branch was evaluated again on the same value"
        real_run(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(schema_module, "_run", counting_run)
    for instance, expected in ((1, ["(root): anyOf"]), ("s", []), (["s", 1], ["(root): anyOf"]),
                               ({"k": [1, 2]}, ["(root): anyOf"])):
        runs = 0
        assert validator(instance) == expected
        assert 0 < runs <= bound


def test_a_remembered_branch_result_holds_for_that_value_only() -> None:
    """The same ``anyOf`` branches on different values of one instance (array elements, object members),
    with equal and unequal values side by side: each value gets its own verdict."""
    validator = SchemaValidator({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}})
    assert validator(["a", None, 1, "b", 1.5, None]) == ["/2: anyOf", "/4: anyOf"]
    members = SchemaValidator({"$defs": diamond_chain(6)["$defs"], "type": "object",
                               "additionalProperties": {"$ref": "#/$defs/d0"}})
    assert members({"a": "x", "b": 2, "c": "y", "d": [3]}) == ["/*: anyOf", "/*: anyOf"]


def test_a_remembered_branch_result_holds_at_its_depth_only() -> None:
    """The same ``anyOf`` branch meets the same value twice: first one level past the depth limit (at the end
    of a chain of references, where it fails with ``depth``), then near the root, where it passes. The first
    verdict must not decide the second."""
    def schema(chain: int, *, near_path: bool) -> dict[str, object]:
        defs: dict[str, object] = {"B": {"anyOf": [{"type": "integer"}]}}
        for i in range(chain):
            defs[f"r{i}"] = {"$ref": f"#/$defs/r{i + 1}" if i + 1 < chain else "#/$defs/B"}
        branches = [{"$ref": "#/$defs/r0"}] + ([{"$ref": "#/$defs/B"}] if near_path else [])
        return {"$defs": defs, "anyOf": branches}

    # Root 0, its branch 1, r0 2, ..., B at chain + 2, B's branch at chain + 3: MAX_DEPTH + 1 for this chain.
    chain = MAX_DEPTH - 2
    assert SchemaValidator(schema(chain - 1, near_path=False))(7) == []  # B's branch exactly at the limit
    assert SchemaValidator(schema(chain, near_path=False))(7) == ["(root): anyOf"]  # one level past it
    validator = SchemaValidator(schema(chain, near_path=True))
    assert validator(7) == []
    assert validator("s") == ["(root): anyOf"]


@pytest.mark.parametrize(("accepting", "leaf"), [({"anyOf": [{}, {"type": "integer"}]}, "s"),
                                                 ({"type": "array", "items": {}}, ["s"])],
                         ids=["anyOf-with-an-accept-all-branch", "items-accepting-all"])
def test_a_subschema_that_accepts_everything_is_not_evaluated_past_the_depth_limit(
        accepting: dict[str, object], leaf: object) -> None:
    """``B`` reached at exactly the depth limit (each ``properties`` step and each ``$ref`` is one level)
    accepts its value there: the part of it that accepts everything is not evaluated one level deeper,
    where it would report ``depth``. One level more and the limit is reported, as it must be."""
    validator = SchemaValidator({"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#/$defs/B"}},
                                 "$defs": {"B": accepting}})

    def instance(levels: int) -> object:
        value: object = {"b": leaf}
        for _ in range(levels):
            value = {"a": value}
        return value

    at_limit = MAX_DEPTH // 2 - 1  # B at depth 2 * levels + 2 == MAX_DEPTH
    assert validator(instance(at_limit)) == []
    (problem,) = validator(instance(at_limit + 1))
    assert problem.endswith("/b: depth")


def test_long_locations_and_names_in_messages_are_cut_past_their_caps_only() -> None:
    assert _where("#" * 120) == "#" * 120 and _where("#" * 121) == "#" * 117 + "..."
    assert _name("k" * 38) == repr("k" * 38) and _name("k" * 39) == repr("k" * 39)[:37] + "..."


@pytest.mark.host
def test_jsonschema_validator_shows_a_name_declared_only_inside_a_list_of_subschemas() -> None:
    """The problem path shows ``known`` (declared in a subschema inside ``allOf``'s list); the undeclared
    ``secret`` stays ``*``."""
    pytest.importorskip("jsonschema")
    inside = {"type": "object", "properties": {"known": {"anyOf": [{"type": "object", "required": ["inner"]}]}}}
    assert JsonschemaValidator({"type": "object", "additionalProperties": {"allOf": [inside]}})(
        {"secret": {"known": {}}}) == ["/*/known: anyOf"]
