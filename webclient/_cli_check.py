"""``python -m webclient check``: torture a capture through a route's real session.

::

    python -m webclient check --route {openai-chat,openai-responses,anthropic-messages,gemini}
        [--tools FILE.json] [--keep-unknown-items] [--include-reasoning-content]
        [--accept-stop-reason REASON]... [--utf8-errors strict|replace] [--max-line-chars N]
        [--max-event-chars N] [--max-text-chars N] [--max-tool-input-chars N] [--max-retained-chars N]
        [--seed N] [--max-splits N] [--json] [--chunk-size N | --split-at I,J,K] FILE|-

Runs every check of :mod:`webclient._check` (whole, split, multisplit, eof, oversized, growth,
leak, reset) and prints a summary table: per check the cases run, the failures, and the first failing
case with its position, outcome and stage, never content. ``--json`` prints the report object
instead. ``--tools``, the session options and the ceiling options mean what they mean for ``replay``:
check the capture with the configuration you ship;
``--chunk-size`` / ``--split-at`` add that chunking as one more multi-split case. Progress goes
to stderr for captures of :data:`PROGRESS_MIN_BYTES` or more.

Exit status: 0 when every check passed, 1 when a check failed, 2 when the capture itself is not
a complete response (or the options are unusable).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ._check import CheckConfig, CheckReport, CheckResult, Progress, check_capture, session_factory
from ._cli_chunking import (
    LIMIT_OPTIONS,
    add_input_arguments,
    add_session_arguments,
    chunks_from,
    dumps_json,
    limits_from,
    positive_int,
    read_input,
    session_options,
)
from ._routes import ROUTE_NAMES

#: Captures at least this large report progress on stderr (smaller ones finish in seconds).
PROGRESS_MIN_BYTES = 64 * 1024

#: Stages of a capture that is not complete that a session option can make an answer -> that option (named
#: under the report, so that a capture is checked with the configuration that is shipped).
OPTION_FOR_STAGE: dict[str | None, str] = {
    "unknown_type": "--keep-unknown-items",
    "stop_reason": "--accept-stop-reason REASON",
    "error_stop": "--accept-stop-reason REASON",
    "unrecognized_stop": "--accept-stop-reason REASON",
    "utf8": "--utf8-errors replace",
}

#: Progress lines per check (one each time another tenth of its cases is done).
_PROGRESS_STEPS = 10


def _seed(text: str) -> int:
    """argparse type: a non-negative decimal integer."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a non-negative integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError("expected a non-negative integer")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the ``check`` command."""
    parser.add_argument("--route", required=True, choices=ROUTE_NAMES)
    add_session_arguments(parser)
    parser.add_argument("--seed", type=_seed, default=0, metavar="N",
                        help="seed of the sampled positions, random cut patterns and canary (default 0)")
    parser.add_argument("--max-splits", type=positive_int, metavar="N",
                        help="at most N positions per position check (split, eof); default: every position "
                             "up to 16 KiB, a sample sized to a fixed work budget above")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_input_arguments(parser, tuple(LIMIT_OPTIONS))


def run(args: argparse.Namespace) -> int:
    """Check the capture, print the report, return the exit code."""
    limits = limits_from(args)
    factory = session_factory(args.route, limits=limits, **session_options(args))
    data = read_input(args.file)
    given = list(chunks_from(args, data)) if (args.chunk_size or args.split_at) else None
    progress = _progress(sys.stderr.write) if len(data) >= PROGRESS_MIN_BYTES else None
    report = check_capture(data, factory, route=args.route, limits=limits,
                           config=CheckConfig(seed=args.seed, max_splits=args.max_splits),
                           extra_chunks=given, progress=progress)
    if args.json:
        sys.stdout.write(dumps_json(report.to_dict()) + "\n")
    else:
        sys.stdout.write(render(report))
    return report.exit_code


def _progress(write: Callable[[str], object]) -> Progress:
    """A progress callback writing one line per tenth of each check's cases."""
    shown: dict[str, int] = {}

    def report(check: str, done: int, total: int) -> None:
        step = done * _PROGRESS_STEPS // max(1, total)
        if step > shown.get(check, 0) or (done == 1 and check not in shown):
            shown[check] = step
            write(f"check: {check} {done}/{total} cases\n")

    return report


def _first(result: CheckResult) -> str:
    failure = result.first_failure
    if failure is None:
        return "-"
    where = failure.case
    if failure.category is not None:
        where += f" [{failure.category}]"
    ended = "raised" if failure.outcome is None else failure.outcome + (f"/{failure.stage}" if failure.stage else "")
    return f"{where}: {ended}: {failure.problem}"


def _coverage(result: CheckResult) -> str | None:
    cov = result.coverage
    if "positions" in cov:
        how = "sampled, seed-driven" if cov["sampled"] else "every position"
        cats = ", ".join(f"{k} {v}" for k, v in sorted(cov["by_category"].items()))
        return (f"{result.name}: {cov['positions']} of {cov['candidates']} positions ({how}; "
                f"{cov['special_candidates']} special candidates); {cats}")
    if "substitutions" in cov:
        subs = ", ".join(f"{k} {v}" for k, v in cov["substitutions"].items())
        reached = "yes" if cov["canary_reached_output"] else "no"
        return f"leak: canary substitutions: {subs}; canary reached the session's output: {reached}"
    return None


def render(report: CheckReport) -> str:
    """The human-readable summary (content-free)."""
    lines = [f"webclient check: route {report.route}, {report.capture_bytes} bytes, {report.events} events, "
             f"seed {report.seed}"]
    stop = f", stop_reason {report.stop_reason}" if report.stop_reason else ""
    stage = f", stage {report.whole_stage}" if report.whole_stage else ""
    lines.append(f"whole capture: {report.whole_outcome or 'no result'}{stage}{stop}")
    if not report.capture_complete and report.exit_code == 2:
        lines.append(f"the capture itself is not a complete response (outcome {report.whole_outcome}{stage}); "
                     "nothing else was checked")
        option = OPTION_FOR_STAGE.get(report.whole_stage)
        if option is not None:
            lines.append(f"a session built with {option} would take it: if the session you ship is, check with it")
        return "\n".join(lines) + "\n"
    rows = [("check", "cases", "failures", "first failure")]
    rows.extend((r.name, str(r.cases), str(r.failures), _first(r)) for r in report.checks)
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    lines.append("")
    for name, cases, failures, first in rows:
        lines.append(f"{name:<{width[0]}}  {cases:>{width[1]}}  {failures:>{width[2]}}  {first}")
    notes = [note for note in (_coverage(r) for r in report.checks) if note]
    if notes:
        lines.append("")
        lines.extend(notes)
    lines.append("")
    if report.passed:
        lines.append("PASS: every check passed")
    else:
        failed = [r.name for r in report.checks if not r.passed]
        lines.append(f"FAIL: {', '.join(failed)}")
    return "\n".join(lines) + "\n"
