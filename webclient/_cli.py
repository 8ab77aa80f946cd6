"""``python -m webclient <command>``: a thin dispatcher over one module per command.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int`` (the exit code).
A command whose module is not importable is left out of the parser; any other import error is raised.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: command name -> (module, one-line help)
_COMMANDS: dict[str, tuple[str, str]] = {
    "events": ("webclient._cli_events", "feed a capture through the UTF-8 decoder and SSE parser; print events"),
    "replay": ("webclient._cli_replay", "replay a capture through a route's stream session; print the result"),
    "check": ("webclient._cli_check", "torture a capture: every split, every EOF, limits, leaks, reset"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit code."""
    parser = argparse.ArgumentParser(prog="python -m webclient", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    for name, (module_name, help_text) in _COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    code: int = modules[args.command].run(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
