"""How long ``python -m webclient check`` takes on a ~100 KB capture, per check and in total.

Target (issue 6): a 100 KB capture completes *all* checks in under a minute on a 2-core machine.
The engine is single-threaded, so one core does the work.

Workloads: one generated capture of about ``--kb`` KiB per route, shaped like the real thing and
carrying everything the checks look for: raw multi-byte text (about one word in eight), a tool
call whose arguments stream in fragments, usage, the route's terminal event (Gemini with CRLF
separators); plus, when ``../shared/fixtures`` is present, the 100 KB real recording
``vercel-ai/openai__openai-text.chunks.txt`` framed as vercel's harness frames it.

For each capture the full default battery runs (``check_capture`` with the default
``CheckConfig``, default ceilings) on sessions that count the bytes fed to them. Printed per
check: cases, seconds, cases/s, MB fed and MB/s; per capture: the total against the 60 s
target, and in the same run the floor: one whole-capture session's throughput (MB/s), with the
checker's overall MB/s as a ratio of it (the cost of many small sessions over one big one).

Exit status 1 when a capture misses the target or a check fails.

Usage: python build_scripts/bench_check.py [--kb 100] [--routes openai-chat,gemini] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webclient import StreamSession  # noqa: E402
from webclient._check import CHECKS, CheckConfig, CheckedSession, check_capture  # noqa: E402

TARGET_SECONDS = 60.0
WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".",
         " Grüße", " 世界", " naïve", " 🎉", " café", "\n"]
ARGS = {"city": "Zürich", "days": 3, "notes": "naïve café " * 40, "tags": ["a", "b", "ü"] * 10}


def _words(count: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(count)]


def _fragments(text: str, size: int = 17) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _frame(items: list[tuple[str | None, Any]], sep: str = "\n") -> bytes:
    out = []
    for name, payload in items:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        out.append((f"event: {name}{sep}" if name else "") + f"data: {data}{sep}{sep}")
    return "".join(out).encode("utf-8")


def chat(words: int) -> bytes:
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1730000000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])

    items: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    items += [(None, chunk({"content": w})) for w in _words(words)]
    items.append((None, chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                               "function": {"name": "weather", "arguments": ""}}]})))
    items += [(None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}))
              for f in _fragments(json.dumps(ARGS, ensure_ascii=False))]
    items.append((None, chunk({}, "tool_calls")))
    items.append((None, dict(head, choices=[], usage={"prompt_tokens": 9, "completion_tokens": 99})))
    items.append((None, "[DONE]"))
    return _frame(items)


def anthropic(words: int) -> bytes:
    def ev(payload: dict[str, Any]) -> tuple[str, Any]:
        return payload["type"], payload

    items = [ev({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                      "model": "claude", "content": [], "stop_reason": None,
                                                      "usage": {"input_tokens": 9, "output_tokens": 1}}}),
             ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    items += [ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}})
              for w in _words(words)]
    items.append(ev({"type": "content_block_stop", "index": 0}))
    items.append(ev({"type": "content_block_start", "index": 1,
                     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}))
    items += [ev({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": f}})
              for f in _fragments(json.dumps(ARGS, ensure_ascii=False))]
    items.append(ev({"type": "content_block_stop", "index": 1}))
    items.append(ev({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 99}}))
    items.append(ev({"type": "message_stop"}))
    return _frame(items)


def responses(words: int) -> bytes:
    words = _words(words)
    text = "".join(words)
    args = json.dumps(ARGS, ensure_ascii=False)
    msg = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": args,
            "status": "completed"}
    seq = iter(range(1_000_000))

    def ev(payload: dict[str, Any]) -> tuple[str, Any]:
        return payload["type"], dict(payload, sequence_number=next(seq))

    items = [ev({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
             ev({"type": "response.output_item.added", "output_index": 0,
                 "item": dict(msg, status="in_progress", content=[])}),
             ev({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                 "part": {"type": "output_text", "text": ""}})]
    items += [ev({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                  "delta": w}) for w in words]
    items += [ev({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                  "text": text}),
              ev({"type": "response.output_item.done", "output_index": 0, "item": msg}),
              ev({"type": "response.output_item.added", "output_index": 1,
                  "item": dict(call, arguments="", status="in_progress")})]
    items += [ev({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1,
                  "delta": f}) for f in _fragments(args)]
    items += [ev({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1,
                  "arguments": args}),
              ev({"type": "response.output_item.done", "output_index": 1, "item": call}),
              ev({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                             "output": [msg, call],
                                                             "usage": {"input_tokens": 9, "output_tokens": 99}}})]
    return _frame(items)


def gemini(words: int) -> bytes:
    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand], "modelVersion": "gemini-2.5-pro", "responseId": "r1"}

    items: list[tuple[str | None, Any]] = [(None, chunk([{"text": w}])) for w in _words(words)]
    items.append((None, chunk([{"functionCall": {"name": "weather", "args": ARGS}}], "STOP")))
    return _frame(items, "\r\n")


def sized(route: str, target: int) -> bytes:
    """The route's generated capture with its word count scaled so it is ``target`` bytes or just over."""
    make = GENERATORS[route]
    words = 100
    for _ in range(3):
        data = make(words)
        words = max(1, round(words * target / len(data)))
    while len(data) < target:
        words += 1
        data = make(words)
    return data


