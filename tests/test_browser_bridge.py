"""webclient.browser inside Pyodide under Node: JS ReadableStreams cut at awkward places, and a real local server.

One Node process (tests/bridge_runner.mjs) boots Pyodide 314.0.7 from the pinned npm package, installs the wheel
``build_scripts/pyodide_tools.py wheel`` builds from this tree, and runs the coroutines of tests/bridge_cases.py on
request. Node 20's own fetch talks to tests/sse_test_server.py on 127.0.0.1, so aborts and cancellations travel
over a real socket and the server reports whether it saw the connection close.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bridge_streams import (
    CHAT,
    CHAT_HEAD,
    COMMENT,
    ID_CHAT_EVENTS,
    ID_CHAT_PARTS,
    REASONING,
    TEXT_PARTS,
    TOOL,
    UNKNOWN_ITEM,
    UNKNOWN_TOOL,
    chunk,
    comparable,
    cut_lists,
    expected,
    frame,
)
from tests.resume_streams import (
    USAGE,
    USAGE_ID,
    USAGE_K,
    USAGE_N,
    answer_view,
    cut_inside,
    events_of,
    from_event,
    last_number_before,
    numbered,
    resume_path,
    uninterrupted_view,
)
from tests.route_fixtures import merge_deltas
from tests.sse_test_server import Abort, Pause, Script, Send, SSETestServer, Stall, sse_script

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parents[1]
TOOL_SCRIPT = ROOT / "build_scripts" / "pyodide_tools.py"
RUNNER = ROOT / "tests" / "bridge_runner.mjs"
PYODIDE_DIR = ROOT / "build" / "node" / "node_modules" / "pyodide"
BOOT_TIMEOUT_S = 180
CALL_TIMEOUT_S = 120
#: Generous bound on how long after a stop the server must notice the closed connection.
DISCONNECT_WITHIN_S = 10.0


def pyodide_node_flags(node: str) -> list[str]:
    """build_scripts/pyodide_tools.py's V8 flags for a Node running Pyodide (imported: the module is host-only)."""
    sys.path.insert(0, str(ROOT / "build_scripts"))
    try:
        import pyodide_tools
    finally:
        sys.path.pop(0)
    flags: list[str] = pyodide_tools.pyodide_node_flags(node)
    return flags


