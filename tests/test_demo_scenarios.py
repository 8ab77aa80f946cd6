"""The scenario table says what each scenario ends as, and the upstream's answers end that way.

The demo's picker shows each scenario's ``expected`` outcome; the Chromium tests check it through the page. Here
the same claim is checked fast, without a browser or a server, for every route: the upstream's planned reply for
each scenario, fed to a :class:`~webclient.StreamSession` with the demo's tools, ends in the expected outcome
(the ``stall`` and ``endless_event`` scenarios need a deadline or a line ceiling, which a transport and the
page's limits supply: their prefixes are checked here to end ``truncated`` at EOF). Also the text helpers the
upstream builds every answer from: the deltas join to the answer, and the prompt echo is bounded. And the table's
own checks: its words, titles and slugs, text in every streamed scenario, and the demo tools' descriptions.
"""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest

pytest.importorskip("aiohttp")

from demo_site.scenarios import (
    PROMPT_ECHO_CHARS,
    SCENARIOS,
    TOOLS,
    Expected,
    Scenario,
    answer_text,
    check_unique,
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


def test_word_deltas_take_one_two_one_then_three_words_in_turn() -> None:
    words = " ".join(f"w{i}" for i in range(1, 10))
    assert text_deltas(SCENARIOS[0], words) == ["w1", " w2 w3", " w4", " w5 w6 w7", " w8", " w9"]


@pytest.mark.parametrize(("target", "copies"), [(6, 1), (7, 2), (12, 2), (13, 3)])
def test_a_repeated_answer_is_numbered_copies_up_to_the_first_that_reaches_its_size(target: int,
                                                                                   copies: int) -> None:
    scenario = dataclasses.replace(SCENARIOS[0], text="ab", repeat_to_chars=target)  # each copy "[n] ab": 6 chars
    assert answer_text(scenario, "p") == "".join(f"[{n}] ab" for n in range(1, copies + 1))


def test_the_prompt_echo_is_one_bounded_line_with_an_ellipsis_when_cut() -> None:
    echoed = sanitize_prompt("line one\nline\x07two " + "x" * 500)
    assert len(echoed) == PROMPT_ECHO_CHARS and echoed.endswith("…") and echoed.startswith("line one linetwo x")
    assert sanitize_prompt("  \n\t ") == "(empty prompt)" and sanitize_prompt("short") == "short"


def test_a_prompt_of_40_characters_is_echoed_whole_and_one_of_41_is_cut_to_39_and_an_ellipsis() -> None:
    assert sanitize_prompt("y" * 40) == "y" * 40
    assert sanitize_prompt("y" * 41) == "y" * 39 + "…"


# -- the table itself -----------------------------------------------------------------------------------------


def test_the_table_s_outcome_words_are_webclient_s_outcomes() -> None:
    assert set(get_args(Expected)) == {o.value for o in Outcome}


@pytest.mark.parametrize(("change", "named"), [
    ({"ending": "termnal"}, "ending 'termnal'"), ({"ending": ""}, "ending ''"), ({"chunking": ""}, "chunking ''"),
    ({"stop": "end_turn"}, "stop 'end_turn'"), ({"expected": "completed"}, "expected 'completed'"),
    ({"expected_on": (("gemini", "filtered"),)}, r"expected_on\[gemini\] 'filtered'"),
    ({"title": " "}, "a slug and a title"), ({"slug": ""}, "a slug and a title"),
], ids=lambda value: "-".join(f"{k}={v!r}" for k, v in value.items()) if isinstance(value, dict) else "")
def test_a_scenario_with_a_word_outside_the_table_s_vocabulary_is_refused_naming_the_field_when_it_is_built(
        change: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        dataclasses.replace(SCENARIOS[0], **change)  # type: ignore[arg-type]


def test_scenario_slugs_and_titles_are_unique_so_the_picker_tells_them_apart() -> None:
    assert len({s.slug for s in SCENARIOS}) == len({s.title for s in SCENARIOS}) == len(SCENARIOS)


@pytest.mark.parametrize("change", [{"slug": "plain"}, {"title": "Plain answer"}], ids=["slug", "title"])
def test_a_table_with_a_slug_or_a_title_twice_is_refused(change: dict[str, str]) -> None:
    check_unique(SCENARIOS[:2])  # (the first two differ in both)
    with pytest.raises(ValueError, match="unique"):
        check_unique((SCENARIOS[0], dataclasses.replace(SCENARIOS[0], **{"slug": "other", "title": "Other", **change})))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.slug)
def test_every_streamed_scenario_has_text_for_the_page_to_show_before_its_point(scenario: Scenario) -> None:
    # (the HTML 502 is a gateway's page, not the model's answer)
    assert bool(scenario.text.strip()) is (scenario.ending != "http_502_html")


def test_the_demo_tools_describe_themselves_and_each_free_text_parameter_to_a_model() -> None:
    for schema in TOOLS.values():
        assert str(schema["description"]).strip()
        properties: dict[str, dict[str, object]] = schema["properties"]  # type: ignore[assignment]
        for prop in properties.values():
            assert "enum" in prop or str(prop.get("description", "")).strip()


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
