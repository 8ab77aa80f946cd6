"""SSE-layer throughput (UTF-8 decode + SSE parse): webclient against its Python peers, in one run.

Every contender turns the same response bytes, fed in ``--chunk``-byte transport chunks, into
dispatched events (event type, data), which the timed run consumes as a streaming client does: each
event is counted when it arrives and then dropped (before timing, each peer's full event list is
compared with webclient's, so all contenders provably do the same work):

- ``webclient``: ``EventStreamParser.feed_tuples`` (strict UTF-8, WHATWG parsing, default ceilings), each
  event a plain ``(type, data, last_event_id)`` tuple: what the session hands its route, so what the
  SSE layer delivers in the pipeline (the target is assessed on it);
- ``webclient/SSEEvent``: ``EventStreamParser.feed``, the same events wrapped as ``SSEEvent`` objects
  (named fields) for callers of the parser itself; its ratio to httpx-sse is printed as well;
- ``httpx-sse``: what httpx-sse 0.4.3's ``EventSource.iter_sse`` does over ``response.iter_text()``:
  httpx's incremental ``TextDecoder``, httpx-sse's ``SSELineDecoder``, ``line.rstrip("\\n")`` and
  ``SSEDecoder.decode`` per line;
- ``httpx-sse/LineDecoder``: the same ``SSEDecoder`` fed by httpx's own ``LineDecoder`` (what
  httpx-sse did before 0.4.2 and what this benchmark measured before; often the faster of the two);
- ``openai``: openai-python's ``SSEDecoder.iter_bytes`` over the chunk iterator.

The ratio that counts is against the *faster* httpx-sse variant of the same repetition.

Stream shapes (~``--mb`` MB each; the generated ones are seeded, so every run sees the same bytes):

data-only (one ``data:`` line per event, the OpenAI Chat and Gemini shape)
  ``chat``       chat.completion.chunk envelopes: short text deltas (see below), tool calls
                 whose arguments stream in ~17-character fragments, a usage chunk and ``[DONE]``.
  ``gemini``     ``streamGenerateContent?alt=sse`` envelopes with CRLF framing, as Google sends
                 them, each candidate carrying a short text part.
typed (``event: NAME`` + one ``data:`` line, the Anthropic Messages and OpenAI Responses shape)
  ``anthropic``  message_start, text blocks of ~300 short text_delta events, tool_use blocks of
                 ~17-character input_json_delta fragments, pings, message_delta, message_stop.
  ``responses``  response.created ... output_text.delta / function_call_arguments.delta events
                 with sequence numbers ... response.completed.
recorded (real recordings from ``../shared/fixtures``, concatenated and repeated to size)
  ``rec-data``   the data-only recordings (openai-python, pydantic-ai chat/groq/google/openrouter).
  ``rec-typed``  the typed recordings (anthropic-sdk-python, pydantic-ai Anthropic and Responses).

Text deltas are 1-3 tokens, in blocks (answer paragraphs) each written in one script: English
50%, accented European 10%, Chinese 20%, Japanese 10%, Korean 5%, Cyrillic 5%; 3% of deltas carry
an emoji (some outside the BMP, some composed). JSON is written with ``ensure_ascii=False``, as the
providers send it, so about half of all 1 KiB chunks decode to 2- or 4-byte-per-character strings.

Each repetition runs every contender once on every shape, in rotating order; the figure reported is
the median over ``--runs`` repetitions (after one warm-up each), with the garbage collector paused
during each timed run as ``timeit`` does. Each run is timed in CPU time of this process
(``time.process_time``, the default ``--clock cpu``): on the shared 2-core machine wall time also
counts the time other engineers' tests hold the CPU, which lands on whichever contender is running
and scatters the ratios; on a quiet machine the two clocks agree (``--clock wall`` to check).

``--baseline DIR`` adds one more contender, ``webclient@base``: the ``webclient`` package found in
``DIR`` (for example an older commit's, extracted with
``git archive COMMIT webclient | tar -x -C DIR``), so that a change is measured before and after in
the same run, on the same bytes, against the same peers.

Usage: python build_scripts/bench_sse.py [--mb 5] [--chunk 1024] [--runs 9] [--clock cpu|wall] [--shape NAME ...]
       [--baseline DIR]
Peers are benchmark-only dependencies (``pip install -e '.[bench]'``, which ``setup_env.sh`` does).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT.parent / "shared" / "fixtures"

TARGET_RATIO = 2.0

# -- realistic content -------------------------------------------------------------------------

#: Token-sized pieces of model text per script. A text block (one answer paragraph) is written in
#: one script, as model answers are, and any block may carry emoji (see ``_Text``).
SCRIPTS = {
    "english": [" the", " of", " and", " to", " a", " in", " is", " that", " for", " it", " with", " as",
                " on", " stream", " parser", " event", " model", " response", " token", ".", ",", ":", "\n",
                "\n\n", " -", " **", "**", " `", "`", " (", ")", " 1", "2", "0", "%"],
    "european": [" café", " naïve", " über", " São", " Paulo", " façade", " Ñandú", " Größe", " déjà",
                 " vu", " señor", " ørsted", ",", ".", " «", "»", " —"],
    "chinese": ["你好", "\uff0c", "世界", "。", "我们", "的", "模型", "流式", "输出", "数据", "解析", "事件", "是",
                "一个", "在", "中", "\uff08", "\uff09", "\uff1a", "\n"],
    "japanese": ["日本語", "の", "テキスト", "です", "。", "ストリーム", "を", "解析", "します", "、", "モデル",
                 "が", "出力", "\n"],
    "korean": ["한국어", " 텍스트", "를", " 스트림", "으로", " 출력", "합니다", ".", " 모델", "이", "\n"],
    "cyrillic": [" Привет", " мир", ",", " это", " поток", " событий", " модели", ".", "\n"],
}
#: Relative frequency of each script's blocks.
SCRIPT_WEIGHTS = {"english": 50, "european": 10, "chinese": 20, "japanese": 10, "korean": 5, "cyrillic": 5}
#: Emoji, some outside the BMP (which makes CPython store the whole decoded chunk in 4 bytes per
#: character) and some composed (skin tone, ZWJ sequence).
EMOJI = [" 😀", " 🚀", " ✅", " 👍🏽", " 🎉", " ❤️", " 👩‍💻", " ⚡"]
#: Share of text deltas that carry an emoji.
EMOJI_RATE = 0.03
#: Tool arguments that the model streams, as one JSON text each.
TOOL_ARGUMENTS = [
    {"location": "San Francisco, CA", "unit": "celsius", "days": 3},
    {"query": "最新的流式解析器基准 benchmark results 2025", "max_results": 10, "lang": "zh"},
    {"path": "src/webclient/_sse.py", "content": "def feed(self, text):\n    return []\n", "mode": "w"},
    {"city": "東京", "date": "2025-04-01", "notes": "café ☕ at 10:00 — bring 📎 docs"},
]


class _Text:
    """Short text deltas (1-3 tokens, as models stream them) in blocks of one script each."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tokens = SCRIPTS["english"]

    def new_block(self) -> None:
        """Start a block of text in a script drawn by ``SCRIPT_WEIGHTS``."""
        script = self.rng.choices(list(SCRIPT_WEIGHTS), weights=list(SCRIPT_WEIGHTS.values()))[0]
        self.tokens = SCRIPTS[script]

    def delta(self) -> str:
        rng = self.rng
        text = "".join(rng.choice(self.tokens) for _ in range(rng.randint(1, 3)))
        return text + rng.choice(EMOJI) if rng.random() < EMOJI_RATE else text