class PyodideNode:
    """The long-lived runner: one JSON command per line in, one JSON answer per line out. ``stress``: more V8 flags
    for this node, after the ones every Node running Pyodide gets here."""

    def __init__(self, stress: tuple[str, ...] = ()) -> None:
        for step in ("fetch", "wheel"):
            proc = subprocess.run([sys.executable, str(TOOL_SCRIPT), step], cwd=ROOT, capture_output=True,
                                  text=True, timeout=600, check=False)
            assert proc.returncode == 0, f"pyodide_tools.py {step} failed:\n{proc.stderr}"
        wheels = sorted((ROOT / "build" / "dist").glob("webclient-*.whl"))
        assert len(wheels) == 1, wheels
        node = os.environ.get("NODE") or shutil.which("node")
        assert node, "node (>= 20) is required for the Pyodide bridge tests"
        self._proc = subprocess.Popen(
            [node, *pyodide_node_flags(node), *stress, str(RUNNER), "--pyodide", str(PYODIDE_DIR),
             "--wheel", str(wheels[0]), "--mount", f"{ROOT / 'tests'}:/bridge"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        hello = json.loads(self._next_line(BOOT_TIMEOUT_S))
        assert hello.get("ready") is True, hello
        self._ids = 0
        self._serve_mutant()
        self.call("import sys; sys.path.insert(0, '/bridge'); import bridge_cases; json.dumps(True)")

    def _serve_mutant(self) -> None:
        """Under build_scripts/mutation.py (``WEBCLIENT_MUTANT``: a module and its mutant's file), write the mutant
        over that module of the installed wheel, before anything imports it here."""
        mutant = os.environ.get("WEBCLIENT_MUTANT")
        if not mutant:
            return
        name, source_file = json.loads(mutant)
        if not name.startswith("webclient."):
            return
        source = Path(source_file).read_text(encoding="utf-8")
        parts = name.split(".")[1:]
        written = self.call(
            "import importlib.util, pathlib\n"
            f"_path = pathlib.Path(importlib.util.find_spec('webclient').origin).parent.joinpath(*{parts!r})\n"
            f"_path = _path.with_suffix('.py'); _path.write_text({source!r}, encoding='utf-8')\n"
            f"json.dumps(str(_path))")
        assert written.endswith(name.rsplit(".", 1)[1] + ".py"), written

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put("")

    def _next_line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer from the Pyodide runner within {timeout} s") from None
        assert line, f"the Pyodide runner exited with {self._proc.poll()}"
        return line

    def call(self, code: str, timeout: float = CALL_TIMEOUT_S) -> Any:
        self._ids += 1
        assert self._proc.stdin is not None
        assert self._proc.poll() is None, f"the Pyodide runner had exited with {self._proc.returncode}"
        self._proc.stdin.write(json.dumps({"id": self._ids, "code": code}) + "\n")
        self._proc.stdin.flush()
        answer = json.loads(self._next_line(timeout))
        assert answer["id"] == self._ids
        assert answer["ok"], answer["error"]
        return answer["value"]

    def case(self, name: str, **kwargs: Any) -> Any:
        """``await bridge_cases.<name>(**kwargs)`` inside Pyodide."""
        args = json.dumps(json.dumps(kwargs))
        return self.call(f"json.dumps(await bridge_cases.{name}(**json.loads({args})))")

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):  # the runner died first (its stderr says why)
                self._proc.stdin.close()
        try:
            self._proc.wait(20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        self._reader.join(10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


@pytest.fixture(scope="module")
def pyodide() -> Iterator[PyodideNode]:
    runner = PyodideNode()
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture(scope="module")
def server() -> Iterator[SSETestServer]:
    with SSETestServer() as srv:
        yield srv


def b64(chunks: list[bytes]) -> list[str]:
    return [base64.b64encode(c).decode() for c in chunks]


def texts(updates: list[dict[str, Any]]) -> str:
    return "".join(u["text"] for u in updates if u["kind"] == "text_delta")


def pieces(data: bytes, size: int) -> list[bytes]:
    """``data`` in transport chunks of ``size`` bytes (the last shorter)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def letter_chunks(count: int) -> list[bytes]:
    """``count`` chunks of 1000 bytes, each one letter (A, B, ... Z, A, ...): queued, the pump batches 17 of them."""
    return [bytes([65 + i % 26]) * 1000 for i in range(count)]


def word_answer(count: int) -> tuple[list[str], bytes]:
    """A Chat answer of ``count`` one-word text events, then its finish and ``[DONE]``: the words, and the body."""
    words = [f"w{i:04d} " for i in range(count)]
    return words, frame(*(chunk(w) for w in words), chunk(finish="stop"), "[DONE]")


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- JS ReadableStream chunks cut inside characters, CRLF pairs and JSON -----------------------------------------


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
@pytest.mark.parametrize("spaced", [False, True], ids=["queued", "spaced"])
@pytest.mark.parametrize("data", [CHAT, TOOL], ids=["text", "tool_call"])
def test_stream_chunks_split_inside_characters_crlf_and_json_give_the_whole_input_result(
        pyodide: PyodideNode, data: bytes, fast: bool, spaced: bool) -> None:
    lists = cut_lists(data)
    reference = expected(data)
    assert reference["outcome"] == "complete"

    runs = pyodide.case("chunkings", data_b64=base64.b64encode(data).decode(), cut_lists=lists, fast=fast,
                        spaced=spaced)["runs"]

    assert len(runs) == len(lists)
    for cuts, run in zip(lists, runs, strict=True):
        n = len({c for c in cuts if 0 < c < len(data)}) + 1
        assert run["pulled"] == run["chunks"] == run["chunk_count"] == n
        # Chunks that arrive one by one reach the session one by one (cut characters and all); the fast path feeds
        # the chunks it finds already queued (here all of them: under 16 KiB) as one batch.
        assert run["feeds"] == (1 if fast and not spaced else n)
        assert run["result"] == reference, f"cuts {cuts}"
        assert run["text"] == reference["text"]
        if reference["tool_calls"]:
            assert json.loads(run["fragments"]) == reference["tool_calls"][0]["arguments"]


def test_the_fast_path_hands_over_the_chunks_already_queued_as_batches_of_16_kib_beyond_the_first(
        pyodide: PyodideNode) -> None:
    chunks = letter_chunks(40)

    out = pyodide.case("batches", chunks_b64=b64(chunks))

    batches = [len(sizes) for sizes, _ in out["batches"]["seen"]]
    assert all(whole for _, whole in out["batches"]["seen"])  # each batch is its chunks' bytes, in order
    assert max(batches) == 17 and len(batches) <= 4  # 1000 + 16 x 1000 >= 16384 ends a batch
    assert [size for sizes, _ in out["batches"]["seen"] for size in sizes] == [1000] * 40
    assert out["chunks"]["seen"] == b64(chunks) and out["chunks"]["pulled"] == 40


@pytest.mark.parametrize(("fast", "spaced"), [(True, True), (False, False)], ids=["fast-spaced", "pull-queued"])
def test_chunks_that_arrive_one_by_one_or_through_the_pull_loop_are_batches_of_one(
        pyodide: PyodideNode, fast: bool, spaced: bool) -> None:
    chunks = [b"data: %d\n\n" % i for i in range(12)]

    out = pyodide.case("batches", chunks_b64=b64(chunks), fast=fast, spaced=spaced)

    assert [sizes for sizes, _ in out["batches"]["seen"]] == [[len(c)] for c in chunks]
    assert out["chunks"]["seen"] == b64(chunks)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_chunks_read_before_a_stream_error_are_handed_over_before_the_error_is_raised(
        pyodide: PyodideNode, fast: bool) -> None:
    chunks = [b"data: %d\n\n" % i for i in range(5)]

    out = pyodide.case("batches", chunks_b64=b64(chunks), fast=fast, error_after=3)

    assert [size for sizes, _ in out["batches"]["seen"] for size in sizes] == [len(c) for c in chunks[:3]]
    assert out["chunks"]["seen"] == b64(chunks[:3])
    assert out["batches"]["raised"] == out["chunks"]["raised"] == "TypeError"


#: Chunk lengths of the batch-crossing cases.
LENGTH_SETS = [
    [1, 0, 3, 2, 7, 0, 5, 40000, 1, 2, 6],  # lengths packed after bytes that need padding; empty chunks; a chunk
    [40000, 3, 0, 1, 17000, 5],               # over BATCH_BYTES queued (the buffer grows) and first in a batch
    [4, 8, 12, 0, 0, 16],                    # no padding needed; an empty chunk last but one
    [0, 0, 0],                               # nothing but empty chunks
    [140000, 16000, 120000, 5, 0],           # a chunk, then a batch, too large for the lent bytearray
]
BATCH_LENGTHS = pytest.mark.parametrize("lengths", LENGTH_SETS, ids=["padded", "large-first", "aligned", "empty",
                                                                     "too-large"])

#: Chunk lengths whose batches take every crossing path: one chunk or several, within the lent bytearray or too large.
BOTH_FORMS = [140000, 16000, 120000, 3, 140000, 7, 1000, 1000, 0, 5]


def digit_chunks(lengths: list[int]) -> list[bytes]:
    """Chunks of these lengths, of ASCII digits that run on from chunk to chunk (a misplaced byte shows)."""
    return [bytes([48 + (i + j) % 10 for j in range(n)]) for i, n in enumerate(lengths)]


#: The pump.mjs forms a registered pump may call back in (tests/bridge_cases.py PUMPS): the previous one, every
#: batch a Uint8Array with the lengths packed after the bytes, and the one before, the lengths a JS array.
EARLIER_PUMPS = pytest.mark.parametrize("pump", ["uint8", "array"])


def assert_batches_hand_over_exactly(out: dict[str, Any], chunks: list[bytes]) -> None:
    """Every batch of a ``batches`` case is exactly its chunks' bytes, with every chunk's length, and at least one
    batch held several chunks."""
    seen = out["batches"]["seen"]
    assert all(whole for _, whole in seen)  # each batch is exactly its chunks' bytes, nothing of the lengths
    assert [size for sizes, _ in seen for size in sizes] == [len(c) for c in chunks]
    assert max(len(sizes) for sizes, _ in seen) > 1  # several chunks crossed in one call
    assert out["chunks"]["seen"] == b64(chunks)


@BATCH_LENGTHS
def test_a_batch_hands_over_its_bytes_and_every_chunk_length_exactly(pyodide: PyodideNode,
                                                                       lengths: list[int]) -> None:
    chunks = digit_chunks(lengths)

    out = pyodide.case("batches", chunks_b64=b64(chunks))

    assert_batches_hand_over_exactly(out, chunks)


@EARLIER_PUMPS
@BATCH_LENGTHS
def test_a_registered_pump_of_an_earlier_form_still_hands_over_exact_batches(
        pyodide: PyodideNode, lengths: list[int], pump: str) -> None:
    chunks = digit_chunks(lengths)

    out = pyodide.case("batches", chunks_b64=b64(chunks), pump=pump)

    assert out["kind"] == "module" and out["pump_calls"] == 2  # read_batches, then read_chunks
    assert_batches_hand_over_exactly(out, chunks)


@EARLIER_PUMPS
def test_a_registered_pump_of_an_earlier_form_hands_over_single_chunks_one_by_one(
        pyodide: PyodideNode, pump: str) -> None:
    chunks = [b"data: %d\n\n" % i for i in range(12)]

    out = pyodide.case("batches", chunks_b64=b64(chunks), spaced=True, pump=pump)

    assert out["kind"] == "module" and out["pump_calls"] == 2
    assert [sizes for sizes, _ in out["batches"]["seen"]] == [[len(c)] for c in chunks]
    assert all(whole for _, whole in out["batches"]["seen"])
    assert out["chunks"]["seen"] == b64(chunks)


def test_batches_cross_as_numbers_through_the_lent_bytearray_and_those_too_large_for_it_as_a_uint8array(
        pyodide: PyodideNode) -> None:
    chunks = digit_chunks(BOTH_FORMS)

    out = pyodide.case("batches", chunks_b64=b64(chunks), pump="forms")

    batches = [sizes for sizes, _ in out["batches"]["seen"]]
    crossed = [form for form, _ in out["forms"][: len(batches)]]
    # a batch crosses as a Uint8Array exactly when its bytes and lengths exceed the 128 KiB bytearray
    too_large = [sum(sizes) + (4 * len(sizes) if len(sizes) > 1 else 0) > 0x20000 for sizes in batches]
    assert crossed == ["object" if large else "number" for large in too_large]
    kinds = {(large, len(sizes) > 1) for large, sizes in zip(too_large, batches, strict=True)}
    assert kinds == {(True, False), (True, True), (False, False), (False, True)}, batches  # every path taken
    assert_batches_hand_over_exactly(out, chunks)


def test_batches_after_the_webassembly_memory_grew_still_cross_through_the_lent_bytearray_exactly(
        pyodide: PyodideNode) -> None:
    chunks = letter_chunks(60)  # four or five batches

    out = pyodide.case("batches", chunks_b64=b64(chunks), pump="forms", grow_at=2)

    batches = len(out["batches"]["seen"])
    assert batches >= 3 and [form for form, _ in out["forms"][:batches]] == ["number"] * batches
    assert out["forms"][2][1] is True  # the memory had grown (detaching the pump's view of it) before batch 3
    assert_batches_hand_over_exactly(out, chunks)
    assert out["views"]["taken"] >= 3 and out["views"]["released"] == out["views"]["taken"]  # a view again after it


def test_the_pyodide_node_survives_deoptimizing_js_that_inlined_a_call_into_webassembly_that_grew_the_memory(
) -> None:
    # Node 20's V8 aborted the process here (CI, once) when these cases ran in this order after many others: JS that
    # inlined its call into Python's WebAssembly was deoptimized while Python grew the memory. V8 flags that make it
    # optimize and inline early reproduce that on every run, unless the runner gets pyodide_node_flags.
    runner = PyodideNode(stress=("--stress-inline", "--interrupt-budget=500"))
    try:
        for pump, lengths in itertools.product(["uint8", "array"], LENGTH_SETS):
            chunks = digit_chunks(lengths)
            assert_batches_hand_over_exactly(runner.case("batches", chunks_b64=b64(chunks), pump=pump), chunks)
        chunks = digit_chunks(BOTH_FORMS)
        assert_batches_hand_over_exactly(runner.case("batches", chunks_b64=b64(chunks), pump="forms"), chunks)
        chunks = letter_chunks(60)
        assert_batches_hand_over_exactly(runner.case("batches", chunks_b64=b64(chunks), pump="forms", grow_at=2),
                                         chunks)
    finally:
        runner.close()


@pytest.mark.parametrize("end", ["eof", "error", "stop"])
def test_the_pump_releases_its_views_of_the_lent_bytearray_however_the_reading_ends(
        pyodide: PyodideNode, end: str) -> None:
    chunks = [b"data: %d\n\n" % i for i in range(5)]
    ending = {"eof": {}, "error": {"error_after": 3}, "stop": {"stop_at": 2}}[end]

    out = pyodide.case("batches", chunks_b64=b64(chunks), pump="forms", **ending)

    assert out["views"]["taken"] >= 2 and out["views"]["released"] == out["views"]["taken"]  # read_batches, read_chunks
    assert out["chunks"]["raised"] == ("TypeError" if end == "error" else None)
    assert len(out["chunks"]["seen"]) == {"eof": 5, "error": 3, "stop": 2}[end]


def test_read_chunks_stops_inside_a_batch_at_the_chunk_that_asked_to_stop(pyodide: PyodideNode) -> None:
    chunks = [b"data: %d\n\n" % i for i in range(5)]

    out = pyodide.case("batches", chunks_b64=b64(chunks), stop_at=2)

    assert out["chunks"]["seen"] == b64(chunks[:2]) and out["chunks"]["raised"] is None


def test_read_chunks_stops_for_good_at_a_chunk_that_asks_to_stop_inside_a_batch_with_batches_after_it(
        pyodide: PyodideNode) -> None:
    chunks = letter_chunks(40)  # batches of 17 chunks: more batches come after

    out = pyodide.case("batches", chunks_b64=b64(chunks), stop_at=5)

    assert len(out["batches"]["seen"]) >= 3  # (read_batches, which never stops, took every batch)
    assert out["chunks"]["seen"] == b64(chunks[:5]) and out["chunks"]["raised"] is None


def test_chunk_timelines_count_the_events_consumed_before_each_batch_in_a_stream_of_several_batches(
        pyodide: PyodideNode) -> None:
    words, body = word_answer(400)
    chunks = pieces(body, 1000)  # queued: batches of ~17 chunks

    out = pyodide.case("run_stream", chunks_b64=b64(chunks), fast=True)

    assert out["result"]["outcome"] == "complete" and out["result"]["text"] == "".join(words)
    log = out["chunk_log"]
    assert [t["chunks"] for t in log] == list(range(1, len(chunks) + 1))
    assert [t["bytes"] for t in log] == list(itertools.accumulate(len(c) for c in chunks))
    events = [t["events"] for t in log]
    assert events == sorted(events) and events[-1] == len(words) + 2  # + the finish chunk and [DONE]
    assert events[0] >= 0 and len(set(events)) > 2  # several batches, each after the events of those before


def test_a_byte_by_byte_stream_is_reported_chunk_by_chunk_in_the_timeline(pyodide: PyodideNode) -> None:
    chunks = [CHAT[i : i + 1] for i in range(len(CHAT))]

    out = pyodide.case("run_stream", chunks_b64=b64(chunks), fast=True)

    log = out["chunk_log"]
    assert [t["chunks"] for t in log] == list(range(1, len(CHAT) + 1))
    assert [t["bytes"] for t in log] == list(range(1, len(CHAT) + 1))
    assert log[-1]["events"] == 5 and all(a["events"] <= b["events"] for a, b in itertools.pairwise(log))
    assert all(a["t_ms"] <= b["t_ms"] for a, b in itertools.pairwise(log))
    assert out["result"]["telemetry"]["chunk_count"] == len(CHAT)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
@pytest.mark.parametrize(("status", "content_type", "stage"), [(500, "text/event-stream", "status"),
                                                             (200, "text/html", "media_type")])
def test_gate_refusal_cancels_the_js_body_without_reading_a_byte(
        pyodide: PyodideNode, fast: bool, status: int, content_type: str, stage: str) -> None:
    out = pyodide.case("run_stream", chunks_b64=b64([CHAT]), status=status, content_type=content_type, fast=fast)

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("protocol_error", stage)
    assert out["fake"] == {"pulled": 0, "cancelled": True, "calls": 1}
    assert out["result"]["telemetry"]["bytes_received"] == 0 and out["chunk_log"] == []
    assert [u["kind"] for u in out["updates"]] == ["failed"]


# -- a real server on 127.0.0.1 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_slow_real_stream_commits_and_the_request_is_posted_as_json(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(sse_script(TOOL, chunk_size=97, delay=0.01))

    out = pyodide.case("run_stream", url=url, fast=fast, body={"model": "m", "stream": True},
                       headers={"x-request-tag": "t1"})

    assert comparable(out["result"]) == expected(TOOL)
    kinds = [u["kind"] for u in out["updates"]]
    assert kinds[-1] == "committed" and kinds.count("committed") == 1
    assert out["updates"][-1]["result"] == out["result"]
    duration = out["result"]["telemetry"]["duration_ms"]
    assert 0 < duration <= out["elapsed"] * 1000.0 + 1.0 and duration == round(duration, 3)  # ms, to the microsecond
    assert out["result"]["telemetry"]["observed_at"]
    assert out["chunk_log"][-1]["bytes"] == len(TOOL)
    exchange = server.exchange(url)
    assert exchange.method == "POST" and json.loads(exchange.request_body) == {"model": "m", "stream": True}
    assert exchange.request_headers["accept"] == "text/event-stream"
    assert exchange.request_headers["content-type"] == "application/json"
    assert exchange.request_headers["x-request-tag"] == "t1"
    assert exchange.finished.wait(DISCONNECT_WITHIN_S)  # the server thread marks it just after its last write


@pytest.mark.parametrize(("script", "stage"), [
    (Script([Send(b"<html>Bad gateway</html>"), Stall(20)], status=502, content_type="text/html"), "status"),
    (Script([Send(b'{"error": "x"}'), Stall(20)], content_type="application/json"), "media_type"),
], ids=["status", "media_type"])
def test_real_gate_refusal_is_protocol_error_and_the_download_is_dropped(
        pyodide: PyodideNode, server: SSETestServer, script: Script, stage: str) -> None:
    url = server.url(script)

    out = pyodide.case("run_stream", url=url)

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("protocol_error", stage)
    assert out["result"]["telemetry"]["bytes_received"] == 0
    assert out["result"]["telemetry"]["http_status"] == script.status
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_idle_timeout_stops_the_download_and_the_server_sees_the_connection_close(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = pyodide.case("run_stream", url=url, fast=fast, deadlines={"idle": 0.3})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("timeout", "idle")
    assert texts(out["updates"]) == "".join(TEXT_PARTS[:2])
    assert (out["updates"][-1]["kind"], out["updates"][-1]["stage"]) == ("failed", "idle")
    assert 0.3 <= out["elapsed"] < 15
    exchange = server.exchange(url)
    assert exchange.disconnected.wait(DISCONNECT_WITHIN_S) and not exchange.finished.is_set()


def test_a_cancel_that_comes_after_a_deadline_stopped_the_request_leaves_the_outcome_timeout(
        pyodide: PyodideNode) -> None:
    out = pyodide.case("cancel_after_a_deadline")

    assert out["aborted"] is True and out["fake"]["cancelled"] is True  # the cancel did come, within the stop
    assert out["outcome"] == ["timeout", "idle"]  # the first stop wins


def test_the_deadline_timer_wakes_for_the_deadline_not_in_a_polling_loop(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = pyodide.case("timer_wakeups", url=url, deadlines={"idle": 0.4})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("timeout", "idle")
    # one timer per deadline armed (connect, then first event, then idle), plus a re-arm if one fired a hair early;
    # a timer set in the wrong unit wakes every millisecond (hundreds in 0.4 s)
    assert 1 <= out["fired"] <= 6, out["fired"]
    assert 0.4 <= out["elapsed"] < 15


def test_keepalive_comments_do_not_count_as_a_first_event(pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([s for _ in range(30) for s in (Send(COMMENT), Pause(0.1))]))

    out = pyodide.case("run_stream", url=url, deadlines={"first_event": 0.5})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("timeout", "first_event")
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


def test_keepalive_comments_rearm_the_idle_deadline(pyodide: PyodideNode, server: SSETestServer) -> None:
    pings = [s for _ in range(15) for s in (Pause(0.1), Send(COMMENT))]
    url = server.url(Script([Send(CHAT_HEAD), *pings, Send(CHAT[len(CHAT_HEAD):])]))

    out = pyodide.case("run_stream", url=url, deadlines={"idle": 0.6})

    assert out["result"]["outcome"] == "complete"


def test_connect_deadline_covers_a_server_that_never_sends_headers(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(CHAT)], head_delay=20))

    out = pyodide.case("run_stream", url=url, deadlines={"connect": 0.3})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("timeout", "connect")
    assert out["result"]["telemetry"]["http_status"] is None
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


def test_total_deadline_stops_a_stream_that_keeps_producing(pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([s for _ in range(40) for s in (Send(CHAT_HEAD), Pause(0.05))]))

    out = pyodide.case("run_stream", url=url, deadlines={"total": 0.5, "idle": 5})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("timeout", "total")
    assert 0.5 <= out["elapsed"] < 15
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
@pytest.mark.parametrize("how", ["method", "task", "break", "signal"])
def test_cancellation_mid_stream_ends_cancelled_and_the_server_sees_the_connection_close(
        pyodide: PyodideNode, server: SSETestServer, fast: bool, how: str) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = pyodide.case("run_stream", url=url, fast=fast, cancel_after=1, cancel_how=how)

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("cancelled", "caller")
    assert out["raised"] == ("CancelledError" if how == "task" else None)
    assert out["entered"] is (True if how == "break" else None)  # `async with stream as s`: s is the stream
    assert out["elapsed"] < 15
    exchange = server.exchange(url)
    assert exchange.disconnected.wait(DISCONNECT_WITHIN_S) and not exchange.finished.is_set()


@pytest.mark.parametrize("headers", [{"x-tag": 5}, {5: "v"}, {"x-tag": None}, ["x-tag"]],
                         ids=["value", "name", "none", "list"])
def test_headers_that_do_not_map_str_to_str_are_refused_when_the_stream_is_built(headers: Any) -> None:
    from webclient import UsageError
    from webclient.browser import BrowserStream  # (construction needs no JavaScript: CPython here)

    with pytest.raises(UsageError, match="headers must map str to str"):
        BrowserStream("http://127.0.0.1:9/x", "openai-chat", headers=headers)


def test_a_stream_not_yet_started_stands_at_zero() -> None:
    from webclient.browser import BrowserStream, Timeline  # (construction needs no JavaScript: CPython here)

    assert BrowserStream("http://127.0.0.1:9/x", "openai-chat").timeline == Timeline(0.0, 0, 0, 0)


def test_a_timeline_is_a_frozen_value() -> None:
    import dataclasses

    from webclient.browser import Timeline

    timeline = Timeline(1.5, 2, 30, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        timeline.t_ms = 0.0  # type: ignore[misc]
    assert not hasattr(timeline, "__dict__")  # slots: one is made per transport chunk
    assert timeline.to_dict() == {"t_ms": 1.5, "chunks": 2, "bytes": 30, "events": 1}


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_an_attempt_with_every_deadline_disabled_arms_no_timer_and_commits(pyodide: PyodideNode, fast: bool) -> None:
    none = {"connect": None, "first_event": None, "idle": None, "total": None, "terminal_grace": None}
    chunks = pieces(TOOL, 40)

    out = pyodide.case("timer_wakeups", chunks_b64=b64(chunks), fast=fast, deadlines=none)

    assert out["comparable"] == expected(TOOL) and out["fired"] == 0


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_events_that_move_the_idle_deadline_later_cost_no_timer_work(pyodide: PyodideNode, fast: bool) -> None:
    _, body = word_answer(300)
    chunks = pieces(body, 200)

    out = pyodide.case("timer_wakeups", chunks_b64=b64(chunks), fast=fast, spaced=True, deadlines={"idle": 30})

    assert out["result"]["outcome"] == "complete" and out["result"]["telemetry"]["chunk_count"] == len(chunks)
    # the timer armed for the connect deadline, then one for the first event (earlier); each event moves the idle
    # deadline later, which the armed timer picks up when it fires, so no chunk sets a timer
    assert out["armed"] <= 4, out["armed"]


def test_cancel_before_run_ends_the_attempt_cancelled_without_a_request(pyodide: PyodideNode) -> None:
    out = pyodide.case("run_stream", chunks_b64=b64([CHAT]), cancel_how="before_start")

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("cancelled", "caller")
    assert out["fake"]["calls"] == 0 and out["updates"][-1]["kind"] == "failed"


def test_chunk_timelines_give_milliseconds_since_the_start_in_order(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(sse_script(CHAT, chunk_size=16, delay=0.01))

    out = pyodide.case("run_stream", url=url)

    stamps = [c["t_ms"] for c in out["chunk_log"]]
    assert len(stamps) > 5 and stamps == sorted(stamps) and all(t == round(t, 3) for t in stamps)
    assert 0 < stamps[0] < stamps[-1] <= out["elapsed"] * 1000.0 + 1.0


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_cancel_mid_stream_cancels_the_body_of_a_fetch_that_ignores_the_abort_signal(
        pyodide: PyodideNode, fast: bool) -> None:
    chunks = pieces(TOOL, 40)

    out = pyodide.case("run_stream", chunks_b64=b64(chunks), fast=fast, spaced=True, cancel_after=1)

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("cancelled", "caller")
    # the stand-in fetch does not tie its body to the request's signal: only cancelling the reader stops it
    assert out["fake"]["cancelled"] is True and out["fake"]["pulled"] < len(chunks)


def test_a_chunk_read_just_before_a_cancel_is_not_consumed_after_it(pyodide: PyodideNode) -> None:
    parts = [frame(chunk(p)) for p in TEXT_PARTS] + [frame(chunk(finish="stop"), "[DONE]")]

    out = pyodide.case("stop_between_read_and_feed", chunks_b64=b64(parts), stop_after=2)

    assert out["outcome"] == ["cancelled", "caller"] and out["fake"]["cancelled"] is True
    # the second chunk was read before the cancel but reached Python after it: dropped, unread by the session
    assert out["events"] == 1 and out["text"] == TEXT_PARTS[0]
    assert [u["kind"] for u in out["updates"]] == ["text_delta", "failed"]


def test_a_linked_signal_is_unlinked_when_the_attempt_ends(pyodide: PyodideNode) -> None:
    out = pyodide.case("linked_signal", chunks_b64=b64([CHAT]))

    assert out["outcome"] == "complete"
    assert out["log"] == [["add", "abort"], ["remove", "abort", True]]


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_run_without_an_update_callback_still_commits_and_returns_the_result(
        pyodide: PyodideNode, fast: bool) -> None:
    chunks = pieces(TOOL, 50)

    out = pyodide.case("run_stream", chunks_b64=b64(chunks), fast=fast, callback=False)

    assert out["comparable"] == expected(TOOL) and out["raised"] is None
    assert out["updates"] == [] and out["chunk_log"][-1]["bytes"] == len(TOOL)


@pytest.mark.parametrize(("how", "problem"), [("raise", "RuntimeError"), ("cancel", "cancelled")])
def test_start_stream_rejects_with_a_webclient_error_naming_only_the_failure_when_the_attempt_itself_fails(
        pyodide: PyodideNode, how: str, problem: str) -> None:
    out = pyodide.case("failing_task", how=how)

    # (a bug of webclient, not an outcome: the promise must still settle, with the exception's type and no text,
    # and settling it raises nothing more in the event loop)
    assert out == {"name": "WebclientError", "message": f"webclient stream failed: {problem}", "reported": []}


def test_a_signal_aborted_before_the_attempt_starts_cancels_it_without_a_request(pyodide: PyodideNode) -> None:
    out = pyodide.case("run_stream", chunks_b64=b64([CHAT]), cancel_how="signal_before")

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("cancelled", "caller")
    assert out["fake"]["calls"] == 0 and out["updates"][-1]["kind"] == "failed"


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_response_that_arrives_after_a_cancel_is_cancelled_unread(pyodide: PyodideNode, fast: bool) -> None:
    out = pyodide.case("run_stream", chunks_b64=b64([CHAT_HEAD, CHAT[len(CHAT_HEAD):]]), fast=fast,
                       cancel_how="in_fetch")

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("cancelled", "caller")
    assert out["fake"] == {"calls": 1, "pulled": 0, "cancelled": True}
    assert out["result"]["telemetry"]["bytes_received"] == 0
    assert out["result"]["http_status"] is None  # (not even its head is taken)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_clean_eof_before_the_terminal_event_is_truncated(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(sse_script(CHAT_HEAD, chunk_size=16, delay=0.01))

    out = pyodide.case("run_stream", url=url, fast=fast)

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("truncated", "eof")
    assert out["result"]["committed"] is False and out["result"]["text"] == "".join(TEXT_PARTS[:2])


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_connection_reset_mid_stream_is_truncated_network(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Pause(0.1), Abort()], connection_close=False))

    out = pyodide.case("run_stream", url=url, fast=fast)

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("truncated", "network")
    assert texts(out["updates"]) == "".join(TEXT_PARTS[:2])


def test_refused_connection_is_truncated_network_without_a_status(pyodide: PyodideNode) -> None:
    out = pyodide.case("run_stream", url=f"http://127.0.0.1:{closed_port()}/v1/chat/completions")

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("truncated", "network")
    assert out["result"]["telemetry"]["http_status"] is None


# -- the JS entry point ------------------------------------------------------------------------------------------


def test_start_stream_takes_every_limit_and_every_resume_key_at_once(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    import dataclasses

    from webclient import DEFAULT_LIMITS

    url = server.url(sse_script(CHAT, chunk_size=64))
    limits = {f.name: getattr(DEFAULT_LIMITS, f.name) for f in dataclasses.fields(DEFAULT_LIMITS)}
    resume = {"max_resumes": 1, "last_event_id": True, "delay_ms": 0, "max_delay_ms": 10}

    out = pyodide.case("js_entry_point", url=url, limits=limits, resume=resume)

    assert out["rejected"] is None and comparable(out["resolved"]) == expected(CHAT)


@pytest.mark.parametrize(("tools", "outcome"), [({"get_weather": {"type": "object", "required": ["city", "days"]}},
                                                 ("complete", None)),
                                                ({"lookup": {}}, ("payload_error", "tool_unknown"))],
                         ids=["declared", "undeclared"])
def test_start_stream_checks_tool_calls_against_the_tools_option(
        pyodide: PyodideNode, server: SSETestServer, tools: dict[str, Any], outcome: tuple[str, Any]) -> None:
    url = server.url(sse_script(TOOL, chunk_size=64))

    out = pyodide.case("js_entry_point", url=url, tools=tools)

    assert out["rejected"] is None, out["rejected"]
    assert (out["resolved"]["outcome"], out["resolved"]["stage"]) == outcome


def test_start_stream_takes_every_option_at_once(pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(sse_script(CHAT, chunk_size=64))

    out = pyodide.case("every_option", url=url)

    assert out["keys"] == sorted([
        "url", "route", "body", "headers", "method", "deadlines", "tools", "limits", "fast", "attempt", "idempotent",
        "resume", "keep_unknown_items", "include_reasoning_content", "accepted_stop_reasons", "utf8_errors",
        "request_id", "model_alias", "signal", "fetch", "onUpdate", "onUpdates", "onResult", "onChunk", "onChunks"])
    assert out["rejected"] is None
    resolved, reference = out["resolved"], expected(CHAT)
    assert (resolved["outcome"], resolved["text"]) == (reference["outcome"], reference["text"]) == ("complete",
                                                                                                    "".join(TEXT_PARTS))
    assert (resolved["telemetry"]["request_id"], resolved["telemetry"]["model_alias"]) == ("r-1", "m-1")


def test_start_stream_passes_accepted_stop_reasons_request_id_and_model_alias_on(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    body = frame(chunk("hi"), chunk(finish="length"), "[DONE]")
    plain = pyodide.case("js_entry_point", url=server.url(sse_script(body)))
    given = pyodide.case("js_entry_point", url=server.url(sse_script(body)), accepted_stop_reasons=["length"],
                         request_id="req-7", model_alias="fast-model")

    assert (plain["resolved"]["outcome"], plain["resolved"]["stage"]) == ("truncated", "stop_reason")
    assert plain["resolved"]["telemetry"]["request_id"] is None
    assert given["rejected"] is None and given["resolved"]["outcome"] == "complete"
    telemetry = given["resolved"]["telemetry"]
    assert (telemetry["request_id"], telemetry["model_alias"]) == ("req-7", "fast-model")


@pytest.mark.parametrize("aborted", [False, True], ids=["live", "aborted"])
def test_start_stream_uses_the_fetch_and_the_signal_a_page_gives(pyodide: PyodideNode, aborted: bool) -> None:
    out = pyodide.case("js_objects_as_options", chunks_b64=b64([CHAT]), aborted=aborted)

    if aborted:  # cancelled before a request
        assert (out["resolved"]["outcome"], out["calls"]) == ("cancelled", 0)
    else:
        assert comparable(out["resolved"]) == expected(CHAT) and out["calls"] == 1


def test_start_stream_reads_invalid_utf8_as_the_utf8_errors_option_says(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    body = CHAT.replace("Zürich".encode(), b"Z\xfcrich")  # a lone Latin-1 byte inside a text delta
    assert body != CHAT
    strict = pyodide.case("js_entry_point", url=server.url(sse_script(body, chunk_size=64)))
    replace = pyodide.case("js_entry_point", url=server.url(sse_script(body, chunk_size=64)), utf8_errors="replace")

    assert strict["resolved"]["outcome"] == "decode_error"
    assert replace["rejected"] is None and replace["resolved"]["outcome"] == "complete"
    assert "Z\ufffdrich" in replace["resolved"]["text"]


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_start_stream_gives_javascript_plain_objects_with_a_timeline(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(sse_script(TOOL, chunk_size=128, delay=0.005))

    out = pyodide.case("js_entry_point", url=url, fast=fast)

    assert out["allPlain"] is True
    assert out["handle_keys"] == ["cancel", "result"]
    assert comparable(out["resolved"]) == expected(TOOL)
    assert out["results"] == [out["resolved"]]
    kinds = [u["kind"] for u in out["updates"]]
    assert kinds[-1] == "committed" and "tool_call" in kinds and "tool_input_delta" in kinds
    assert out["updates"][-1]["result"] == out["resolved"]
    assert all(set(u["timeline"]) == {"t_ms", "chunks", "bytes", "events"} for u in out["updates"])
    assert out["updates"][-1]["timeline"]["bytes"] == len(TOOL) == out["chunks"][-1]["bytes"]
    assert [c["chunks"] for c in out["chunks"]] == list(range(1, len(out["chunks"]) + 1))
    assert json.loads(server.exchange(url).request_body) == {"model": "m", "stream": True}


def test_start_stream_handle_cancel_aborts_the_request(pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = pyodide.case("js_entry_point", url=url, cancel_after=1)

    assert (out["resolved"]["outcome"], out["resolved"]["stage"]) == ("cancelled", "caller")
    assert out["updates"][-1]["kind"] == "failed"
    assert server.exchange(url).disconnected.wait(DISCONNECT_WITHIN_S)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_throwing_page_callback_is_reported_and_changes_nothing(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(sse_script(TOOL, chunk_size=128, delay=0.005))

    out = pyodide.case("js_entry_point", url=url, fast=fast, throw_after=1)

    assert out["rejected"] is None and comparable(out["resolved"]) == expected(TOOL)
    assert out["results"] == [out["resolved"]] and out["updates"][-1]["kind"] == "committed"
    assert out["reported"] == ["a bug in the page's callback"]


@pytest.mark.parametrize(("options", "words"), [
    ({"url": "", "route": "openai-chat"}, "url"),
    ({"url": "http://127.0.0.1:9/x", "route": "no-such-route"}, "route"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "bogus": 1}, "options take the keys"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "deadlines": {"idle": 1}}, "deadlines"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "keep_unknown_items": "yes"}, "keep_unknown_items"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "include_reasoning_content": 1},
     "include_reasoning_content"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "resume": {"retries": 1}}, "resume"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "resume": {"delay_ms": "soon"}}, "resume.delay_ms"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "resume": {"max_delay_ms": True}}, "resume.max_delay_ms"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "method": 5}, "method"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "attempt": -1}, "attempt"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "attempt": True}, "attempt"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "attempt": 1.5}, "attempt"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "attempt": "2"}, "attempt"),
    ({"route": "openai-chat"}, "url must be a non-empty string"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "limits": {"bogus": 1}}, "limits take the keys"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "limits": 5}, "limits take the keys"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "headers": {"x-tag": 5}}, "headers"),
    ({"url": "http://127.0.0.1:9/x", "route": "openai-chat", "limits": {"max_citations": 0}}, "max_citations"),
])
def test_start_stream_rejects_bad_options_with_a_one_line_webclient_usage_error(
        pyodide: PyodideNode, options: dict[str, Any], words: str) -> None:
    out = pyodide.case("usage_error", options=options)

    assert out["name"] == "WebclientUsageError" and words in out["message"], out
    assert "\n" not in out["message"] and "Traceback" not in out["message"]
    assert out["handle_keys"] == ["cancel", "result"]


def test_where_eval_is_refused_and_no_pump_is_registered_the_fast_path_falls_back_to_the_pull_loop_with_one_warning(
        pyodide: PyodideNode) -> None:
    chunks = pieces(TOOL, 40)

    out = pyodide.case("eval_refused", chunks_b64=b64(chunks))

    assert out["kind"] == out["again"] == "pull"  # looked up once
    assert len(out["warnings"]) == 1 and "fast path unavailable (EvalError)" in out["warnings"][0]
    # chunk by chunk, as the pull loop reads (the pump would hand the queued chunks over as one batch)
    assert out["comparable"] == expected(TOOL) and out["feeds"] == out["chunk_count"] == len(chunks)


def test_the_fast_path_uses_a_registered_static_pump_instead_of_eval(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(sse_script(TOOL, chunk_size=128, delay=0.002))

    out = pyodide.case("registered_pump", url=url)

    assert out["kind"] == "module" and out["pump_calls"] == 1
    assert out["result"] == expected(TOOL)


def test_start_stream_deadlines_are_given_in_milliseconds(pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = pyodide.case("js_entry_point", url=url, deadlines={"idle_ms": 300})

    assert (out["resolved"]["outcome"], out["resolved"]["stage"]) == ("timeout", "idle")


# -- FFI hygiene -------------------------------------------------------------------------------------------------


def test_no_proxy_or_reference_leaks_per_stream(pyodide: PyodideNode, server: SSETestServer) -> None:
    urls = {"ok": server.url(sse_script(CHAT, chunk_size=64)),
            "stall": server.url(Script([Send(CHAT_HEAD), Stall(30)])),
            "bad": server.url(Script([Send(b"nope")], status=503, content_type="text/plain")),
            "resume": server.url(Script([Send(cut_inside(USAGE, USAGE_K))])),
            "hold": server.url(Script([Send(CHAT), Stall(30)]))}
    server.add(sse_script(from_event(USAGE, USAGE_K - 1)), path=resume_path(urls["resume"]))

    out = pyodide.case("leak_check", urls=urls, rounds=3)

    assert out["after"]["pyproxies"] == out["before"]["pyproxies"], out
    assert out["after"]["hiwire"] == out["before"]["hiwire"], out
    assert out["unhandled"] == 0
    assert set(out["outcomes"]) == {"complete", "timeout", "cancelled", "protocol_error"}
    assert out["outcomes"] == out["warm"] * 3


# -- resuming a cut stream, Last-Event-ID reconnects, the terminal grace ----------------------------------------


def resumed_like_one_stream(out: dict[str, Any]) -> None:
    assert answer_view(out["result"]) == uninterrupted_view(USAGE)[0]
    assert merge_deltas(out["updates"][:-1]) == uninterrupted_view(USAGE)[1]
    assert [u["kind"] for u in out["updates"]].count("committed") == 1


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_cut_responses_stream_resumes_with_a_get_after_the_last_number_to_the_uninterrupted_result(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K)), Pause(0.05), Abort()], connection_close=False))
    again = server.add(sse_script(from_event(USAGE, USAGE_K - 2), chunk_size=300), path=resume_path(url))

    out = pyodide.case("run_stream", url=url, route="openai-responses", fast=fast, body={"model": "m"},
                       headers={"authorization": "Bearer k-1", "x-tag": "t1"},
                       resume={"max_resumes": 2, "delay": 0.0})

    resumed_like_one_stream(out)
    assert out["chunk_log"][-1]["events"] == out["result"]["telemetry"]["complete_sse_event_count"] + USAGE_K
    first, resume = server.exchange(url), server.exchange(again)
    assert first.method == "POST" and json.loads(first.request_body) == {"model": "m"}
    assert (resume.method, resume.query, resume.request_body) == (
        "GET", f"stream=true&starting_after={USAGE_N}", b"")
    headers = resume.request_headers
    assert (headers["authorization"], headers["x-tag"], headers["accept"]) == ("Bearer k-1", "t1", "text/event-stream")
    assert "content-type" not in headers and "last-event-id" not in headers
    assert server.requests_to(url) == 1 and server.requests_to(again) == 1


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_resume_cut_again_and_one_with_a_gap_are_resumed_again(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    k2 = numbered(USAGE)[10]
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(
        Script([Send(from_event(USAGE, USAGE_K - 1, k2) + events_of(USAGE)[k2][:40])]),  # overlap, cut again
        Script([Send(from_event(USAGE, k2 + 1)), Stall(20)]),  # skips event k2: a gap
        sse_script(from_event(USAGE, k2 - 3)),
        path=resume_path(url))

    out = pyodide.case("run_stream", url=url, route="openai-responses", fast=fast,
                       resume={"max_resumes": 3, "delay": 0.0})

    resumed_like_one_stream(out)
    n2 = last_number_before(USAGE, k2)
    assert [server.exchange(again, i).query for i in range(3)] == [
        f"stream=true&starting_after={USAGE_N}", f"stream=true&starting_after={n2}",
        f"stream=true&starting_after={n2}"]
    assert server.exchange(again, 1).disconnected.wait(DISCONNECT_WITHIN_S)  # the gap's response was aborted


def test_cancelling_during_the_pause_before_a_resume_ends_cancelled_without_the_request(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(sse_script(from_event(USAGE, USAGE_K)), path=resume_path(url))

    out = pyodide.case("run_stream", url=url, route="openai-responses", cancel_at=0.3,
                       resume={"max_resumes": 1, "delay": 30.0})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("cancelled", "caller") and out["elapsed"] < 15
    assert out["result"]["resume"] == {"response_id": USAGE_ID, "sequence_number": USAGE_N}
    assert server.requests_to(again) == 0


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_last_event_id_reconnect_repeats_the_request_with_the_header_and_continues(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(Script([Send(b"retry: 50\n" + b"".join(ID_CHAT_EVENTS[:2]) + ID_CHAT_EVENTS[2][:11])]),
                     sse_script(b"".join(ID_CHAT_EVENTS[2:]), chunk_size=7))

    out = pyodide.case("run_stream", url=url, fast=fast, body={"q": 1},
                       resume={"max_resumes": 1, "last_event_id": True})

    assert (out["result"]["outcome"], out["result"]["text"]) == ("complete", "".join(ID_CHAT_PARTS))
    assert texts(out["updates"]) == "".join(ID_CHAT_PARTS)
    first, second = server.exchange(url, 0), server.exchange(url, 1)
    assert "last-event-id" not in first.request_headers and second.request_headers["last-event-id"] == "2"
    assert second.method == "POST" and json.loads(second.request_body) == json.loads(first.request_body) == {"q": 1}
    assert second.started_at - first.started_at >= 0.05  # the server's retry: time


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_finished_answer_behind_a_socket_holding_proxy_ends_complete_after_the_grace_and_closes(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(Script([Send(CHAT), Stall(30)]))

    out = pyodide.case("run_stream", url=url, fast=fast, deadlines={"idle": 20, "terminal_grace": 0.3})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("complete", None)
    assert comparable(out["result"]) == expected(CHAT) and 0.3 <= out["elapsed"] < 10
    exchange = server.exchange(url)
    assert exchange.disconnected.wait(DISCONNECT_WITHIN_S) and not exchange.finished.is_set()


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
@pytest.mark.parametrize(("tail", "outcome"), [
    (CHAT_HEAD, ("protocol_error", "after_terminal")),  # more data (an event) after the terminal
    (b"data: {", ("timeout", "idle")),  # a pending line: never complete
], ids=["event", "pending_line"])
def test_data_after_the_terminal_event_keeps_its_outcome_under_the_grace(
        pyodide: PyodideNode, server: SSETestServer, fast: bool, tail: bytes, outcome: tuple[str, str | None]) -> None:
    url = server.url(Script([Send(CHAT), Pause(0.05), Send(tail), Stall(30)]))

    out = pyodide.case("run_stream", url=url, fast=fast, deadlines={"idle": 1.0, "terminal_grace": 0.5})

    assert (out["result"]["outcome"], out["result"]["stage"]) == outcome


def test_start_stream_takes_resume_and_grace_options_in_milliseconds(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    server.add(Script([Send(from_event(USAGE, USAGE_K)), Stall(30)]), path=resume_path(url))

    out = pyodide.case("js_entry_point", url=url, route="openai-responses",
                       resume={"max_resumes": 1, "delay_ms": 10}, deadlines={"terminal_grace_ms": 200})

    assert answer_view(out["resolved"]) == uninterrupted_view(USAGE)[0]
    assert out["updates"][-1]["kind"] == "committed" and out["results"] == [out["resolved"]]
    assert out["elapsed"] < 5  # (a pause of 10 s, were delay_ms read as seconds)


@pytest.mark.parametrize("fast", [False, True], ids=["pull", "fast"])
def test_a_resumed_request_that_stalls_ends_by_its_own_idle_deadline(
        pyodide: PyodideNode, server: SSETestServer, fast: bool) -> None:
    url = server.url(Script([Send(cut_inside(USAGE, USAGE_K))]))
    again = server.add(Script([Send(from_event(USAGE, USAGE_K - 1, USAGE_K + 2)), Stall(30)]), path=resume_path(url))

    out = pyodide.case("run_stream", url=url, route="openai-responses", fast=fast,
                       deadlines={"idle": 0.5}, resume={"max_resumes": 1, "delay": 0.0})

    assert (out["result"]["outcome"], out["result"]["stage"]) == ("timeout", "idle")
    assert out["elapsed"] < 15 and server.requests_to(again) == 1


def test_start_stream_hands_a_page_s_batch_callbacks_every_update_and_chunk_in_arrays(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(sse_script(TOOL, chunk_size=128, delay=0.002))

    one_by_one = pyodide.case("js_entry_point", url=url)
    out = pyodide.case("js_entry_point", url=url, batched=True)

    assert out["rejected"] is None and comparable(out["resolved"]) == expected(TOOL)
    assert out["updates"] == [] and out["chunks"] == [] and out["results"] == [out["resolved"]]
    assert all(out["update_batches"]) and all(out["chunk_batches"])
    updates = [u for batch in out["update_batches"] for u in batch]
    assert updates[-1]["kind"] == "committed" and texts(updates) == texts(one_by_one["updates"])
    assert sum(map(len, out["chunk_batches"])) == out["resolved"]["telemetry"]["chunk_count"]


def test_start_stream_reads_a_javascript_null_as_none_in_deadlines_and_the_body(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(Script([Send(CHAT_HEAD), Stall(30)]))

    out = pyodide.case("js_entry_point", url=url, body={"model": "m", "tool_choice": None},
                       deadlines={"first_event_ms": None, "total_ms": None, "idle_ms": 300})

    assert (out["resolved"]["outcome"], out["resolved"]["stage"]) == ("timeout", "idle")
    assert json.loads(server.exchange(url).request_body) == {"model": "m", "tool_choice": None}


@pytest.mark.parametrize("keep", [None, False, True], ids=["default", "false", "true"])
def test_start_stream_keeps_an_unknown_item_only_when_asked(
        pyodide: PyodideNode, server: SSETestServer, keep: bool | None) -> None:
    url = server.url(sse_script(UNKNOWN_ITEM, chunk_size=50))
    extra = {} if keep is None else {"keep_unknown_items": keep}

    out = pyodide.case("js_entry_point", url=url, fast=True, **extra)

    if keep:
        assert (out["resolved"]["outcome"], out["resolved"]["items"]) == ("complete", [UNKNOWN_TOOL])
        assert out["resolved"]["tool_calls"] == [] and out["updates"][-1]["kind"] == "committed"
    else:
        assert (out["resolved"]["outcome"], out["resolved"]["stage"]) == ("protocol_error", "unknown_type")
        assert out["resolved"]["committed"] is False


@pytest.mark.parametrize("include", [False, True])
def test_start_stream_puts_reasoning_content_in_the_assistant_message_only_when_asked(
        pyodide: PyodideNode, server: SSETestServer, include: bool) -> None:
    url = server.url(sse_script(REASONING, chunk_size=40))

    out = pyodide.case("js_entry_point", url=url, include_reasoning_content=include)

    message = out["resolved"]["assistant_message"]
    assert (out["resolved"]["outcome"], message["content"]) == ("complete", "Done.")
    assert message.get("reasoning_content") == ("Thinking…" if include else None)


def test_start_stream_passes_the_vocabulary_ceilings_to_the_session(
        pyodide: PyodideNode, server: SSETestServer) -> None:
    url = server.url(sse_script(UNKNOWN_ITEM))

    out = pyodide.case("js_entry_point", url=url, keep_unknown_items=True, limits={"max_item_chars": 10})

    assert (out["resolved"]["outcome"], out["resolved"]["stage"]) == ("buffer_limit", "items")


# -- the same entry point in Chromium ----------------------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
CHROMIUM_PAGE = """<!doctype html><meta charset="utf-8"><title>bridge</title>
<script type="module">
import { loadPyodide } from "/pyodide/pyodide.mjs";
const py = await loadPyodide({ indexURL: new URL("/pyodide/", location.href).href });
const loaded = await py.loadPackage(new URL("/__WHEEL__", location.href).href);
if (loaded.length !== 1) throw new Error("wheel did not load");
const browser = py.pyimport("webclient.browser");
window.runStream = async (url, fast, cancelAfter) => {
  const updates = [];
  let handle = null;
  handle = browser.start_stream({ url, route: "openai-chat", fast, body: { model: "m", stream: true },
    deadlines: { idle_ms: 5000 },
    onUpdate: (u) => { updates.push(u); if (cancelAfter && updates.length === cancelAfter) handle.cancel(); } });
  const result = await handle.result;
  return { updates, result };
};
window.__ready = true;
</script>
"""


@pytest.mark.browser
def test_start_stream_in_chromium_commits_over_real_fetch_and_cancel_closes_the_connection(
        pyodide: PyodideNode, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium package"
    wheel = sorted((ROOT / "build" / "dist").glob("webclient-*.whl"))[0]  # built by the pyodide fixture
    (tmp_path / "pyodide").mkdir()
    for name in RUNTIME_FILES:
        shutil.copyfile(PYODIDE_DIR / name, tmp_path / "pyodide" / name)
    shutil.copyfile(wheel, tmp_path / wheel.name)
    (tmp_path / "index.html").write_text(CHROMIUM_PAGE.replace("__WHEEL__", wheel.name))
    with SSETestServer(static_root=tmp_path) as srv, sync_api.sync_playwright() as playwright:
        ok_url = srv.add(sse_script(TOOL, chunk_size=97, delay=0.01))
        stall_url = srv.add(Script([Send(CHAT_HEAD), Stall(30)]))
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(120_000)
            page.goto(f"{srv.base_url}/index.html")
            page.wait_for_function("window.__ready === true")
            done = [page.evaluate("([u, f]) => runStream(u, f, 0)", [ok_url, fast]) for fast in (False, True)]
            cancelled = page.evaluate("([u]) => runStream(u, true, 1)", [stall_url])
            # Checked while the browser is still open: the cancel, not the browser's exit, closed the connection.
            cancel_closed_connection = srv.exchange(stall_url).disconnected.wait(DISCONNECT_WITHIN_S)
        finally:
            browser.close()

    for out in done:
        assert comparable(out["result"]) == expected(TOOL)
        assert out["updates"][-1]["kind"] == "committed" and "timeline" in out["updates"][-1]
    assert (cancelled["result"]["outcome"], cancelled["result"]["stage"]) == ("cancelled", "caller")
    assert cancel_closed_connection
    assert json.loads(srv.exchange(ok_url).request_body) == {"model": "m", "stream": True}
