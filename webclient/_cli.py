"""``python -m webclient <command>``: a thin dispatcher over one module per command.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code).
A command whose module is not importable is left out of the parser; any other import error is raised.

Errors are handled here, once for every command. Exit status:

* ``0`` / ``1``: the command ran (what they mean per command is in :data:`_COMMANDS` and each ``--help``);
* ``2``: a usage or input error: bad options (argparse), an unusable ``--tools`` file or schema, a
  capture that cannot be read (missing, a directory, unreadable). One line on stderr, no traceback;
* ``141`` (128 + SIGPIPE, as for a process killed by it): standard output was closed early
  (``... | head -1``); the command stops quietly.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ._cli_chunking import InputError
from ._errors import UsageError

#: Exit status when standard output is closed before the command is done.
EXIT_CLOSED_STDOUT = 141

_USAGE_EXIT = "2 usage or input error (bad options, unreadable capture, unusable --tools): one line on stderr"

#: command name -> (module, one-line help, exit status summary)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "events": ("webclient._cli_events",
               "feed a capture through the UTF-8 decoder and SSE parser; print events",
               "0 every byte parsed, 1 a ceiling tripped or strict decoding failed (last line "
               "{outcome, stage})"),
    "replay": ("webclient._cli_replay",
               "replay a capture through a route's stream session; print the result",
               "0 the outcome is complete, 1 any other outcome"),
    "check": ("webclient._cli_check",
              "torture a capture: every split, every EOF, limits, leaks, reset",
              "0 every check passed, 1 a check failed, 2 also when the capture itself is not a complete "
              "response"),
}


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


def _silence_stdout() -> None:
    """Point the stdout descriptor at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, ValueError, OSError):  # not a real file (tests capture stdout in memory)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit code."""
    parser = argparse.ArgumentParser(prog="python -m webclient", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    for name, (module_name, help_text, exits) in _COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        modules[name] = module
        epilog = f"exit status: {exits}; {_USAGE_EXIT}."
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text, epilog=epilog))
    args = parser.parse_args(argv)
    try:
        code: int = modules[args.command].run(args)
        sys.stdout.flush()
    except (InputError, UsageError) as exc:
        sys.stderr.write(f"{parser.prog} {args.command}: error: {_one_line(exc)}\n")
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_CLOSED_STDOUT
    return code


if __name__ == "__main__":  # pragma: no cover  # pragma: no mutate (only a fresh `python -m webclient._cli` runs it)
    sys.exit(main())  # pragma: no mutate
