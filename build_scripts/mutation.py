"""Mutation testing: would the tests fail if the code were wrong?

For each module, this makes *mutants*, copies of the module with one small fault each, runs the
module's tests against every mutant, and reports which mutants no test noticed (the survivors).
A survivor is either a missing test or an *equivalent* mutant (one that changes no behaviour, such
as ``<`` for ``<=`` where the two sides can never be equal); the equivalent ones are listed, with
the reason, in ``build_scripts/mutation-equivalents.md``, and the score counts only the others.

Usage (not part of the default test run; it takes minutes per module)::

    .venv/bin/python build_scripts/mutation.py                       # every mapped module
    .venv/bin/python build_scripts/mutation.py --module _sse --module _utf8
    .venv/bin/python build_scripts/mutation.py --module webclient/_session.py --max-mutants 150 --seed 3
    .venv/bin/python build_scripts/mutation.py --module _sse --list   # the mutants, without running
    .venv/bin/python build_scripts/mutation.py --module _json --tests tests/test_json.py

Options: ``--module`` (repeatable; a path or a bare name such as ``_sse``; any module of the
package works, mapped or not), ``--tests`` (test files for the given module(s), instead of
:data:`MODULE_TESTS`; required for a module the map does not know), ``--max-mutants N`` with
``--seed S`` (a reproducible random sample per module: the same N, seed and source give the same
mutants), ``--line N`` (repeatable: only the mutants on these lines, e.g. to confirm that a new test
kills a survivor), ``--jobs 1|2`` (parallel mutants; at most 2, the machine is shared), ``--timeout S`` (per
mutant; default four times the unmutated run, at least 30 s), ``--fail-under PCT`` (exit 1 if a
module's score is lower), ``--json FILE`` (every verdict, for scripts), ``--equivalents FILE``
(repeatable: more tables of equivalent mutants, read with the shared one, so a team can keep the
explanations for its modules in its own file).

Output per module: mutants run, killed (and how many by timeout), equivalent (explained), survived,
and the score: killed / (run - explained equivalents). Each unexplained survivor is printed with
its location, the mutation and a ready-made row for the equivalents table.

Mutation operators (one change per mutant, applied to the module's syntax tree):

- operators swapped: ``+ -``, ``* //``, ``/ *``, ``% *``, ``& |``, ``<< >>`` (also in ``+=``
  and friends), ``and or``;
- comparisons negated (``== !=``, ``< >=``, ``is``/``is not``, ``in``/``not in``, ...) and moved
  across the boundary (``< <=``, ``> >=``);
- conditions negated: the test of ``if``, ``elif``, ``while``, ``x if c else y`` and comprehension
  ``if`` clauses; ``not x`` becomes ``x``;
- statements in ``if``/``else`` bodies deleted (each one replaced by ``pass``);
- returns nulled: ``return x`` becomes ``return None``;
- constants nudged: integers ``n`` to ``n + 1``, booleans flipped, strings emptied (an empty
  string becomes ``"\\x00"``).

Not mutated: docstrings, type annotations, ``Literal[...]`` types and type aliases, ``assert``
statements, ``raise`` statements (their messages are not behaviour), f-strings,
``__slots__``/``__all__``, and lines marked ``# pragma: no mutate``.

How a mutant runs: a subprocess starts pytest with an import hook that serves the mutant's source
for the module's import name (no file in the repository is touched, so runs can overlap and an
interrupted run leaves nothing behind). Exit status 0 means the mutant survived; any failure,
error or crash kills it; a run that exceeds the timeout is killed and counted as *killed by
timeout* (a mutant that makes a loop endless is caught, it just takes the timeout to say so).
The subprocess also names the module and the mutant's file in the environment (``WEBCLIENT_MUTANT``, a
JSON pair), for tests that run the package in another runtime: the Pyodide bridge tests write the mutant over
the module in Pyodide's file system before it is imported there, which is how ``browser.py`` (which only runs
inside Pyodide) is mutated. Hypothesis runs with a fixed seed so that a verdict does not depend on the draw. Before the
mutants, the unmutated module goes through the same path (it must pass) and its duration sets the
default timeout.

The map from modules to tests is :data:`MODULE_TESTS` below; add a module by adding its tests.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = ROOT / "build_scripts" / "mutation-equivalents.md"

def _nodes(path: str, *names: str) -> list[str]:
    """pytest node ids of the tests ``names`` in the file ``path``."""
    return [f"{path}::{name}" for name in names]


#: The tests that go through :mod:`demo_site.proxy`, in four files (node ids, so a run takes those alone).
_PROXY_TESTS = [
    *_nodes("tests/test_demo_server_security.py",
            "test_a_body_ending_in_a_prefix_of_the_key_reaches_the_page_whole",
            "test_a_corrupt_encoded_body_is_cut_cleanly_and_nothing_past_the_corruption_gets_out",
            "test_a_gzip_bomb_is_cut_at_the_decoded_ceiling_with_bounded_memory",
            "test_an_encoded_upstream_body_reaches_the_page_decoded_without_the_key_and_without_content_encoding",
            "test_an_identity_or_unlabelled_upstream_body_only_loses_the_key",
            "test_an_upstream_body_in_a_coding_the_proxy_cannot_decode_is_a_502_naming_neither_the_coding_nor_the_key",
            "test_an_upstream_that_echoes_the_key_never_gets_it_to_the_page",
            "test_proxy_asks_every_route_for_an_identity_body_and_pins_the_anthropic_version_only_when_the_page_does_not",
            "test_proxy_builds_the_gemini_upstream_path_from_the_route_table",
            "test_proxy_ignores_proxy_settings_in_the_environment",
            "test_proxy_keeps_no_cookie_the_upstream_sets",
            "test_proxy_keeps_no_cookies_from_the_upstream_between_requests",
            "test_proxy_keeps_the_base_urls_path_prefix",
            "test_proxy_logs_a_warning_for_an_upstream_redirect_only",
            "test_proxy_never_follows_an_upstream_redirect_and_the_key_never_leaves_the_configured_origin",
            "test_proxy_never_forwards_the_raw_or_decoded_request_path",
            "test_proxy_passes_only_allow_listed_query_parameters",
            "test_proxy_passes_the_allow_listed_headers_both_ways_and_nothing_else",
            "test_proxy_refuses_a_base_url_that_is_not_plain_http",
            "test_proxy_refuses_a_gemini_model_segment_outside_the_strict_name_pattern",
            "test_request_bodies_over_the_cap_are_refused_before_reaching_the_upstream",
            "test_the_proxy_client_session_is_closed_at_cleanup_and_cleanup_before_startup_is_harmless"),
    *_nodes("tests/test_demo_resume.py",
            "test_the_proxy_drops_resume_query_parameters_outside_their_patterns",
            "test_the_proxy_forwards_a_resume_as_a_get_with_the_key_to_the_configured_origin",
            "test_the_proxy_passes_a_reconnects_last_event_id_and_nothing_else_new",
            "test_the_proxy_refuses_a_response_id_outside_the_strict_pattern"),
    *_nodes("tests/test_demo_server_static.py",
            "test_proxy_mode_shares_its_model_routes_and_preflight_too"),
    *_nodes("tests/test_demo_upstream.py",
            "test_base_url_may_carry_a_trailing_v1",
            "test_proxy_adds_the_key_in_the_routes_headers_and_drops_the_pages_own",
            "test_proxy_answers_a_json_502_when_the_upstream_is_unreachable",
            "test_proxy_cuts_the_page_connection_when_the_upstream_cuts",
            "test_proxy_forwards_upstream_bytes_unchanged_and_unrechunked",
            "test_proxy_hands_the_page_a_gzip_body_decoded_and_without_content_encoding",
            "test_proxy_mode_without_a_key_refuses_to_start",
            "test_proxy_never_logs_the_key",
            "test_proxy_passes_upstream_errors_through_with_their_status",
            "test_proxy_logs_each_answer_as_its_route_its_fate_and_the_upstream_bytes_it_took",
            "test_a_page_that_hangs_up_mid_answer_is_counted_disconnected_and_the_upstream_answer_let_go"),
]

#: Module -> the tests that must notice a fault in it. The core modules' own tests come first
#: (``-x`` stops at the first failure, so fast, specific tests make killed mutants cheap).
MODULE_TESTS: dict[str, list[str]] = {
    "webclient/_utf8.py": ["tests/test_utf8.py", "tests/test_sse.py", "tests/test_sse_properties.py"],
    "webclient/_sse.py": ["tests/test_sse.py", "tests/test_sse_properties.py", "tests/test_sse_steady_state_edges.py"],
    "webclient/_pipeline.py": ["tests/test_sse.py", "tests/test_utf8.py", "tests/test_sse_properties.py",
                               "tests/test_session_eof.py", "tests/test_telemetry.py"],
    "webclient/_json.py": ["tests/test_json.py", "tests/test_route_json_depth.py", "tests/test_prebuilt_codecs.py"],
    "webclient/_regex.py": ["tests/test_regex.py", "tests/test_schema.py"],
    "webclient/_schema.py": ["tests/test_schema.py"],
    "webclient/_deadlines.py": ["tests/test_deadlines.py", "tests/test_terminal_grace.py"],
    "webclient/_retry.py": ["tests/test_retry.py"],
    "webclient/_telemetry.py": ["tests/test_telemetry.py"],
    "webclient/_values.py": ["tests/test_values.py", "tests/test_delta_surrogates.py", "tests/test_result_encoding.py"],
    "webclient/_updates.py": ["tests/test_update_wire.py", "tests/test_result_builders.py",
                              "tests/test_result_encoding.py"],
    # The httpx transport against a real local server: ~25 s a run (its tests wait on real deadlines).
    "webclient/httpx.py": ["tests/test_httpx_adapter.py"],
    # The browser bridge runs only inside Pyodide: its tests boot Pyodide under Node once (~10 s) and write the
    # mutant over the installed module there (WEBCLIENT_MUTANT); the Chromium case installs the wheel unmutated.
    "webclient/browser.py": ["tests/test_browser_bridge.py"],
    "webclient/_gate.py": ["tests/test_gate_limits_outcome.py", "tests/test_session_lifecycle.py",
                           "tests/test_telemetry.py"],
    "webclient/_limits.py": ["tests/test_gate_limits_outcome.py", "tests/test_sse.py", "tests/test_edges_session.py",
                             "tests/test_retained.py", "tests/test_telemetry.py"],
    "webclient/_outcome.py": ["tests/test_gate_limits_outcome.py", "tests/test_telemetry.py",
                              "tests/test_session_lifecycle.py", "tests/test_sse.py"],
    "webclient/_events.py": ["tests/test_sse.py"],
    "webclient/_cli.py": ["tests/test_cli_errors.py", "tests/test_events_cli.py", "tests/test_replay_cli.py"],
    "webclient/_cli_events.py": ["tests/test_events_cli.py", "tests/test_cli_errors.py"],
    "webclient/_cli_replay.py": ["tests/test_replay_cli.py", "tests/test_cli_errors.py", "tests/test_replay_resume.py"],
    "webclient/_cli_chunking.py": ["tests/test_replay_cli.py", "tests/test_cli_errors.py", "tests/test_events_cli.py"],
    # ~50 s a run on a quiet machine: sample it (--max-mutants).
    "webclient/_cli_check.py": ["tests/test_cli_errors.py", "tests/test_check_cli.py"],
    "webclient/_check.py": ["tests/test_check.py", "tests/test_check_cli.py"],
    "webclient/_check_growth.py": ["tests/test_check.py"],
    # The demo server's defences (not part of the package; the same tool works on any module).
    "demo_site/hosts.py": ["tests/test_demo_server_security.py"],
    "demo_site/redact.py": ["tests/test_demo_server_security.py"],
    "demo_site/content_decoding.py": ["tests/test_demo_server_security.py"],
    "demo_site/guards.py": ["tests/test_demo_server_security.py", "tests/test_demo_server_static.py"],
    # The static file tests first (unit tests of the rules run in about a second), then the two of the security
    # file that reach the file server: ~14 s a run, where both files whole take ~25 s.
    "demo_site/static_files.py": ["tests/test_demo_server_static.py", *_nodes(
        "tests/test_demo_server_security.py",
        "test_static_files_refuse_paths_whose_real_path_is_outside_the_site_with_a_bare_404",
        "test_files_and_symlinks_inside_the_site_are_still_served")],
    # The tests that go through the proxy, wherever they live: ~15 s a run (their files whole: over a minute).
    "demo_site/proxy.py": _PROXY_TESTS,
    # The embedded upstream: its wire against the SDKs' models (~2 s), then its resume store and replies, then the
    # tests that play it through the server (in-process, so the mutant is what answers): ~45 s a run.
    "demo_site/upstream.py": ["tests/test_demo_upstream_sdk_types.py", "tests/test_demo_resume.py",
                              "tests/test_demo_upstream.py"],
    # The scenario table and the answer's text: what each scenario ends as on every route (~1 s), then the upstream's.
    "demo_site/scenarios.py": ["tests/test_demo_scenarios.py", "tests/test_demo_upstream_sdk_types.py",
                               "tests/test_demo_upstream.py"],
    # The command line first (~7 s), then the files that build apps and serve through them, and the embedded
    # upstream's tests that reach the server's wiring (not its ~110 scenario streams): ~36 s a run.
    "demo_site/server.py": ["tests/test_demo_server_cli.py", "tests/test_demo_server_static.py",
                            "tests/test_demo_server_security.py", "tests/test_demo_resume.py", *_nodes(
                                "tests/test_demo_upstream.py",
                                "test_unsafe_eval_is_added_only_when_asked",
                                "test_unknown_scenario_is_refused_with_a_json_400",
                                "test_tools_json_maps_tool_names_to_json_schemas",
                                "test_static_site_is_served_with_pyodide_compatible_csp_and_media_types",
                                "test_static_site_refuses_paths_outside_or_hidden",
                                "test_gemini_without_alt_sse_answers_a_json_array_like_the_real_api",
                                "test_config_json_lists_every_scenario_and_route",
                                "test_proxy_mode_without_a_key_refuses_to_start",
                                "test_base_url_may_carry_a_trailing_v1",
                                "test_prompt_echo_is_short_and_single_line",
                                "test_cancelling_mid_stream_is_recorded_as_a_disconnect_and_stops_the_stream",
                                "test_proxy_never_logs_the_key",
                                "test_stall_goes_silent_after_some_events_and_notices_the_client_leaving",
                                # (a page leaving a silent proxied answer: what handler cancellation is for)
                                "test_a_page_that_hangs_up_mid_answer_is_counted_disconnected_and_the_upstream_answer_let_go")],
    # Per route: its edge tests first (fast and specific), then its route and vocabulary tests, then what
    # every route shares (edges across routes, values, the retained ceiling, next turn, the contracts).
    "webclient/_session.py": ["tests/test_edges_session.py", "tests/test_session_lifecycle.py",
                              "tests/test_telemetry.py", "tests/test_deadlines.py", "tests/test_terminal_grace.py",
                              "tests/test_route_contracts.py", "tests/test_edges_resume.py", "tests/test_resume.py",
                              "tests/test_retained.py", "tests/test_values.py", "tests/test_session_eof.py",
                              "tests/test_result_encoding.py"],
    "webclient/_toolcalls.py": ["tests/test_edges_toolcalls.py", "tests/test_route_openai_chat.py",
                                "tests/test_route_anthropic_messages.py", "tests/test_route_openai_responses.py",
                                "tests/test_route_gemini.py", "tests/test_edges_openai_chat.py",
                                "tests/test_edges_routes.py", "tests/test_values.py", "tests/test_retained.py",
                                "tests/test_delta_surrogates.py", "tests/test_result_encoding.py"],
    "webclient/_resume.py": ["tests/test_resume.py", "tests/test_edges_resume.py", "tests/test_replay_resume.py",
                             "tests/test_retry.py", "tests/test_typed_fast_paths.py"],
    "webclient/_routes/_base.py": ["tests/test_edges_routes.py", "tests/test_route_openai_chat.py",
                                   "tests/test_route_openai_responses.py", "tests/test_route_anthropic_messages.py",
                                   "tests/test_route_gemini.py", "tests/test_edges_openai_chat.py",
                                   "tests/test_edges_openai_responses.py", "tests/test_edges_anthropic_messages.py",
                                   "tests/test_edges_gemini.py", "tests/test_route_json_depth.py",
                                   "tests/test_values.py", "tests/test_retained.py", "tests/test_next_turn.py",
                                   "tests/test_route_contracts.py", "tests/test_envelope_json.py",
                                   "tests/test_resume.py", "tests/test_edges_resume.py",
                                   "tests/test_typed_fast_paths.py", "tests/test_telemetry.py",
                                   "tests/test_deadlines.py", "tests/test_delta_surrogates.py",
                                   "tests/test_result_encoding.py"],
    "webclient/_routes/openai_chat.py": ["tests/test_edges_openai_chat.py", "tests/test_route_openai_chat.py",
                                         "tests/test_vocab_openai_chat.py", "tests/test_edges_routes.py",
                                         "tests/test_values.py", "tests/test_retained.py", "tests/test_next_turn.py",
                                         "tests/test_route_contracts.py",
                                         "tests/test_delta_surrogates.py", "tests/test_result_encoding.py"],
    "webclient/_routes/openai_responses.py": ["tests/test_edges_openai_responses.py",
                                              "tests/test_route_openai_responses.py",
                                              "tests/test_vocab_openai_responses.py", "tests/test_edges_routes.py",
                                              "tests/test_typed_fast_paths.py", "tests/test_resume.py",
                                              "tests/test_values.py", "tests/test_retained.py",
                                              "tests/test_next_turn.py", "tests/test_route_contracts.py",
                                              "tests/test_delta_surrogates.py", "tests/test_result_encoding.py"],
    "webclient/_routes/anthropic_messages.py": ["tests/test_edges_anthropic_messages.py",
                                                "tests/test_route_anthropic_messages.py",
                                                "tests/test_vocab_anthropic_messages.py", "tests/test_edges_routes.py",
                                                "tests/test_typed_fast_paths.py", "tests/test_values.py",
                                                "tests/test_retained.py", "tests/test_next_turn.py",
                                                "tests/test_route_contracts.py",
                                                "tests/test_delta_surrogates.py", "tests/test_result_encoding.py"],
    "webclient/_routes/gemini.py": ["tests/test_edges_gemini.py", "tests/test_route_gemini.py",
                                    "tests/test_vocab_gemini.py", "tests/test_gemini_paths.py",
                                    "tests/test_edges_routes.py", "tests/test_values.py", "tests/test_retained.py",
                                    "tests/test_next_turn.py", "tests/test_route_contracts.py",
                                    "tests/test_delta_surrogates.py", "tests/test_result_encoding.py"],
}

PYTEST_ARGS = ["-x", "-q", "-p", "no:cacheprovider", "--hypothesis-seed=0"]
MAX_JOBS = 2

# The subprocess: serve the mutant's source under the module's import name, then run pytest.
_BOOT = """
import importlib.abc, importlib.util, sys
name, origin, mutant, *args = sys.argv[1:]
with open(mutant, encoding="utf-8") as f:
    code = compile(f.read(), origin, "exec")
