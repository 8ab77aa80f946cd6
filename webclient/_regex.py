"""Linear-time regular expressions for JSON Schema ``pattern``.

Why not :mod:`re`: it backtracks. A schema ``pattern`` such as ``^(a+)+$`` or ``^(\\w+\\s?)*$``
applied to a string of a few dozen characters that *almost* matches takes exponential time, and
the strings validated here are model output, which is attacker input (a prompt can make a model
emit exactly the worst string). A validator that can be made to spin forever freezes the page's
worker. So ``SchemaValidator`` compiles ``pattern`` with this module instead.

Design: the pattern is parsed into a syntax tree, compiled to a Thompson NFA (no backreferences,
no lookaround, so the language is regular), and matched by simulating the NFA on *sets* of states
(Thompson 1968; Cox, "Regular Expression Matching Can Be Simple And Fast", 2007; RE2). Each step
reads one character and touches each NFA state at most once, so ``search`` costs at most
``len(text) * states`` state visits, with ``states`` fixed when the pattern is compiled and
bounded by :data:`MAX_STATES`. Steps are cached as a lazily built DFA keyed by (state set,
character class), so ordinary patterns cost one table lookup per character; the cache is bounded
(:data:`MAX_DFA_STATES`) and starts over when full, which keeps the bound. :attr:`Pattern.work`
counts the state visits and steps so the tests can prove it.

Semantics are ECMA-262's (what JSON Schema specifies), with ``u``-flag code points:

=========================  ======================================================================
syntax                     meaning
=========================  ======================================================================
``x``                      a literal character; a backslash escapes any of ``^$\\.*+?()[]{}|/-``
``\\t \\n \\v \\f \\r \\0``      control characters; ``\\xHH``, ``\\uHHHH`` (a surrogate pair escape is
                           one character), ``\\u{H...}``
``.``                      any character but the line terminators LF, CR, U+2028, U+2029
``\\d \\w \\s`` (and          ASCII digits; ``[A-Za-z0-9_]``; ECMA white space and line terminators
``\\D \\W \\S``)
``[...]``, ``[^...]``      classes with ranges and the escapes above (``\\b`` is backspace there);
                           ``[]`` matches nothing and ``[^]`` anything, as in ECMA-262
``(...)``, ``(?:...)``,    groups (captures are irrelevant to a yes/no match)
``(?<name>...)``
``|``                      alternation
``* + ? {n} {n,} {n,m}``   repetition, greedy or lazy (``*?``: the same yes/no answer)
``^ $ \\b \\B``              assertions: start and end of the string (there is no multiline flag),
                           word boundary
=========================  ======================================================================

A search is unanchored, as JSON Schema requires. Anything else (lookahead and lookbehind,
backreferences, ``\\p{...}``, ``\\c``, flags, an escape of an ordinary letter, a quantifier with
nothing to repeat) raises :class:`~webclient.UsageError` at compile time, like an unimplemented
schema keyword: a validator that silently read ``\\p{L}`` as ``p{L}`` would refuse what the tool
author meant to accept. So does a pattern whose NFA would exceed :data:`MAX_STATES` (counted
repetition is expanded), nest groups deeper than :data:`MAX_NESTING`, or repeat more than
:data:`MAX_REPEAT` times. Error messages never quote the pattern.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from typing import Final, NamedTuple, TypeAlias

from ._errors import UsageError


class PatternError(UsageError):
    """A pattern this module refuses; ``unsupported`` tells a valid ECMA-262 pattern that uses a
    feature outside the subset from an invalid one. The message names the problem, never the
    pattern."""

    def __init__(self, why: str, *, unsupported: bool = False) -> None:
        super().__init__(f"pattern {why}")
        self.unsupported = unsupported

#: NFA states after counted repetition is expanded (``x{n,m}`` is ``m`` copies of ``x``). A
#: search costs at most this many state visits per character, whatever the pattern and the text;
#: function-calling patterns (dates, identifiers, enumerations, ``{1,64}`` lengths) need tens to
#: a few hundred, and through the DFA cache they cost one table lookup per character.
MAX_STATES: Final = 1024
#: Group nesting (the parser recurses once per level).
MAX_NESTING: Final = 64
#: The largest bound in ``{n}``, ``{n,}`` or ``{n,m}``.
MAX_REPEAT: Final = 1000
#: Cached DFA states per pattern before the cache starts over.
MAX_DFA_STATES: Final = 1024

_MAX_CODE = 0x10FFFF
Ranges: TypeAlias = tuple[tuple[int, int], ...]

_DIGIT: Final[Ranges] = ((0x30, 0x39),)
_WORD: Final[Ranges] = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
# ECMA-262 WhiteSpace (TAB, VT, FF, ZWNBSP, the Zs category) and LineTerminator (LF, CR, LS, PS).
_SPACE: Final[Ranges] = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                         (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                         (0xFEFF, 0xFEFF))
_LINE_TERMINATORS: Final[Ranges] = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/-")
_CONTROL: Final = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}


def _normalise(ranges: list[tuple[int, int]]) -> Ranges:
    """Sorted, merged, non-overlapping ranges."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    out = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX_CODE:
        out.append((start, _MAX_CODE))
    return tuple(out)


