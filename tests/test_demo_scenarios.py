"""The scenario table says what each scenario ends as, and the upstream's answers end that way.

The demo's picker shows each scenario's ``expected`` outcome; the Chromium tests check it through the page. Here
the same claim is checked fast, without a browser or a server, for every route: the upstream's planned reply for
each scenario, fed to a :class:`~webclient.StreamSession` with the demo's tools, ends in the expected outcome
(the ``stall`` and ``endless_event`` scenarios need a deadline or a line ceiling, which a transport and the
page's limits supply: their prefixes are checked here to end ``truncated`` at EOF). Also the text helpers the
upstream builds every answer from: the deltas join to the answer, and the prompt echo is bounded.
"""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp")

from demo_site.scenarios import (
    PROMPT_ECHO_CHARS,
    SCENARIOS,
    TOOLS,
    Scenario,
    answer_text,
    sanitize_prompt,
    text_deltas,
)
from demo_site.upstream import ROUTES, RouteEncoder, demo_config_document
from tests.demo_replies import PROMPT, as_played, planned
from webclient import Outcome, StreamSession
from webclient._toolcalls import ToolRegistry

pytestmark = pytest.mark.host

#: Scenarios whose outcome a transport decides (a deadline, or the page's line ceiling on an endless line).
TRANSPORT_DECIDES = {"stall": Outcome.TIMEOUT, "endless_event": Outcome.BUFFER_LIMIT}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.slug)
@pytest.mark.parametrize("enc_cls", [enc for _, enc in ROUTES], ids=lambda c: c.route)
def test_each_scenario_s_answer_ends_in_the_outcome_the_table_promises(
        enc_cls: type[RouteEncoder], scenario: Scenario) -> None:
    reply = planned(enc_cls, scenario)
    session = StreamSession(enc_cls.route, tools=TOOLS)
    session.open(reply.status, reply.content_type)
    for _, data in reply.writes:
        session.feed(data)
    result = session.finish()
    expected = Outcome(scenario.expected_for(enc_cls.route))
    if scenario.slug in TRANSPORT_DECIDES:
        assert TRANSPORT_DECIDES[scenario.slug] is expected
        expected = Outcome.TRUNCATED  # (what is left when the transport ends the stream at EOF instead)
    assert result.outcome is expected, (result.outcome, result.stage)
    if scenario.stop == "refusal" and enc_cls.route == "gemini":
        assert result.stage == "stop_reason" and result.stop_reason == "SAFETY"
    if expected is Outcome.COMPLETE:  # the whole answer, on its text or refusal channel, and every call
        assert (result.text or result.refusal) == answer_text(as_played(scenario), sanitize_prompt(PROMPT))
        assert [c.name for c in result.tool_calls] == [c.name for c in scenario.tools]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.slug)
def test_the_deltas_join_to_the_answer_and_follow_the_scenario_s_cut(scenario: Scenario) -> None:
    text = answer_text(scenario, sanitize_prompt(PROMPT))
    deltas = text_deltas(scenario, text)
    assert "".join(deltas) == text
    assert all(deltas)
    if scenario.delta_chars:
        assert {len(d) for d in deltas[:-1]} <= {scenario.delta_chars} and len(deltas[-1]) <= scenario.delta_chars
    elif text:
        assert len(deltas) < len(text.split()) + 1  # words grouped, one to three a delta
    if scenario.repeat_to_chars:
        assert len(text) >= scenario.repeat_to_chars > len(text) - len(scenario.text) - 40


def test_text_after_the_last_word_stays_in_the_last_delta() -> None:
    scenario = SCENARIOS[0]
    assert text_deltas(scenario, "one two three four five  \n") == ["one", " two three", " four", " five  \n"]


def test_the_prompt_echo_is_one_bounded_line_with_an_ellipsis_when_cut() -> None:
    echoed = sanitize_prompt("line one\nline\x07two " + "x" * 500)
    assert len(echoed) == PROMPT_ECHO_CHARS and echoed.endswith("…") and echoed.startswith("line one linetwo x")
    assert sanitize_prompt("  \n\t ") == "(empty prompt)" and sanitize_prompt("short") == "short"


@pytest.mark.parametrize(("name", "arguments", "stage"), [
    ("get_weather", '{"location": "Paris", "unit": "celsius"}', None),
    ("get_weather", '{"location": "Paris", "altitude": 35}', "tool_schema"),  # a member the schema does not name
    ("get_weather", '{"location": "Paris", "unit": "kelvin"}', "tool_schema"),
    ("get_local_time", '{"timezone": "Europe/Paris"}', None),
    ("get_local_time", '{"timezone": "Europe/Paris", "city": "Paris"}', "tool_schema"),
    ("get_local_time", "{}", "tool_schema"),
])
def test_the_demo_tools_take_exactly_the_arguments_their_schemas_name(name: str, arguments: str,
                                                                      stage: str | None) -> None:
    _, failed, _ = ToolRegistry(TOOLS).check(name, arguments)
    assert failed == stage


def test_the_config_document_gives_each_scenario_s_outcome_per_route() -> None:
    scenarios = {s["slug"]: s for s in demo_config_document("embedded")["scenarios"]}  # type: ignore[attr-defined]
    assert scenarios["refusal"]["expected_by_route"] == {"openai-chat": "complete", "openai-responses": "complete",
                                                        "anthropic-messages": "complete", "gemini": "truncated"}
    assert all(set(s["expected_by_route"].values()) == {s["expected"]} for slug, s in scenarios.items()
               if slug != "refusal")