class Mutant(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        return importlib.util.spec_from_file_location(fullname, origin, loader=self) if fullname == name else None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        exec(code, module.__dict__)
sys.meta_path.insert(0, Mutant())
# For tests that run the package in another runtime (the Pyodide bridge tests): which module, and its mutant's source.
import json, os
os.environ["WEBCLIENT_MUTANT"] = json.dumps([name, mutant])
import pytest
sys.exit(pytest.main(args))
"""


# -- mutants ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutant:
    """One fault: where (a path of field names and indexes from the module node) and what."""

    module: str
    line: int
    function: str
    source_line: str
    description: str
    path: tuple[tuple[str, int | None], ...]
    change: int
    operator: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """How an equivalence entry names this mutant (stable across unrelated edits)."""
        return (self.module, self.function, self.source_line, self.description)


_BINARY_SWAP: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Div: ast.Mult,
    ast.Mod: ast.Mult, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.LShift: ast.RShift,
    ast.RShift: ast.LShift, ast.Pow: ast.Mult, ast.BitXor: ast.BitOr,
}
_COMPARE_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Lt: (ast.GtE, ast.LtE), ast.LtE: (ast.Gt, ast.Lt),
    ast.Gt: (ast.LtE, ast.GtE), ast.GtE: (ast.Lt, ast.Gt), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,), ast.NotIn: (ast.In,),
}
_SYMBOL = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Div: "/", ast.Mod: "%", ast.BitAnd: "&",
    ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>", ast.Pow: "**", ast.BitXor: "^", ast.Eq: "==",
    ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not",
    ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or",
}

# (operator name, description, replacement builder) for one node.
_Change = tuple[str, str, Callable[[ast.AST], ast.AST]]


def _short(node: ast.AST, limit: int = 40) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _negate(node: ast.expr) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=node)


def _changes(node: ast.AST, field: str, parent: ast.AST) -> Iterator[_Change]:
    """The mutations of ``node`` (found at ``parent.<field>``)."""
    if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINARY_SWAP:
        new_op = _BINARY_SWAP[type(node.op)]

        def swap_op(n: ast.AST, new_op: type = new_op) -> ast.AST:
            m = copy.copy(n)
            m.op = new_op()
            return m

        yield "operator", f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[new_op]}`", swap_op
    if isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield "operator", f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[other]}`", (
            lambda n, other=other: ast.BoolOp(op=other(), values=n.values))
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for new_op in _COMPARE_SWAPS.get(type(op), ()):
                def swap_cmp(n: ast.AST, i: int = i, new_op: type = new_op) -> ast.AST:
                    m = copy.copy(n)
                    m.ops = [*n.ops[:i], new_op(), *n.ops[i + 1 :]]
                    return m

                yield "comparison", f"`{_SYMBOL[type(op)]}` -> `{_SYMBOL[new_op]}`", swap_cmp
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield "condition", f"`{'not ' if isinstance(node.op, ast.Not) else '-'}x` -> `x`", (
            lambda n: n.operand)
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        keyword = {ast.If: "if", ast.While: "while", ast.IfExp: "x if c else y"}[type(node)]

        def negate_test(n: ast.AST) -> ast.AST:
            m = copy.copy(n)
            m.test = _negate(n.test)
            return m

        yield "condition", f"negate `{keyword}` condition", negate_test
    if field == "ifs" and isinstance(parent, ast.comprehension):
        yield "condition", "negate comprehension `if`", lambda n: _negate(n)
    if isinstance(node, ast.stmt) and field in ("body", "orelse") and isinstance(parent, ast.If) and not isinstance(
            node, ast.Pass):
        yield "statement", f"delete `{_short(node)}`", lambda n: ast.Pass()
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        yield "return", f"`return {_short(node.value)}` -> `return None`", (
            lambda n: ast.Return(value=ast.Constant(None)))
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield "constant", f"`{value}` -> `{not value}`", lambda n: ast.Constant(not value)
        elif isinstance(value, int):
            yield "constant", f"`{value}` -> `{value + 1}`", lambda n: ast.Constant(value + 1)
        elif isinstance(value, str):
            new = "" if value else "\x00"
            yield "constant", f"`{_short(node)}` -> `{new!r}`", lambda n: ast.Constant(new)


def _skipped(node: ast.AST, field: str, parent: ast.AST | None) -> bool:
    """Subtrees that are never mutated (see the module docstring)."""
    if isinstance(node, ast.Assert | ast.Raise | ast.JoinedStr):
        return True
    if field in ("annotation", "returns", "type_comment"):
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
        return True  # a type (``Literal["strict", "replace"]``), not a value
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return True  # a docstring (or a bare string statement)
    if isinstance(node, ast.AnnAssign) and isinstance(node.annotation, ast.Name) and node.annotation.id == "TypeAlias":
        return True  # a type alias: read only by type checkers
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id in ("__slots__", "__all__") for t in targets)
    return False


_SOURCES: dict[str, str] = {}


def source_of(module: str) -> str:
    """The module's source as first read: mutants are made from one snapshot, so editing the file
    during a run cannot mix two versions."""
    if module not in _SOURCES:
        _SOURCES[module] = (ROOT / module).read_text(encoding="utf-8")
    return _SOURCES[module]


def mutants_of(module: str) -> list[Mutant]:
    """Every mutant of ``module`` (a path relative to the repository root), in source order."""
    source = source_of(module)
    lines = source.splitlines()
    tree = ast.parse(source)
    found: list[Mutant] = []

    def visit(node: ast.AST, path: tuple[tuple[str, int | None], ...], field: str, parent: ast.AST | None,
              function: str) -> None:
        if _skipped(node, field, parent):
            return
        line = getattr(node, "lineno", 0)
        text = lines[line - 1] if line else ""
        if parent is not None and "pragma: no mutate" not in text:
            for change, (operator, description, _) in enumerate(_changes(node, field, parent)):
                found.append(Mutant(module, line, function, text.strip(), description, path, change, operator))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            function = f"{function}.{node.name}" if function else node.name
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                for i, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        visit(child, (*path, (name, i)), name, node, function)
            elif isinstance(value, ast.AST):
                visit(value, (*path, (name, None)), name, node, function)

    visit(tree, (), "", None, "")
    return found


def mutated_source(module: str, mutant: Mutant | None) -> str:
    """The module's source with ``mutant`` applied (``None``: unmutated, through the same unparse)."""
    tree = ast.parse(source_of(module))
    if mutant is not None:
        parent: ast.AST = tree
        for name, index in mutant.path[:-1]:
            child = getattr(parent, name)
            parent = child[index] if index is not None else child
        name, index = mutant.path[-1]
        target = getattr(parent, name)[index] if index is not None else getattr(parent, name)
        replacement = list(_changes(target, name, parent))[mutant.change][2](target)
        if index is None:
            setattr(parent, name, replacement)
        else:
            getattr(parent, name)[index] = replacement
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# -- equivalents -----------------------------------------------------------------------------

def equivalence_row(m: Mutant, reason: str) -> str:
    """The table row that explains ``m`` as equivalent (``|`` in a cell is written ``\\|``)."""
    cells = [m.module, m.function or "<module>", f"`{m.source_line}`", m.description, reason]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def known_equivalents(*extra: Path) -> dict[tuple[str, str, str, str], str]:
    """Rows of the equivalents tables (the shared one and ``extra``):
    ``| module | function | `line` | mutation | reason |``."""
    table: dict[tuple[str, str, str, str], str] = {}
    for path in (EQUIVALENTS, *extra):
        if path.exists():
            table.update(_rows(path))
        elif path != EQUIVALENTS:
            raise SystemExit(f"no equivalents table at {path}")
    return table


def _rows(path: Path) -> dict[tuple[str, str, str, str], str]:
    table: dict[tuple[str, str, str, str], str] = {}
    for row in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]
        if len(cells) == 5 and cells[0].startswith(("webclient/", "demo_site/")):
            module, function, line, description, reason = cells
            table[module, "" if function == "<module>" else function, line[1:-1], description] = reason
    return table