GENERATORS = {"openai-chat": chat, "anthropic-messages": anthropic, "openai-responses": responses, "gemini": gemini}


class Counted(StreamSession):
    """A real session that counts the bytes fed to it (class-level, read by the benchmark)."""

    fed = 0

    def feed(self, data: bytes) -> list[Any]:
        Counted.fed += len(data)
        return super().feed(data)


def floor_mbps(route: str, data: bytes, runs: int = 20) -> float:
    """Throughput of one whole-capture session (best of ``runs``)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        session = StreamSession(route)
        session.open(200, "text/event-stream")
        session.feed(data)
        session.finish()
        best = min(best, time.perf_counter() - start)
    return len(data) / best / 1e6


def bench(name: str, route: str, data: bytes, seed: int) -> bool:
    per: dict[str, list[float]] = {c: [0.0, 0.0] for c in CHECKS}  # seconds, bytes fed
    state = {"check": "whole", "t": time.perf_counter(), "fed": 0}

    def progress(check: str, done: int, total: int) -> None:
        now = time.perf_counter()
        per[check][0] += now - state["t"]  # type: ignore[operator]
        per[check][1] += Counted.fed - state["fed"]  # type: ignore[operator]
        state["t"], state["fed"] = now, Counted.fed

    def factory() -> CheckedSession:
        return Counted(route)

    Counted.fed = 0
    start = time.perf_counter()
    report = check_capture(data, factory, route=route, config=CheckConfig(seed=seed), progress=progress)
    total = time.perf_counter() - start
    floor = floor_mbps(route, data)
    print(f"\n{name}: route {route}, {len(data)} bytes, {report.events} events; "
          f"whole capture {report.whole_outcome}")
    print(f"  {'check':<11}{'cases':>8}{'seconds':>10}{'cases/s':>10}{'MB fed':>10}{'MB/s':>8}  failures")
    cases = 0
    for result in report.checks:
        seconds, fed = per[result.name]
        cases += result.cases
        rate = result.cases / seconds if seconds else float("inf")
        mbps = fed / seconds / 1e6 if seconds else float("inf")
        print(f"  {result.name:<11}{result.cases:>8}{seconds:>10.2f}{rate:>10.0f}{fed / 1e6:>10.1f}{mbps:>8.1f}  "
              f"{result.failures}")
    overall = Counted.fed / total / 1e6
    ok = total < TARGET_SECONDS and report.passed
    print(f"  {'total':<11}{cases:>8}{total:>10.2f}{cases / total:>10.0f}{Counted.fed / 1e6:>10.1f}{overall:>8.1f}"
          f"  -> {'OK' if ok else 'MISSED'} (target < {TARGET_SECONDS:.0f} s, every check passing)")
    print(f"  floor (one whole-capture session, same run): {floor:.1f} MB/s; checker / floor = {overall / floor:.2f}x")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=100, help="size of each generated capture in KiB (default 100)")
    parser.add_argument("--routes", default=",".join(GENERATORS), help="comma-separated routes to generate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ok = True
    for route in args.routes.split(","):
        ok = bench(f"generated {route}", route, sized(route, args.kb * 1024), args.seed) and ok
    recording = ROOT.parent / "shared" / "fixtures" / "vercel-ai" / "openai__openai-text.chunks.txt"
    if recording.exists():
        lines = [line for line in recording.read_bytes().split(b"\n") if line.strip()]
        data = b"".join(b"data: " + line + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
        ok = bench("recording vercel-ai/openai__openai-text", "openai-chat", data, args.seed) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
