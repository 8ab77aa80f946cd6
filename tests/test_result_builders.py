"""The positional constructors the session builds its results with (``_updates.slot_builder``) make
exactly the objects the dataclasses' own constructors make: same class, same field values, still
frozen; and they refuse classes whose ``__init__`` does more than set fields."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

import pytest

from tests.route_fixtures import cases
from webclient import Outcome, StreamSession
from webclient._telemetry import Telemetry
from webclient._updates import (
    ChoiceResult,
    StreamResult,
    ToolCall,
    new_choice,
    new_result,
    new_telemetry,
    slot_builder,
)


def _rebuilt(obj: Any) -> Any:
    """``obj`` built again through its dataclass's own constructor (keywords, every field)."""
    return type(obj)(**{f.name: getattr(obj, f.name) for f in fields(obj)})


def _results() -> list[StreamResult]:
    """The results of every recorded case, committed or not, on every route."""
    out = []
    for case in cases():
        session = StreamSession(case.route)
        session.open(200, "text/event-stream")
        session.feed(case.data)
        out.append(session.finish())
    return out


def test_every_recorded_result_equals_the_one_its_dataclass_constructors_build() -> None:
    results = _results()
    assert {r.outcome for r in results} >= {Outcome.COMPLETE, Outcome.TRUNCATED}
    for result in results:
        assert type(result) is StreamResult and type(result.telemetry) is Telemetry
        assert result == _rebuilt(result)
        assert result.telemetry == _rebuilt(result.telemetry)
        for choice in result.choices:
            assert type(choice) is ChoiceResult and choice == _rebuilt(choice)


@pytest.mark.parametrize(("cls", "build"), [(ChoiceResult, new_choice), (StreamResult, new_result),
                                            (Telemetry, new_telemetry)], ids=lambda v: getattr(v, "__name__", ""))
def test_a_builder_takes_every_field_in_order_and_gives_a_frozen_equal_object(cls: type, build: Any) -> None:
    names = [f.name for f in fields(cls)]
    values = [f"value of {name}" for name in names]
    built = build(*values)
    assert type(built) is cls
    assert built == cls(*values)
    assert [getattr(built, name) for name in names] == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, names[0], "changed")
    with pytest.raises(TypeError):
        build(*values[:-1])  # a field left out is a caller bug, not a default


def test_a_class_that_is_not_a_frozen_slotted_dataclass_or_whose_init_does_more_is_refused() -> None:
    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(frozen=True, slots=True)
    class PostInit:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class NotInInit:
        x: int
        y: int = dataclasses.field(default=0, init=False)

    for cls in (Mutable, NoSlots, PostInit, NotInInit):
        with pytest.raises(AssertionError):
            slot_builder(cls)
    assert slot_builder(ToolCall)(0, None, "f", "valid", {}, True, "{}", (), "function") == ToolCall(
        0, None, "f", "valid", {}, True, "{}")
