"""Typed routes resolve their handler table once per class: sessions share it, a misspelt handler
name fails when the class is defined, and every entry is a method of the route."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pytest

from webclient import StreamSession
from webclient._routes import ROUTES
from webclient._routes.anthropic_messages import AnthropicMessagesAccumulator

TYPED = ["openai-responses", "anthropic-messages"]


@pytest.mark.parametrize("name", TYPED)
def test_two_sessions_of_a_typed_route_share_one_handler_table(name: str) -> None:
    first, second = StreamSession(name), StreamSession(name)
    assert first._route._handlers is second._route._handlers
    assert first._route._handlers.keys() == type(first._route).handler_names.keys()


@pytest.mark.parametrize("name", TYPED)
def test_every_handler_is_the_route_class_s_method_of_that_name(name: str) -> None:
    cls = ROUTES[name].accumulator
    for kind, method in cls.handler_names.items():
        assert cls._handlers[kind] is getattr(cls, method), kind


def test_a_misspelt_handler_name_fails_when_the_route_class_is_defined() -> None:
    with pytest.raises(AttributeError):
        class _Broken(AnthropicMessagesAccumulator):
            handler_names: ClassVar[Mapping[str, str]] = {"message_start": "_mesage_start"}