_CLASS_ESCAPES: Final[dict[str, Ranges]] = {
    "d": _DIGIT, "D": _complement(_DIGIT), "w": _WORD, "W": _complement(_WORD),
    "s": _SPACE, "S": _complement(_SPACE),
}
_DOT: Final = _complement(_LINE_TERMINATORS)


# -- syntax tree -----------------------------------------------------------------------------


class _Chars(NamedTuple):
    ranges: Ranges


class _Assert(NamedTuple):
    check: str  # one of "^", "$", "b", "B"


class _Cat(NamedTuple):
    items: list[_Node]


class _Alt(NamedTuple):
    items: list[_Node]


class _Repeat(NamedTuple):
    body: _Node
    minimum: int
    maximum: int | None  # None: unbounded


_Node: TypeAlias = "_Chars | _Assert | _Cat | _Alt | _Repeat"
_HEX: Final = frozenset("0123456789abcdefABCDEF")
# Pieces of the *pattern's* syntax, read with re.match at one position: each is a fixed sequence of
# character classes, which re matches in time linear in the match (the pattern is the caller's
# schema; it is the matching of model output that must not use re).
_BRACES: Final = re.compile(r"\{([0-9]+)(,)?([0-9]*)\}")
_GROUP_NAME: Final = re.compile(r"\?<[A-Za-z_$][A-Za-z0-9_$]*>")
_CODE_POINT: Final = re.compile(r"\{([0-9a-fA-F]{1,6})\}")


