"""Differential fuzz of an SSE parser mutant: is a surviving mutant of ``webclient/_sse.py`` equivalent?

A mutant that survives the tests is either a missing test or changes nothing observable; the rows of
``build_scripts/mutation-equivalents.md`` claim the second. This script checks such a claim: it builds
the mutant (one of ``build_scripts/mutation.py``'s, or the source with a text replaced by hand), then
feeds the original parser and the mutant the same random streams in the same random chunks under the same
random ceilings, and compares after every feed everything a caller can see: the items returned,
``lines_interpreted``, ``work``, the pending line and event sizes, ``events_dispatched``, the comment,
unknown-field, id and retry state, and the failure. Streams mix event blocks of one name, of a few names
and data-only ones, comments, id and retry lines, NUL, BOM, CR, CRLF and LF endings, mixed scripts; about
half first settle the parser in a one-name steady state, and half are cut right after CRs (where CRLF
framing is most often cut in two).

Usage::

    .venv/bin/python build_scripts/sse_mutant_fuzz.py --line N [--line M ...] [--cases 30000] [--seed 1]
    .venv/bin/python build_scripts/sse_mutant_fuzz.py --survivors RUN.json [--line N ...] [--shrink]
    .venv/bin/python build_scripts/sse_mutant_fuzz.py --old OLD --new NEW [--cases 30000] [--seed 1]

``--line``: every mutant ``build_scripts/mutation.py`` makes on that line (the same mutants, built the
same way), one after the other; ``--survivors``: only those a ``mutation.py --json`` run left alive.
``--old``/``--new``: a hand-made mutant; OLD and NEW are taken verbatim (no escapes are interpreted:
``'"\\n"'`` in a shell is the four characters the source holds). Prints, per mutant, the number of cases
and of differences, and for the first difference the feeds (made as small as they go with ``--shrink``)
and the first observable that differed; exits 1 when any mutant differed. A difference proves the mutant
observable (write a test); none in a large run supports an equivalence claim (say how many).
"""

from __future__ import annotations

import argparse
import random
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import webclient._sse as original  # noqa: E402
from webclient import Limits  # noqa: E402

PIECES = ["data: ", "data:", "event: ", "event: d", "event: e", "id: 7", "retry: 5", ": c", "x", "yz", "d", "",
          "\n", "\n", "\n\n", "\r\n", "\r\n\r\n", "\r", "\x00", "\ufeff", "\u00e9", "data: a", "data: bb"]
VALUES = ["v", "w1", "\u65e5"]
NAME_SETS = [["d"], ["d"], ["d", "e"], [""], ["d", "d", "d", "e"]]


MODULE = "webclient/_sse.py"


def load(source: str) -> Any:
    """``source`` as a module of the package (its relative imports resolve)."""
    module = types.ModuleType("webclient._sse_mutant")
    module.__package__ = "webclient"
    exec(compile(source, f"{MODULE} (mutant)", "exec"), module.__dict__)
    return module


def hand_made(old: str, new: str) -> tuple[str, str]:
    """(label, source): ``webclient/_sse.py`` with ``old`` replaced by ``new``."""
    source = (ROOT / MODULE).read_text(encoding="utf-8")
    found = source.count(old)
    if found != 1:
        raise SystemExit(f"OLD occurs {found} times in {MODULE}; it must occur once")
    return f"{old!r} -> {new!r}", source.replace(old, new)


def on_lines(lines: list[int], survivors: Path | None) -> list[tuple[str, str]]:
    """(label, source) of every mutant ``build_scripts/mutation.py`` makes on ``lines`` (every line when
    none is given), only those it reported surviving when ``survivors`` (its ``--json`` file) is given."""
    sys.path.insert(0, str(ROOT / "build_scripts"))
    import mutation

    chosen = mutation.mutants_of(MODULE)
    if lines:
        chosen = [m for m in chosen if m.line in lines]
    if survivors is not None:
        import json

        alive = {(v["line"], v["description"], json.dumps(v["path"]), v["change"])
                 for v in json.loads(survivors.read_text(encoding="utf-8"))
                 if v["module"] == MODULE and not v["killed"]}
        chosen = [m for m in chosen if (m.line, m.description, json.dumps([list(p) for p in m.path]), m.change)
                  in alive]
    return [(f"{MODULE}:{m.line}: {m.description}", mutation.mutated_source(MODULE, m)) for m in chosen]