# -- running ---------------------------------------------------------------------------------

@dataclass
class Verdict:
    mutant: Mutant
    killed: bool
    timed_out: bool
    seconds: float


def import_name(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def run_tests(module: str, source: str, tests: list[str], timeout: float) -> tuple[bool, bool, float]:
    """Run ``tests`` with ``source`` as ``module``; return (passed, timed_out, seconds)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", encoding="utf-8", delete=False) as f:
        f.write(source)
    started = time.monotonic()
    try:
        command = [sys.executable, "-c", _BOOT, import_name(module), str(ROOT / module), f.name, *PYTEST_ARGS,
                   *tests]
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return False, True, time.monotonic() - started
        return code == 0, False, time.monotonic() - started
    finally:
        os.unlink(f.name)


def resolve(name: str) -> str:
    if name in MODULE_TESTS or (ROOT / name).is_file():
        return name
    matches = [m for m in MODULE_TESTS if Path(m).stem == name or Path(m).stem == f"_{name}"]
    if len(matches) != 1:
        raise SystemExit(f"unknown module {name!r}; mapped modules: {', '.join(MODULE_TESTS)}")
    return matches[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", action="append", help="module path or name (repeatable; default: all mapped)")
    ap.add_argument("--tests", nargs="+", help="test files for the given module(s) instead of the map")
    ap.add_argument("--max-mutants", type=int, help="a random sample of this many mutants per module")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    ap.add_argument("--jobs", type=int, default=2, choices=range(1, MAX_JOBS + 1), help="parallel runs (1 or 2)")
    ap.add_argument("--timeout", type=float, help="seconds per mutant (default: 4x the unmutated run, >= 30)")
    ap.add_argument("--line", type=int, action="append",
                    help="only the mutants on this source line (repeatable; to confirm a new test kills them)")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--fail-under", type=float, help="exit 1 if a module scores below this percentage")
    ap.add_argument("--json", type=Path, help="write every verdict to this file")
    ap.add_argument("--equivalents", type=Path, action="append", default=[],
                    help=f"another table of equivalent mutants, read with {EQUIVALENTS.name} (repeatable)")
    args = ap.parse_args()
    modules = [resolve(m) for m in args.module] if args.module else list(MODULE_TESTS)
    equivalents = known_equivalents(*args.equivalents)
    verdicts: list[Verdict] = []
    failed = False
    for module in modules:
        tests = args.tests or MODULE_TESTS.get(module)
        if not tests:
            raise SystemExit(f"no tests mapped for {module}: pass --tests")
        candidates = mutants_of(module)
        if args.line:
            candidates = [m for m in candidates if m.line in args.line]
        chosen = candidates
        if args.max_mutants is not None and args.max_mutants < len(candidates):
            chosen = sorted(random.Random(args.seed).sample(candidates, args.max_mutants), key=candidates.index)
        if args.list:
            for m in chosen:
                print(f"{m.module}:{m.line}: {m.description}  [{m.operator}, {m.function or '<module>'}]")
            print(f"{module}: {len(chosen)} of {len(candidates)} mutants")
            continue
        passed, _, baseline = run_tests(module, mutated_source(module, None), tests, timeout=3600)
        if not passed:
            raise SystemExit(f"{module}: the tests fail without any mutation ({' '.join(tests)})")
        timeout = args.timeout or max(30.0, 4 * baseline)
        print(f"{module}: {len(chosen)} of {len(candidates)} mutants; tests {' '.join(tests)}; "
              f"unmutated run {baseline:.1f} s, timeout {timeout:.0f} s", flush=True)

        done = [0]

        def one(m: Mutant, tests: list[str] = tests, timeout: float = timeout, total: int = len(chosen),
                done: list[int] = done) -> Verdict:
            survived, timed_out, seconds = run_tests(m.module, mutated_source(m.module, m), tests, timeout)
            done[0] += 1
            if done[0] % 25 == 0 or done[0] == total:
                print(f"  ... {done[0]}/{total}", file=sys.stderr, flush=True)
            return Verdict(m, not survived, timed_out, seconds)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(one, chosen))
        verdicts += results
        survivors = [v for v in results if not v.killed]
        explained = [v for v in survivors if v.mutant.key in equivalents]
        unexplained = [v for v in survivors if v.mutant.key not in equivalents]
        relevant = len(results) - len(explained)
        score = 100.0 * (relevant - len(unexplained)) / relevant if relevant else 100.0
        timeouts = sum(v.timed_out for v in results)
        print(f"{module}: {len(results)} mutants, {len(results) - len(survivors)} killed ({timeouts} by timeout), "
              f"{len(explained)} equivalent (explained), {len(unexplained)} survived: "
              f"score {score:.1f}% of non-equivalent mutants")
        for v in unexplained:
            m = v.mutant
            print(f"  SURVIVED {m.module}:{m.line}: {m.description}  in {m.function or '<module>'}: {m.source_line}")
            print(f"    (if equivalent, explain it in {EQUIVALENTS.name}: {equivalence_row(m, 'why')})")
        for v in explained:
            m = v.mutant
            print(f"  equivalent {m.module}:{m.line}: {m.description}  ({equivalents[m.key]})")
        if args.fail_under is not None and score < args.fail_under:
            failed = True
    if args.json:
        args.json.write_text(json.dumps([{**asdict(v.mutant), "killed": v.killed, "timed_out": v.timed_out,
                                          "seconds": round(v.seconds, 2)} for v in verdicts], indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