class _Parser:
    """Recursive descent over the ECMA-262 pattern grammar (the subset in the module docstring)."""

    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0

    def fail(self, why: str) -> PatternError:
        return PatternError(why)

    def refuse(self, why: str) -> PatternError:
        return PatternError(why, unsupported=True)

    def parse(self) -> _Node:
        node = self.disjunction(0)
        if self.i < len(self.s):  # only an unmatched ")" stops the top level early
            raise self.fail("is not a valid regular expression (unmatched parenthesis)")
        return node

    def disjunction(self, depth: int) -> _Node:
        alternatives = [self.alternative(depth)]
        while self.s.startswith("|", self.i):
            self.i += 1
            alternatives.append(self.alternative(depth))
        return alternatives[0] if len(alternatives) == 1 else _Alt(alternatives)

    def alternative(self, depth: int) -> _Node:
        terms: list[_Node] = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            terms.append(self.term(depth))
        return _Cat(terms)

    def term(self, depth: int) -> _Node:
        s, i = self.s, self.i
        if s[i] in "^$":
            self.i += 1
            node = _Assert(s[i])
        elif s.startswith(("\\b", "\\B"), i):
            self.i += 2
            node = _Assert(s[i + 1])
        else:
            return self.quantified(self.atom(depth))
        if self.quantifier() is not None:
            raise self.fail("repeats an assertion")
        return node

    def quantifier(self) -> tuple[int, int | None] | None:
        """Read a quantifier if one starts here: ``(min, max)``, ``max`` ``None`` for unbounded."""
        s, i = self.s, self.i
        c = s[i : i + 1]
        bounds: tuple[int, int | None]
        if c == "*":
            bounds = (0, None)
        elif c == "+":
            bounds = (1, None)
        elif c == "?":
            bounds = (0, 1)
        elif c == "{":
            braces = _BRACES.match(s, i)
            if braces is None:
                return None  # not a quantifier: "{" is a literal (ECMA-262 Annex B)
            low, comma, high = braces.group(1, 2, 3)
            minimum = _bounded(low)
            maximum = _bounded(high) if high else (None if comma else minimum)
            if max(minimum, maximum or 0) > MAX_REPEAT:
                raise self.refuse(f"repeats more than {MAX_REPEAT} times")
            if maximum is not None and maximum < minimum:
                raise self.fail("is not a valid regular expression (repetition bounds out of order)")
            bounds = (minimum, maximum)
            i = braces.end() - 1
        else:
            return None
        i += 1
        if s.startswith("?", i):
            i += 1  # lazy: the same yes/no answer
        self.i = i
        return bounds

    def quantified(self, atom: _Node) -> _Node:
        bounds = self.quantifier()
        if bounds is None:
            return atom
        if self.quantifier() is not None:
            raise self.fail("is not a valid regular expression (nothing to repeat)")
        return _Repeat(atom, bounds[0], bounds[1])

    def atom(self, depth: int) -> _Node:
        c = self.s[self.i]
        if c == "(":
            return self.group(depth)
        if c == "[":
            return self.char_class()
        if c == "\\":
            return _Chars(self.escape())
        if c == ".":
            self.i += 1
            return _Chars(_DOT)
        if self.quantifier() is not None:
            raise self.fail("is not a valid regular expression (nothing to repeat)")
        self.i += 1
        return _Chars(((ord(c), ord(c)),))

    def group(self, depth: int) -> _Node:
        if depth >= MAX_NESTING:
            raise self.refuse(f"nests groups deeper than {MAX_NESTING} levels")
        s = self.s
        self.i += 1
        if s.startswith("?:", self.i):
            self.i += 2
        elif s.startswith("?<", self.i) and not s.startswith(("?<=", "?<!"), self.i):
            name = _GROUP_NAME.match(s, self.i)
            if name is None:
                raise self.fail("is not a valid regular expression (group name)")
            self.i = name.end()
        elif s.startswith("?", self.i):
            raise self.refuse("uses lookaround or flags, which are not supported")
        node = self.disjunction(depth + 1)
        if not s.startswith(")", self.i):
            raise self.fail("is not a valid regular expression (missing parenthesis)")
        self.i += 1
        return node

    def char_class(self) -> _Node:
        s = self.s
        self.i += 1
        negate = s.startswith("^", self.i)
        if negate:
            self.i += 1
        ranges: list[tuple[int, int]] = []
        while not s.startswith("]", self.i):
            if self.i >= len(s):
                raise self.fail("is not a valid regular expression (unterminated class)")
            low = self.class_atom()
            if s.startswith("-", self.i) and s[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                first, last = _character(low), _character(self.class_atom())
                if first is None or last is None:
                    raise self.fail("is not a valid regular expression (class escape in a range)")
                if last < first:
                    raise self.fail("is not a valid regular expression (range out of order)")
                ranges.append((first, last))
            else:
                ranges.extend(low)
        self.i += 1
        merged = _normalise(ranges)
        return _Chars(_complement(merged) if negate else merged)

    def class_atom(self) -> Ranges:
        c = self.s[self.i]
        if self.s.startswith("\\b", self.i):
            self.i += 2
            return ((0x08, 0x08),)  # backspace in a class (a word boundary elsewhere)
        if c == "\\":
            return self.escape()
        self.i += 1
        return ((ord(c), ord(c)),)

    def escape(self) -> Ranges:
        """Read the escape at ``self.i``; return the characters it stands for."""
        s = self.s
        c = s[self.i + 1 : self.i + 2]
        self.i += 2
        if c in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c]
        if not c:
            raise self.fail("is not a valid regular expression (trailing backslash)")
        if c in _SYNTAX:
            code = ord(c)
        elif c in _CONTROL:
            code = _CONTROL[c]
        elif c == "0" and not s[self.i : self.i + 1].isdigit():
            code = 0
        elif c == "x":
            code = self.hex_escape(2)
        elif c == "u":
            code = self.unicode_escape()
        else:
            raise self.refuse("uses an escape that is not supported (backreference, \\p, \\c or a letter)")
        return ((code, code),)

    def hex_escape(self, count: int) -> int:
        digits = self.s[self.i : self.i + count]
        if len(digits) != count or not _HEX.issuperset(digits):
            raise self.fail("is not a valid regular expression (hexadecimal escape)")
        self.i += count
        return int(digits, 16)

    def unicode_escape(self) -> int:
        s = self.s
        if s.startswith("{", self.i):
            braces = _CODE_POINT.match(s, self.i)
            if braces is None or int(braces.group(1), 16) > _MAX_CODE:
                raise self.fail("is not a valid regular expression (code point escape)")
            self.i = braces.end()
            return int(braces.group(1), 16)
        code = self.hex_escape(4)
        low = s[self.i + 2 : self.i + 6]
        if (0xD800 <= code <= 0xDBFF and s.startswith("\\u", self.i) and len(low) == 4 and _HEX.issuperset(low)
                and 0xDC00 <= int(low, 16) <= 0xDFFF):
            # A surrogate pair written as two escapes is one character, as under the u flag.
            self.i += 6
            return 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        return code


