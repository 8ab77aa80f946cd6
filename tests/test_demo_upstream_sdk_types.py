"""The embedded upstream speaks each route's wire format as the official SDKs type it.

The demo's upstream writes its events itself, and the rest of the suite reads them with webclient (the reader
under test) or with this suite's own naive readers: a field the upstream names wrongly, or leaves out, can go
unnoticed by both. The SDKs' own models are an oracle we did not write: every event of every scenario on the
OpenAI Chat, OpenAI Responses and Anthropic Messages routes, and the one JSON body those routes answer (the
``json_200`` scenario), validates against the model the SDK parses it into (pydantic validation: required fields,
types and literal values; extra fields allowed, as the SDKs allow them). Gemini has no SDK among the test
dependencies: its wire is checked by ``test_demo_upstream.py``, and its JSON array (a request without
``alt=sse``) here for every scenario.

Where the SDK's model and the live API differ, the live API wins, as recorded in ``../shared/fixtures``:

* In-stream errors are not stream events in the SDKs' typing (they raise on them): Chat's ``{"error": {...}}``
  and the nested form of the Responses ``error`` event (``{"type": "error", "sequence_number", "error": {...}}``,
  the live recording ``vercel-ai/openai__openai-error.1.chunks.txt``) are checked against the error object model
  (``openai.types.shared.ErrorObject``), Anthropic's against ``ErrorResponse``. Anthropic's ``ping`` is dropped
  by the SDK before parsing; it must be exactly ``{"type": "ping"}``.
* openai 3.57.0 requires ``usage.input_tokens_details.cache_write_tokens`` on a Responses usage object; every live
  Responses recording there sends ``{"cached_tokens": N}`` alone, as the upstream does, so that one missing field
  is not counted (:data:`NOT_IN_LIVE_STREAMS`).
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Callable
from typing import Any

import pytest

pydantic = pytest.importorskip("pydantic")
pytest.importorskip("aiohttp")
openai_chat = pytest.importorskip("openai.types.chat")
openai_responses = pytest.importorskip("openai.types.responses")
openai_shared = pytest.importorskip("openai.types.shared")
anthropic_types = pytest.importorskip("anthropic.types")

from demo_site.scenarios import BY_SLUG, SCENARIOS, Scenario, answer_text  # noqa: E402  (after the importorskip guards)
from demo_site.upstream import (  # noqa: E402
    BATCH_EVENTS,
    AnthropicMessages,
    Gemini,
    OpenAIChat,
    OpenAIResponses,
    RouteEncoder,
    demo_config_document,
    split_points,
)
from tests.demo_replies import GEMINI_MODEL, PROMPT, as_played, body_of, planned, request_body  # noqa: E402
from webclient import EventStreamParser  # noqa: E402

pytestmark = pytest.mark.host

#: The scenarios whose reply is an event stream (the HTML 502 and the JSON 200 are not).
STREAMED = [s for s in SCENARIOS if s.ending not in ("http_502_html", "json_200")]


#: Fields the SDK's model requires that no live recording sends (see the module docstring): (model, field).
NOT_IN_LIVE_STREAMS = {("input_tokens_details", "cache_write_tokens")}


def _validated(model: Any, obj: object) -> object:
    """``model.model_validate(obj)``, not counting a missing field of :data:`NOT_IN_LIVE_STREAMS`."""
    try:
        return model.model_validate(obj)
    except pydantic.ValidationError as exc:
        left = [e for e in exc.errors()
                if not (e["type"] == "missing" and tuple(map(str, e["loc"][-2:])) in NOT_IN_LIVE_STREAMS)]
        if left:
            raise
        return None


def _by_type(union: Any) -> Callable[[object], object]:
    """A validator for a union of event models discriminated by ``type``: the member the data's ``type`` names
    (so that a refusal names that member's fields, not every member's); an unknown type is refused too."""
    members = {typing.get_args(m.model_fields["type"].annotation)[0]: m
               for m in typing.get_args(typing.get_args(union)[0])}

    def validate(obj: object) -> object:
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind not in members:
            raise AssertionError(f"no event model for type {kind!r}")
        return _validated(members[kind], obj)
    return validate


def _chat_error(obj: object) -> object:
    return _validated(openai_shared.ErrorObject, obj["error"])  # type: ignore[index]


def _responses_error(obj: object) -> object:
    assert isinstance(obj, dict) and set(obj) == {"type", "sequence_number", "error"}  # the live, nested form
    return _validated(openai_shared.ErrorObject, obj["error"])


#: Route encoder -> (a stream event's validator, the in-stream error's validator, the JSON body's validator).
MODELS: dict[type[RouteEncoder], tuple[Callable[[object], object], Callable[[object], object],
                                       Callable[[object], object]]] = {
    OpenAIChat: (openai_chat.ChatCompletionChunk.model_validate, _chat_error,
                 openai_chat.ChatCompletion.model_validate),
    OpenAIResponses: (_by_type(openai_responses.ResponseStreamEvent), _responses_error,
                      lambda obj: _validated(openai_responses.Response, obj)),
    AnthropicMessages: (_by_type(anthropic_types.RawMessageStreamEvent), anthropic_types.ErrorResponse.model_validate,
                        anthropic_types.Message.model_validate),
}


def _parsed(data: bytes) -> list[tuple[str, Any]]:
    """The complete events of ``data`` with JSON data (``[DONE]`` left out): (event type, parsed data)."""
    parser = EventStreamParser()
    events = [*parser.feed(data), *parser.close()]
    out = []
    for event in events:
        text = getattr(event, "data", None)
        if text is None or text == "[DONE]":
            continue
        out.append((event.type, json.loads(text)))
    return out


def _events(enc_cls: type[RouteEncoder], scenario: Scenario) -> list[tuple[str, Any]]:
    reply = planned(enc_cls, scenario)
    assert reply.status == 200 and reply.content_type.startswith("text/event-stream")
    return _parsed(body_of(reply))


def _is_error(enc_cls: type[RouteEncoder], obj: dict[str, Any]) -> bool:
    return "error" in obj if enc_cls in (OpenAIChat, Gemini) else obj.get("type") == "error"


@pytest.mark.parametrize("scenario", STREAMED, ids=lambda s: s.slug)
@pytest.mark.parametrize("enc_cls", list(MODELS), ids=lambda c: c.route)
def test_every_event_the_embedded_upstream_streams_validates_against_the_official_sdk_model(
        enc_cls: type[RouteEncoder], scenario: Scenario) -> None:
    event_model, error_model, _ = MODELS[enc_cls]
    events = _events(enc_cls, scenario)
    assert events, "the scenario streamed no complete event"
    errors = 0
    for name, obj in events:
        if _is_error(enc_cls, obj):
            errors += 1
            error_model(obj)
            continue
        if enc_cls is AnthropicMessages and name == "ping":
            assert obj == {"type": "ping"}
            continue
        event_model(obj)  # (typed routes: the model of the data's type)
        if enc_cls is not OpenAIChat:  # typed routes: the event line names the data's type
            assert name == obj["type"]
    assert errors == (scenario.ending == "error")


@pytest.mark.parametrize("enc_cls", list(MODELS), ids=lambda c: c.route)
def test_the_json_body_the_embedded_upstream_answers_on_a_stream_route_validates_against_the_official_sdk_model(
        enc_cls: type[RouteEncoder]) -> None:
    _, _, body_model = MODELS[enc_cls]
    reply = planned(enc_cls, BY_SLUG["json_200"])
    assert (reply.status, reply.content_type) == (200, "application/json")
    body_model(json.loads(body_of(reply)))


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s.ending != "http_502_html"], ids=lambda s: s.slug)
def test_gemini_without_alt_sse_answers_every_scenario_with_a_json_array_of_whole_calls(scenario: Scenario) -> None:
    """The JSON array form holds whole calls only: a call the scenario cuts mid-arguments (``max_tokens_in_tool``)
    is left out, the answer stopping at ``MAX_TOKENS``, instead of the server failing to build the answer."""
    reply = planned(Gemini, scenario, sse=False)
    assert (reply.status, reply.content_type) == (200, "application/json")
    [chunk] = json.loads(body_of(reply))
    [candidate] = chunk["candidates"]
    assert candidate["content"]["role"] == "model"
    assert candidate["content"]["parts"][0] == {"text": answer_text(as_played(scenario), PROMPT)}
    calls = [p["functionCall"] for p in candidate["content"]["parts"] if "functionCall" in p]
    assert all(isinstance(c["args"], dict) and c["name"] for c in calls)
    whole = [c for c in scenario.tools if scenario.ending != "cut_tool" or c is not scenario.tools[-1]]
    assert [c["name"] for c in calls] == [c.name for c in whole]
    if scenario.ending == "cut_tool":
        assert candidate["finishReason"] == "MAX_TOKENS"


def test_the_oracle_refuses_an_event_with_a_required_field_missing() -> None:
    """The check can fail: an output item without its id, a chunk without its choices, a block start without
    its index, an error without its message are each refused by the model the tests above use."""
    added = next(o for _, o in _events(OpenAIResponses, SCENARIOS[0]) if o["type"] == "response.output_item.added")
    chunk = next(o for _, o in _events(OpenAIChat, SCENARIOS[0]))
    block = next(o for _, o in _events(AnthropicMessages, SCENARIOS[0]) if o["type"] == "content_block_start")
    error = next(o for _, o in _events(OpenAIChat, BY_SLUG["upstream_error"]) if "error" in o)
    for validate, obj in (
            (MODELS[OpenAIResponses][0], {**added, "item": {k: v for k, v in added["item"].items() if k != "id"}}),
            (MODELS[OpenAIChat][0], {k: v for k, v in chunk.items() if k != "choices"}),
            (MODELS[AnthropicMessages][0], {k: v for k, v in block.items() if k != "index"}),
            (MODELS[OpenAIChat][1], {"error": {k: v for k, v in error["error"].items() if k != "message"}})):
        with pytest.raises(pydantic.ValidationError):
            validate(obj)


# -- wire facts the models leave open (found by a sampled mutation run of upstream.py, 2026-12-06) ---------------

def test_every_responses_delta_and_done_event_names_an_item_and_part_added_before_it() -> None:
    """Each text, refusal and argument event points (``item_id``, ``output_index``, ``content_index``) at an
    output item, and a content part, that an earlier event added; a cut (``length``) answer lists its open
    items as ``incomplete`` in ``response.incomplete``."""
    for scenario in STREAMED:
        items: dict[str, int] = {}
        parts: set[tuple[str, int]] = set()
        for _, obj in _events(OpenAIResponses, scenario):
            kind = obj["type"]
            if kind == "response.output_item.added":
                items[obj["item"]["id"]] = obj["output_index"]
            elif kind == "response.content_part.added":
                parts.add((obj["item_id"], obj["content_index"]))
            elif kind.endswith((".delta", ".done")) and "item_id" in obj:
                assert items[obj["item_id"]] == obj["output_index"], (scenario.slug, kind)
                if "content_index" in obj:
                    assert (obj["item_id"], obj["content_index"]) in parts, (scenario.slug, kind)
            elif kind == "response.incomplete":
                assert [i["status"] for i in obj["response"]["output"]][-1:] == ["incomplete"], scenario.slug
        assert items, scenario.slug


def test_the_identity_fields_have_the_live_api_s_shape() -> None:
    """Responses' service tier as the live recordings send it (``auto`` until the answer ends, then the tier that
    served it), Chat's ``system_fingerprint`` (``fp_`` and ten hex digits), a model that
    is not a string replaced by the route's default model, and the choice's index 0 in the JSON body."""
    tiers = {o["type"]: o["response"]["service_tier"] for _, o in _events(OpenAIResponses, SCENARIOS[0])
             if "response" in o}
    assert tiers == {"response.created": "auto", "response.in_progress": "auto", "response.completed": "default"}
    chunks = [o for _, o in _events(OpenAIChat, SCENARIOS[0])]
    assert all(re.fullmatch(r"fp_[0-9a-f]{10}", c["system_fingerprint"]) for c in chunks)
    for enc_cls in MODELS:
        reply = planned(enc_cls, SCENARIOS[0], {**request_body(enc_cls), "model": 5})
        assert enc_cls.default_model.encode() in body_of(reply), enc_cls.route
    body = json.loads(body_of(planned(OpenAIChat, BY_SLUG["json_200"])))
    assert [c["index"] for c in body["choices"]] == [0]


@pytest.mark.parametrize("enc_cls", list(MODELS), ids=lambda c: c.route)
def test_a_whole_body_with_tool_calls_validates_and_holds_each_whole_call(enc_cls: type[RouteEncoder]) -> None:
    """The JSON body builder on answers with calls (no server path asks for one on these routes today, the
    ``json_200`` scenario has none; a scenario that adds calls gets a valid body): every call the answer
    finished, by name."""
    for scenario in (BY_SLUG["tool"], BY_SLUG["parallel_tools"], BY_SLUG["max_tokens_in_tool"]):
        body = json.loads(body_of(planned(enc_cls, scenario, sse=False)))
        MODELS[enc_cls][2](body)
        text = json.dumps(body)
        for call in scenario.tools:
            assert (f'"{call.name}"' in text) is (call.is_whole or enc_cls is not AnthropicMessages), scenario.slug


def test_split_chunking_cuts_between_cr_and_lf_and_inside_every_other_multibyte_character() -> None:
    """Every second multi-byte character after its first byte, every 4-byte one also after its third: the
    client meets characters split at several positions (``multibyte`` scenario)."""
    body = "a\r\né東ü😀x😀".encode()
    starts = [i for i, b in enumerate(body) if b >= 0xC0]  # é 東 ü 😀 😀
    assert split_points(body) == sorted({2, starts[0] + 1, starts[2] + 1, starts[3] + 3, starts[4] + 1,
                                         starts[4] + 3})


def test_the_config_document_names_each_route_s_default_model() -> None:
    doc = demo_config_document("embedded")
    assert {r["route"]: r["default_model"] for r in doc["routes"]} == {  # type: ignore[attr-defined]
        enc.route: enc.default_model for enc in (OpenAIChat, OpenAIResponses, AnthropicMessages, Gemini)}


#: The recordings of each vendor's own API (compatible servers, Azure, LM Studio, Groq, DeepSeek, OpenRouter, leave
#: fields out): path prefixes in ``../shared/fixtures``.
VENDOR_RECORDINGS = ("openai-python/", "anthropic-sdk-python/", "vercel-ai/openai__", "vercel-ai/anthropic__",
                     "vercel-ai/google__", "pydantic-ai/test_openai", "pydantic-ai/test_anthropic",
                     "pydantic-ai/test_google")


def _objects(obj: dict[str, Any]) -> list[tuple[str, object]]:
    """Where an event's keys are compared: the event (named by its ``type``, or ``chunk`` on data-only routes),
    and the object it wraps (``response``, ``message``, an Anthropic ``delta``) or its first choice / candidate."""
    kind = obj.get("type") if isinstance(obj.get("type"), str) else "chunk"
    out: list[tuple[str, object]] = [(kind, obj), (f"{kind}/response", obj.get("response")),
                                     (f"{kind}/message", obj.get("message")), (f"{kind}/delta", obj.get("delta"))]
    for key in ("choices", "candidates"):
        listed = obj.get(key)
        if isinstance(listed, list) and listed:
            out.append((f"{kind}/{key}[0]", listed[0]))
    return out


def _live_keys(route: str) -> dict[str, set[str]]:
    """Per place (:func:`_objects`) in the route's live vendor recordings (:data:`VENDOR_RECORDINGS`, read through
    ``tests.route_fixtures``): the keys every such object carries there."""
    from tests.route_fixtures import cases

    keys: dict[str, set[str]] = {}
    for case in cases():
        if case.route != route or not case.recording.path.startswith(VENDOR_RECORDINGS):
            continue
        for _, obj in _parsed(case.data):
            if not isinstance(obj, dict) or "error" in obj or obj.get("type") == "error":
                continue
            for where, value in _objects(obj):
                if isinstance(value, dict):
                    keys[where] = keys[where] & set(value) if where in keys else set(value)
    return keys


@pytest.mark.parametrize("enc_cls", [OpenAIChat, OpenAIResponses, AnthropicMessages, Gemini], ids=lambda c: c.route)
def test_each_event_carries_every_key_the_live_api_always_sends_in_that_place(enc_cls: type[RouteEncoder]) -> None:
    live = _live_keys(enc_cls.route)
    compared = 0
    for scenario in STREAMED:
        for _, obj in _events(enc_cls, scenario):
            if _is_error(enc_cls, obj):
                continue
            for where, value in _objects(obj):
                if where in live and isinstance(value, dict):
                    compared += 1
                    assert live[where] <= set(value), (scenario.slug, where, sorted(live[where] - set(value)))
    assert compared > 100, "the recordings and the upstream share places to compare"


def test_the_answer_s_usage_model_and_candidate_index_are_the_live_api_s() -> None:
    """The model the request names is echoed; the completed Responses answer carries its usage (the total the sum
    of its parts); Gemini's candidate is index 0, as in every live recording."""
    completed = [o for _, o in _events(OpenAIResponses, SCENARIOS[0]) if o["type"] == "response.completed"]
    usage = completed[0]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert usage["input_tokens_details"] == {"cached_tokens": 0}  # (the demo caches no prompt)
    for enc_cls in MODELS:
        assert b'"demo-model"' in body_of(planned(enc_cls, SCENARIOS[0])), enc_cls.route
    chunks = _parsed(body_of(planned(Gemini, SCENARIOS[0], {**request_body(Gemini), "model": "ignored"})))
    assert chunks and all(c["modelVersion"] == GEMINI_MODEL and [x["index"] for x in c["candidates"]] == [0]
                          for _, c in chunks)


def test_batch_chunking_writes_the_events_in_batches_of_a_fixed_size() -> None:
    """The ``big`` scenario's events go out :data:`BATCH_EVENTS` to a write (the page meets many events per read)."""
    counts = [data.count(b"\n\n") for _, data in planned(OpenAIChat, BY_SLUG["big"]).writes]
    assert len(counts) > 2 and set(counts[:-1]) == {BATCH_EVENTS} and 0 < counts[-1] <= BATCH_EVENTS
