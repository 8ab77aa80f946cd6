"""The route contracts are data, and the accumulators' dispatch tables agree with them."""

from __future__ import annotations

import pytest

from webclient import DEFAULT_LIMITS, StreamSession
from webclient._routes import COMMON_NON_ACCEPTED, ROUTE_NAMES, ROUTES, route
from webclient._toolcalls import ToolRegistry


def test_the_table_holds_exactly_the_four_routes() -> None:
    assert ROUTE_NAMES == ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
    for name, entry in ROUTES.items():
        assert entry.contract.name == name and entry.accumulator.contract is entry.contract
        assert route(name) is entry


@pytest.mark.parametrize("name", ROUTE_NAMES)
def test_every_contract_names_its_vocabulary_and_refuses_the_limit_stops_by_default(name: str) -> None:
    contract = ROUTES[name].contract
    assert contract.success_status == 200 and contract.endpoint.startswith("/v1")
    for field in ("text_delta", "block_open", "block_close", "terminal", "error", "usage"):
        assert getattr(contract, field), field
    assert contract.accumulator_key and contract.close_condition and contract.terminal_condition
    assert contract.non_accepted_stop_reasons >= COMMON_NON_ACCEPTED
    assert not contract.non_accepted_stop_reasons & {"stop", "end_turn", "tool_use", "tool_calls", "refusal",
                                                     "pause_turn", "STOP", "completed"}
    assert contract.done_sentinel == ("terminal" if name == "openai-chat" else "ignored")


@pytest.mark.parametrize("name", ["openai-responses", "anthropic-messages"])
def test_typed_event_routes_dispatch_every_event_their_contract_names(name: str) -> None:
    entry = ROUTES[name]
    contract = entry.contract
    assert contract.cross_check_event_name and contract.start_event
    accumulator = entry.accumulator(DEFAULT_LIMITS, ToolRegistry(None), None)
    handlers = accumulator._handlers  # type: ignore[attr-defined]
    named = {contract.start_event}
    for field in ("text_delta", "tool_input_delta", "block_open", "block_close", "terminal", "error", "usage",
                  "keep_alive"):
        named.update(entry.split(":")[0] for entry in getattr(contract, field) if not entry.startswith(":"))
    assert named <= set(handlers), named - set(handlers)


def test_the_contract_is_reachable_from_a_session() -> None:
    session = StreamSession("gemini")
    assert session.contract is ROUTES["gemini"].contract
    assert {"SAFETY", "MAX_TOKENS"} <= session.contract.non_accepted_stop_reasons