def _fragments(rng: random.Random, text: str) -> list[str]:
    """``text`` cut into fragments of about 17 characters (12-22), as tool inputs stream."""
    out, i = [], 0
    while i < len(text):
        n = rng.randint(12, 22)
        out.append(text[i : i + n])
        i += n
    return out


def _json(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


class _Writer:
    """Collects SSE frames up to a byte budget."""

    def __init__(self, target: int, eol: str = "\n") -> None:
        self.parts: list[str] = []
        self.size = 0
        self.target = target
        self.eol = eol

    @property
    def full(self) -> bool:
        return self.size >= self.target

    def frame(self, payload: object, event: str | None = None) -> None:
        eol = self.eol
        data = payload if isinstance(payload, str) else _json(payload)
        text = (f"event: {event}{eol}" if event else "") + f"data: {data}{eol}{eol}"
        self.parts.append(text)
        self.size += len(text.encode())

    def body(self) -> bytes:
        return "".join(self.parts).encode()


# -- generated shapes --------------------------------------------------------------------------


def make_chat(target: int, rng: random.Random) -> bytes:
    head = {"id": "chatcmpl-AbC123xyz", "object": "chat.completion.chunk", "created": 1733000000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_5f20662549"}
    w = _Writer(target)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        w.frame({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    chunk({"role": "assistant", "content": "", "refusal": None})
    text = _Text(rng)
    call = 0
    while not w.full:
        text.new_block()
        for _ in range(rng.randint(100, 400)):
            chunk({"content": text.delta()})
        args = _json(rng.choice(TOOL_ARGUMENTS))
        chunk({"tool_calls": [{"index": call, "id": f"call_{call:08d}", "type": "function",
                               "function": {"name": "get_weather", "arguments": ""}}]})
        for piece in _fragments(rng, args):
            chunk({"tool_calls": [{"index": call, "function": {"arguments": piece}}]})
        call += 1
    chunk({}, "tool_calls")
    w.frame({**head, "choices": [], "usage": {"prompt_tokens": 52, "completion_tokens": 9000, "total_tokens": 9052}})
    w.frame("[DONE]")
    return w.body()


def make_gemini(target: int, rng: random.Random) -> bytes:
    w = _Writer(target, eol="\r\n")
    deltas = _Text(rng)
    n = 0
    while not w.full:
        n += 1
        if n % 50 == 1:
            deltas.new_block()
        text = "".join(deltas.delta() for _ in range(rng.randint(1, 4)))
        w.frame({"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}],
                 "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": n, "totalTokenCount": 9 + n},
                 "modelVersion": "gemini-2.5-flash", "responseId": "mFSaaPe5LbGz1MkP0Y2q8Qs"})
    w.frame({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP",
                             "index": 0}], "modelVersion": "gemini-2.5-flash"})
    return w.body()


def make_anthropic(target: int, rng: random.Random) -> bytes:
    w = _Writer(target)
    w.frame({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5-20250929", "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 472, "output_tokens": 2}}}, "message_start")
    text = _Text(rng)
    index = 0
    while not w.full:
        text.new_block()
        w.frame({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                "content_block_start")
        w.frame({"type": "ping"}, "ping")
        for _ in range(300):
            w.frame({"type": "content_block_delta", "index": index,
                     "delta": {"type": "text_delta", "text": text.delta()}}, "content_block_delta")
        w.frame({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
        w.frame({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": f"toolu_01T1x1fJ34qAmk2tNTrN7Up{index % 10}", "name": "get_weather",
            "input": {}}}, "content_block_start")
        for piece in ["", *_fragments(rng, _json(rng.choice(TOOL_ARGUMENTS)))]:
            w.frame({"type": "content_block_delta", "index": index,
                     "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta")
        w.frame({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    w.frame({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 9000}}, "message_delta")
    w.frame({"type": "message_stop"}, "message_stop")
    return w.body()


def make_responses(target: int, rng: random.Random) -> bytes:
    w = _Writer(target)
    seq = 0

    def event(name: str, **fields: object) -> None:
        nonlocal seq
        w.frame({"type": name, "sequence_number": seq, **fields}, name)
        seq += 1

    response = {"id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", "object": "response",
                "created_at": 1741476542, "status": "in_progress", "model": "gpt-4.1-2025-04-14", "output": []}
    event("response.created", response=response)
    event("response.in_progress", response=response)
    text = _Text(rng)
    out = 0
    while not w.full:
        text.new_block()
        item = f"msg_67ccd2bf17f0819081ff3bb2cf6508e6{out:04d}"
        event("response.output_item.added", output_index=out, item={"id": item, "type": "message",
                                                                    "status": "in_progress", "role": "assistant",
                                                                    "content": []})
        event("response.content_part.added", item_id=item, output_index=out, content_index=0,
              part={"type": "output_text", "text": "", "annotations": []})
        deltas = [text.delta() for _ in range(rng.randint(100, 400))]
        for delta in deltas:
            event("response.output_text.delta", item_id=item, output_index=out, content_index=0,
                  delta=delta, logprobs=[])
        whole = "".join(deltas)
        event("response.output_text.done", item_id=item, output_index=out, content_index=0, text=whole,
              logprobs=[])
        part = {"type": "output_text", "text": whole, "annotations": []}
        event("response.content_part.done", item_id=item, output_index=out, content_index=0, part=part)
        event("response.output_item.done", output_index=out, item={"id": item, "type": "message",
                                                                   "status": "completed", "role": "assistant",
                                                                   "content": [part]})
        out += 1
        call = f"fc_67ccd3acc8108190a1d8a8d3b9ec45{out:04d}"
        event("response.output_item.added", output_index=out, item={
            "id": call, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": f"call_{out:08d}", "name": "get_weather"})
        args = _json(rng.choice(TOOL_ARGUMENTS))
        for piece in _fragments(rng, args):
            event("response.function_call_arguments.delta", item_id=call, output_index=out, delta=piece)
        event("response.function_call_arguments.done", item_id=call, output_index=out, arguments=args)
        event("response.output_item.done", output_index=out, item={
            "id": call, "type": "function_call", "status": "completed", "arguments": args,
            "call_id": f"call_{out:08d}", "name": "get_weather"})
        out += 1
    event("response.completed", response={**response, "status": "completed"})
    return w.body()


# -- recorded shapes ---------------------------------------------------------------------------


def recordings(typed: bool) -> list[bytes]:
    """The raw SSE recordings in ``../shared/fixtures``: typed ones (with ``event:`` lines) or the
    data-only ones. Each is returned ending in a blank line so that concatenations stay separate."""
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix not in (".sse", ".bin", ".txt") or path.name.endswith(".chunks.txt"):
            continue
        body = path.read_bytes()
        if not body.lstrip().startswith((b"data:", b"event:", b":")):
            continue
        if (b"\nevent:" in body or body.startswith(b"event:")) != typed:
            continue
        found.append(body.rstrip(b"\r\n") + b"\n\n")
    if not found:
        raise SystemExit(f"no recordings found under {FIXTURES}")
    return found


def make_recorded(target: int, typed: bool) -> bytes:
    bodies = recordings(typed)
    parts: list[bytes] = []
    size = 0
    while size < target:
        for body in bodies:
            parts.append(body)
            size += len(body)
    return b"".join(parts)


SHAPES: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "chat": ("data-only", lambda n: make_chat(n, random.Random(1))),
    "gemini": ("data-only", lambda n: make_gemini(n, random.Random(2))),
    "anthropic": ("typed", lambda n: make_anthropic(n, random.Random(3))),
    "responses": ("typed", lambda n: make_responses(n, random.Random(4))),
    "rec-data": ("data-only", lambda n: make_recorded(n, typed=False)),
    "rec-typed": ("typed", lambda n: make_recorded(n, typed=True)),
}

# -- contenders --------------------------------------------------------------------------------

Events = list[tuple[str, str]]


def webclient_runner(pipeline: Any, tuples: bool = True) -> Callable[[Iterable[bytes]], int]:
    """A contender that feeds the chunks to ``pipeline`` (an ``EventStreamParser`` class): with
    ``tuples``, through ``feed_tuples`` (the session's call; a package older than it: ``feed``)."""
    with_tuples = tuples and hasattr(pipeline, "feed_tuples")

    def run(chunks: Iterable[bytes]) -> int:
        stream = pipeline()
        feed = stream.feed_tuples if with_tuples else stream.feed
        n = 0
        for chunk in chunks:
            n += len(feed(chunk))
        n += len(stream.close_tuples() if with_tuples else stream.close())
        assert stream.failure is None
        return n

    return run


def load_baseline(directory: Path) -> Any:
    """The ``EventStreamParser`` of the ``webclient`` package in ``directory``, imported under another
    name so that it runs next to this checkout's."""
    import importlib.util

    init = directory / "webclient" / "__init__.py"
    if not init.is_file():
        raise SystemExit(f"no webclient package in {directory}")
    spec = importlib.util.spec_from_file_location("webclient_base", init,
                                                  submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["webclient_base"] = module
    spec.loader.exec_module(module)
    return module.EventStreamParser


def run_webclient(chunks: Iterable[bytes]) -> int:
    from webclient import EventStreamParser

    return webclient_runner(EventStreamParser)(chunks)


def run_webclient_events(chunks: Iterable[bytes]) -> int:
    from webclient import EventStreamParser

    return webclient_runner(EventStreamParser, tuples=False)(chunks)


def run_httpx_sse(chunks: Iterable[bytes]) -> int:
    from httpx._decoders import TextDecoder
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text = TextDecoder()
    lines = SSELineDecoder()
    sse = SSEDecoder()
    n = 0
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            if sse.decode(line.rstrip("\n")) is not None:
                n += 1
    for line in lines.decode(text.flush()) + lines.flush():
        if sse.decode(line.rstrip("\n")) is not None:
            n += 1
    return n


def run_httpx_sse_linedecoder(chunks: Iterable[bytes]) -> int:
    from httpx._decoders import LineDecoder, TextDecoder
    from httpx_sse._decoders import SSEDecoder

    text = TextDecoder()
    lines = LineDecoder()
    sse = SSEDecoder()
    n = 0
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            if sse.decode(line) is not None:
                n += 1
    for line in lines.decode(text.flush()) + lines.flush():
        if sse.decode(line) is not None:
            n += 1
    return n


def events_httpx_sse(chunks: Iterable[bytes], line_decoder: Callable[[], object], strip: bool) -> Events:
    """The events httpx-sse produces (untimed; for the same-work check)."""
    from httpx._decoders import TextDecoder
    from httpx_sse._decoders import SSEDecoder

    text = TextDecoder()
    lines: Any = line_decoder()
    sse = SSEDecoder()
    events = []
    for chunk in [*chunks, None]:
        decoded = lines.decode(text.decode(chunk)) if chunk is not None else lines.decode(text.flush()) + lines.flush()
        for line in decoded:
            event = sse.decode(line.rstrip("\n") if strip else line)
            if event is not None:
                events.append((event.event, event.data))
    return events


def run_openai(chunks: Iterable[bytes]) -> int:
    from openai._streaming import SSEDecoder

    n = 0
    for _ in SSEDecoder().iter_bytes(iter(chunks)):
        n += 1
    return n


def events_openai(chunks: Iterable[bytes]) -> Events:
    from openai._streaming import SSEDecoder

    return [(e.event or "message", e.data) for e in SSEDecoder().iter_bytes(iter(chunks))]


def events_webclient(chunks: Iterable[bytes]) -> Events:
    from webclient import EventStreamParser, SSEEvent

    stream = EventStreamParser()
    items = [item for chunk in chunks for item in stream.feed(chunk)] + stream.close()
    events = [(e.type, e.data) for e in items if isinstance(e, SSEEvent)]
    tuples = EventStreamParser()  # the session's call gives the same events as plain tuples
    raw = [item for chunk in chunks for item in tuples.feed_tuples(chunk)] + tuples.close_tuples()
    assert [(e[0], e[1]) for e in raw if e.__class__ is tuple] == events and len(raw) == len(items)
    return events


CONTENDERS: dict[str, Callable[[list[bytes]], int]] = {
    "webclient": run_webclient,
    "webclient/SSEEvent": run_webclient_events,
    "httpx-sse": run_httpx_sse,
    "httpx-sse/LineDecoder": run_httpx_sse_linedecoder,
    "openai": run_openai,
}
HTTPX_SSE = ("httpx-sse", "httpx-sse/LineDecoder")


def check_same_work(name: str, chunks: list[bytes]) -> int:
    """Every contender must produce webclient's events (type, data) for this stream, and count them."""
    from httpx._decoders import LineDecoder
    from httpx_sse._decoders import SSELineDecoder

    reference = events_webclient(chunks)
    peers = {
        "httpx-sse": events_httpx_sse(chunks, SSELineDecoder, True),
        "httpx-sse/LineDecoder": events_httpx_sse(chunks, LineDecoder, False),
        "openai": events_openai(chunks),
    }
    for contender, got in peers.items():
        # httpx-sse names typeless events "message" like webclient; openai leaves them None.
        got = [("message" if t in (None, "") else t, d) for t, d in got]
        assert got == reference, f"{contender} and webclient disagree on {name}"
    for contender, fn in CONTENDERS.items():
        assert fn(chunks) == len(reference), f"{contender} counts differently on {name}"
    return len(reference)


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def timed(fn: Callable[[list[bytes]], int], chunks: list[bytes],
          clock: Callable[[], float] = time.process_time) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = clock()
        fn(chunks)
        return clock() - t0
    finally:
        gc.enable()


def chunked(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0, help="stream size per shape (default 5)")
    ap.add_argument("--chunk", type=int, default=1024, help="transport chunk size in bytes (default 1024)")
    ap.add_argument("--runs", type=int, default=9, help="timed repetitions; the median is reported (default 9)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                    help="cpu: CPU time of this process (default); wall: elapsed time")
    ap.add_argument("--shape", action="append", choices=sorted(SHAPES), help="shape(s) to run (default: all)")
    ap.add_argument("--baseline", type=Path, help="a directory holding another webclient package to time as well")
    args = ap.parse_args()
    if args.baseline:
        CONTENDERS["webclient@base"] = webclient_runner(load_baseline(args.baseline.resolve()))
    names = args.shape or list(SHAPES)
    target = int(args.mb * 1_000_000)
    streams = {}
    for name in names:
        body = SHAPES[name][1](target)
        chunks = chunked(body, args.chunk)
        events = check_same_work(name, chunks)
        streams[name] = chunks
        print(f"{name:10s} {SHAPES[name][0]:9s} {len(body) / 1e6:5.2f} MB  {events:6d} events"
              f"  {len(body) / events:5.0f} B/event  {len(chunks)} chunks of {args.chunk} B")
    times: dict[tuple[str, str], list[float]] = {(s, c): [] for s in names for c in CONTENDERS}
    order = list(CONTENDERS)
    for name in names:
        for contender in order:
            CONTENDERS[contender](streams[name])  # warm-up
    for rep in range(args.runs):
        rotated = order[rep % len(order) :] + order[: rep % len(order)]
        for name in names:
            for contender in rotated:
                times[name, contender].append(timed(CONTENDERS[contender], streams[name], CLOCKS[args.clock]))
    print(f"\nmedian of {args.runs} runs, ms of {args.clock} time (ratio = peer time / webclient time; "
          f"target >= {TARGET_RATIO:.2f}x the faster httpx-sse variant)")
    base = "webclient@base" in CONTENDERS
    header = (f"{'shape':10s} {'kind':9s}" + "".join(f"{c:>23s}" for c in CONTENDERS) + f"{'vs httpx-sse':>14s}"
              + f"{'(per-run range)':>17s}" + f"{'SSEEvent vs httpx-sse':>23s}"
              + (f"{'base vs httpx-sse':>19s}" if base else ""))
    print(header)
    worst: dict[str, float] = {}
    for name in names:
        med = {c: statistics.median(times[name, c]) for c in CONTENDERS}
        ours = med["webclient"]
        cells = [f"{med['webclient'] * 1e3:21.1f}  "]
        cells += [f"{med[c] * 1e3:9.1f} ({med[c] / ours:5.2f}x)  " for c in CONTENDERS if c != "webclient"]
        ratio = min(med[c] for c in HTTPX_SSE) / ours
        # The same ratio within each repetition (peers and webclient timed back to back): its spread.
        per_run = [min(times[name, c][i] for c in HTTPX_SSE) / times[name, "webclient"][i] for i in range(args.runs)]
        kind = SHAPES[name][0]
        worst[kind] = min(worst.get(kind, ratio), ratio)
        line = (f"{name:10s} {kind:9s}" + "".join(f"{c:>23s}" for c in cells) + f"{ratio:13.2f}x"
                + f"{min(per_run):9.2f}-{max(per_run):.2f}x"
                + f"{min(med[c] for c in HTTPX_SSE) / med['webclient/SSEEvent']:22.2f}x")
        if base:
            line += f"{min(med[c] for c in HTTPX_SSE) / med['webclient@base']:17.2f}x"
        print(line)
    for kind, ratio in worst.items():
        verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
        print(f"{kind}: lowest ratio to httpx-sse {ratio:.2f}x ({verdict} the {TARGET_RATIO:.2f}x target)")


if __name__ == "__main__":
    main()