def _character(chars: Ranges) -> int | None:
    """The one character ``chars`` stands for, or ``None`` (a class escape such as ``\\d``)."""
    if len(chars) != 1:
        return None
    ((first, last),) = chars
    return first if first == last else None


def _bounded(digits: str) -> int:
    """A repetition bound; past four significant digits it is beyond MAX_REPEAT anyway, and is read
    as MAX_REPEAT + 1 (no ``int()`` of an arbitrarily long string)."""
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 4 else MAX_REPEAT + 1


# -- NFA -------------------------------------------------------------------------------------
# One list per field, indexed by state: the kind, the characters a CHAR state consumes, the
# assertion an ASSERT state checks, and the successor states.

_CHAR, _SPLIT, _ASSERT, _MATCH = 0, 1, 2, 3


class _Program:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.chars: list[Ranges] = []
        self.check: list[str] = []
        self.next: list[list[int]] = []

    def add(self, kind: int, chars: Ranges = (), check: str = "", nxt: list[int] | None = None) -> int:
        if len(self.kind) >= MAX_STATES:
            raise PatternError(f"needs more than {MAX_STATES} automaton states", unsupported=True)
        self.kind.append(kind)
        self.chars.append(chars)
        self.check.append(check)
        self.next.append(nxt if nxt is not None else [])
        return len(self.kind) - 1

    def emit(self, node: _Node, then: int) -> int:
        """Compile ``node`` to continue at state ``then``; return its entry state."""
        match node:
            case _Chars(ranges):
                return self.add(_CHAR, chars=ranges, nxt=[then])
            case _Assert(check):
                return self.add(_ASSERT, check=check, nxt=[then])
            case _Cat(items):
                for child in reversed(items):
                    then = self.emit(child, then)
                return then
            case _Alt(items):
                return self.add(_SPLIT, nxt=[self.emit(child, then) for child in items])
            case _Repeat(body, minimum, maximum):
                if maximum is None:
                    loop = self.add(_SPLIT)
                    self.next[loop] = [self.emit(body, loop), then]
                    then = loop
                else:
                    for _ in range(maximum - minimum):
                        then = self.add(_SPLIT, nxt=[self.emit(body, then), then])
                for _ in range(minimum):
                    then = self.emit(body, then)
                return then
        raise AssertionError(node)  # pragma: no cover - the match is exhaustive


# What surrounds a position, as far as assertions care: what precedes it and what follows it.
_START, _WORD_CHAR, _OTHER_CHAR, _END = 0, 1, 2, 3


def _holds(check: str, before: int, after: int) -> bool:
    if check == "^":
        return before == _START
    if check == "$":
        return after == _END
    boundary = (before == _WORD_CHAR) != (after == _WORD_CHAR)
    return boundary if check == "b" else not boundary


class _DState:
    """A cached DFA state: the NFA states to continue from, what precedes the position, and the
    successor for each alphabet interval (``None`` until computed)."""

    __slots__ = ("before", "end", "kernel", "row")

    def __init__(self, kernel: frozenset[int], before: int, intervals: int) -> None:
        self.kernel = kernel
        self.before = before
        self.row: list[_DState | bool | None] = [None] * intervals
        self.end: bool | None = None