def stream(rng: random.Random) -> list[str]:
    """A random stream cut into random feeds; about half first settle a one-name steady state in a
    feed of their own (framed as the rest)."""
    names = rng.choice(NAME_SETS)
    noise = rng.choice([0.0, 0.05, 0.4])  # (the share of blocks that are random pieces)
    blocks = ["event: d\ndata: a\n\n" * 10] if rng.random() < 0.5 else [""]
    for _ in range(rng.randint(1, 40)):
        if rng.random() >= noise:
            name = rng.choice(names)
            odd = rng.random() < 0.1  # (a value that may hold a line break)
            value = "".join(rng.choice([*VALUES, "", "\r", "\n"] if odd else VALUES) for _ in range(rng.randint(0, 6)))
            blocks.append((f"event: {name}\n" if name else "") + "data: " + value + "\n\n")
        else:
            blocks.append("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6))))
    mode = rng.choice(["lf", "crlf", "mixed"])
    if mode == "crlf":
        blocks = [b.replace("\n", "\r\n") for b in blocks]
    elif mode == "mixed":
        blocks = ["".join(rng.choice(["\n", "\r\n", "\r"]) if c == "\n" else c for c in b) for b in blocks]
    settle, text = blocks[0], "".join(blocks[1:])
    # (cut anywhere, or half the time right after a CR: where CRLF framing is most often cut in two)
    places = [i + 1 for i, c in enumerate(text[:-1]) if c == "\r"] if rng.random() < 0.5 else []
    places = places or list(range(1, len(text)))
    cuts = sorted(rng.sample(places, min(len(places), rng.randint(0, 8)))) if len(text) > 1 else []
    feeds = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return [settle, *feeds] if settle else feeds


def observe(parser_type: Any, feeds: list[str], limits: Limits) -> list[object]:
    parser = parser_type(limits)
    seen: list[object] = []
    for text in feeds:
        if parser.failure is not None:
            break
        try:
            seen += parser.feed(text)
        except Exception as exc:  # (a mutant can raise: that is a difference too)
            seen.append(("raised", type(exc).__name__))
            break
        seen.append((parser.lines_interpreted, parser.work, parser.pending_line_chars, parser.pending_event_chars,
                     parser.events_dispatched, parser.comment_lines, parser.unknown_fields, parser.last_event_id,
                     parser.retry, parser.failure))
    return seen


def shrink(other: Any, feeds: list[str], limits: Limits) -> list[str]:
    """A smaller case that still differs: feeds dropped or joined, characters removed, while the
    parsers still disagree (greedy, until nothing more can go)."""
    def differs(candidate: list[str]) -> bool:
        candidate = [f for f in candidate if f]
        return bool(candidate) and observe(original.SSEParser, candidate, limits) != observe(
            other.SSEParser, candidate, limits)

    smaller = True
    while smaller:
        smaller = False
        for i in range(len(feeds)):
            dropped = [*feeds[:i], *feeds[i + 1:]]
            joined = [*feeds[:i], feeds[i] + "".join(feeds[i + 1:i + 2]), *feeds[i + 2:]]
            for candidate in (dropped, joined):
                if len(candidate) < len(feeds) and differs(candidate):
                    feeds, smaller = [f for f in candidate if f], True
                    break
            if smaller:
                break
        for i, feed in enumerate(feeds):
            for j in range(len(feed)):
                candidate = [*feeds[:i], feed[:j] + feed[j + 1:], *feeds[i + 1:]]
                if differs(candidate):
                    feeds, smaller = [f for f in candidate if f], True
                    break
            if smaller:
                break
    return feeds


def fuzz(other: Any, cases: int, seed: int, minimal: bool = False) -> int:
    """Differences between the parser and ``other``'s in ``cases`` random cases; prints the first
    (shrunk first when ``minimal``)."""
    rng = random.Random(seed)
    differences = 0
    for _ in range(cases):
        feeds = stream(rng)
        limits = Limits(max_line_chars=rng.choice([8, 12, 19, 24, 40, 80, 1000, 65536]),
                        max_event_chars=rng.choice([16, 40, 100, 10**6]))
        want, got = observe(original.SSEParser, feeds, limits), observe(other.SSEParser, feeds, limits)
        if want != got:
            differences += 1
            if differences == 1:
                if minimal:
                    feeds = shrink(other, feeds, limits)
                    want, got = observe(original.SSEParser, feeds, limits), observe(other.SSEParser, feeds, limits)
                print(f"  first difference: feeds {feeds!r}, max_line_chars {limits.max_line_chars}, "
                      f"max_event_chars {limits.max_event_chars}")
                for a, b in zip(want, got, strict=False):
                    if a != b:
                        print(f"    original {a!r}\n    mutant   {b!r}")
                        break
    return differences


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--line", type=int, action="append", default=[], help="fuzz every mutant on this line")
    ap.add_argument("--survivors", type=Path, help="only the mutants this mutation.py --json file reports alive")
    ap.add_argument("--old", help="source text of webclient/_sse.py to replace (exactly one occurrence)")
    ap.add_argument("--new", help="what the hand-made mutant has instead")
    ap.add_argument("--cases", type=int, default=30000, help="random streams per mutant (default 30,000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--shrink", action="store_true", help="print the first difference made as small as it goes")
    args = ap.parse_args()
    if (args.old is None) != (args.new is None) or not (args.line or args.survivors or args.old is not None):
        ap.error("give --line N and/or --survivors FILE, or --old and --new")
    targets = on_lines(args.line, args.survivors) if args.line or args.survivors else []
    targets += [hand_made(args.old, args.new)] if args.old is not None else []
    observable = 0
    for label, source in targets:
        print(label)
        try:
            other = load(source)
        except Exception as exc:  # (a mutant that cannot even be imported differs trivially)
            print(f"  does not import: {type(exc).__name__}")
            observable += 1
            continue
        differences = fuzz(other, args.cases, args.seed, args.shrink)
        observable += differences > 0
        print(f"  cases {args.cases}, differences {differences}")
    return 1 if observable else 0


if __name__ == "__main__":
    raise SystemExit(main())