class Pattern:
    """A compiled pattern: ``Pattern(source).search(text) -> bool`` (unanchored, linear time).

    Raises :class:`PatternError` (a :class:`~webclient.UsageError`) for a pattern outside the
    supported subset or invalid.
    """

    __slots__ = ("_bounds", "_classes", "_program", "_restart", "_start", "_states", "_word", "work")

    def __init__(self, source: str) -> None:
        program = _Program()
        self._start = program.emit(_Parser(source).parse(), program.add(_MATCH))
        self._program = program
        # The alphabet cut into intervals on which every CHAR state and ``\\w`` agree, so that
        # the DFA is keyed by interval rather than by character.
        cuts = {0, 0x30, 0x3A, 0x41, 0x5B, 0x5F, 0x60, 0x61, 0x7B}
        for chars in program.chars:
            for lo, hi in chars:
                cuts.update((lo, hi + 1))
        self._bounds = sorted(c for c in cuts if c <= _MAX_CODE)
        self._word = [_WORD_CHAR if _contains(_WORD, lo) else _OTHER_CHAR for lo in self._bounds]
        self._classes = [_intervals(self._bounds, chars) for chars in program.chars]
        # Whether a match can begin after the first character (a leading ``^`` says no).
        self._restart = any(any(self._closure(frozenset((self._start,)), before, after)[:2])
                            for before in (_WORD_CHAR, _OTHER_CHAR) for after in (_WORD_CHAR, _OTHER_CHAR, _END))
        self._states: dict[tuple[frozenset[int], int], _DState] = {}
        #: NFA state visits plus characters read, over all searches: a linear-time witness.
        self.work = 0

    def _closure(self, kernel: frozenset[int], before: int, after: int) -> tuple[list[int], bool, int]:
        """The CHAR states reachable from ``kernel`` without reading, at a position between
        ``before`` and ``after``, whether MATCH is reachable, and how many states were visited."""
        kind, check, nxt = self._program.kind, self._program.check, self._program.next
        seen: set[int] = set()
        stack = list(kernel)
        chars = []
        matched = False
        while stack:
            state = stack.pop()
            if state in seen:
                continue
            seen.add(state)
            k = kind[state]
            if k == _CHAR:
                chars.append(state)
            elif k == _MATCH:
                matched = True
            elif k == _SPLIT or _holds(check[state], before, after):
                stack.extend(nxt[state])
        return chars, matched, len(seen)

    def _state(self, kernel: frozenset[int], before: int) -> _DState:
        states = self._states
        if len(states) >= MAX_DFA_STATES:
            states = self._states = {}  # start over (a new dict: a concurrent search keeps its own)
        state = states.get((kernel, before))
        if state is None:
            state = states[kernel, before] = _DState(kernel, before, len(self._bounds))
        return state

    def _step(self, state: _DState, interval: int) -> _DState | bool:
        """The state after reading a character of ``interval``: ``True`` if a match ended before
        it, ``False`` if no match can follow."""
        chars, matched, visited = self._closure(state.kernel, state.before, self._word[interval])
        self.work += visited
        if matched:
            return True
        classes, nxt = self._classes, self._program.next
        targets = {nxt[s][0] for s in chars if interval in classes[s]}
        if self._restart:
            targets.add(self._start)
        if not targets:
            return False
        return self._state(frozenset(targets), self._word[interval])

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text``."""
        state = self._state(frozenset((self._start,)), _START)
        bounds = self._bounds
        self.work += len(text)
        for character in text:
            interval = bisect_right(bounds, ord(character)) - 1
            target = state.row[interval]
            if target is None:
                target = state.row[interval] = self._step(state, interval)
            if target is True:
                return True
            if target is False:
                return False
            state = target
        if state.end is None:
            _, state.end, visited = self._closure(state.kernel, state.before, _END)
            self.work += visited
        return state.end


def _contains(ranges: Ranges, code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


def _intervals(bounds: list[int], chars: Ranges) -> frozenset[int]:
    """The alphabet intervals inside ``chars`` (every range end is a cut, so each interval is
    wholly inside or wholly outside)."""
    return frozenset(i for lo, hi in chars for i in range(bisect_left(bounds, lo), bisect_left(bounds, hi + 1)))
