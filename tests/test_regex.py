"""The linear-time pattern matcher behind JSON Schema ``pattern``: ECMA-262 meaning, refusals at
compile time, agreement with :mod:`re` where the two languages agree, and linear cost proved by
counting NFA state visits on the inputs that make backtracking engines exponential."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import example, given, reject, settings
from hypothesis import strategies as st

from webclient import UsageError
from webclient._regex import MAX_DFA_STATES, MAX_NESTING, MAX_REPEAT, MAX_STATES, Pattern, PatternError

MATCHES = [
    # (pattern, text, expected)
    ("a", "xay", True),
    ("", "", True),
    ("", "abc", True),
    ("^a", "ba", False),
    ("b$", "ab", True),
    ("^$", "", True),
    ("^$", "a", False),
    ("^[ab]*$", "abba", True),
    ("^[ab]*$", "abc", False),
    ("a|1", "x1", True),
    (r"^\d{4}-\d{2}-\d{2}$", "2024-01-31", True),
    (r"^\d{4}-\d{2}-\d{2}$", "2024-1-31", False),
    (r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", "get_weather", True),
    (r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", "9lives", False),
    (r"\bfoo\b", "a foo b", True),
    (r"\bfoo\b", "afoo", False),
    (r"\Bb", "ab", True),
    (r"\Bb", " b", False),
    (r"^\b$", "", False),
    (r"^\B$", "", True),
    ("^(a+)+$", "aaaa", True),
    ("^(a+)+$", "aaaa!", False),
    ("^a{2,3}$", "aaa", True),
    ("^a{2,3}$", "aaaa", False),
    ("^a{2}$", "aa", True),
    ("^a{2,}$", "aaaaa", True),
    ("^a{2,}$", "a", False),
    ("^a{0}b$", "b", True),
    ("^(?:ab|cd)+$", "abcdab", True),
    ("^(?<word>ab)c$", "abc", True),
    ("^(?<$w_1>ab)$", "ab", True),
    ("^colou??r$", "color", True),
    ("^a*?b+?$", "aabb", True),
    ("x{", "x{", True),  # not a quantifier: a literal (Annex B)
    ("x{1,", "x{1,", True),
    ("^a{,2}$", "a{,2}", True),
    ("^]}$", "]}", True),
    ("[]", "anything", False),  # ECMA-262: the empty class matches nothing
    ("^[^]$", "\n", True),  # and its complement everything
    ("^[-a]+$", "-a-", True),
    ("^[a-]+$", "-a-", True),
    (r"^[\w-]+$", "a-b_c", True),
    (r"^[\d.]+$", "3.14", True),
    (r"^[^\s]+$", "no\u3000", False),
    (r"^\s+$", "\u3000\t\u2028\ufeff\u00a0", True),  # ECMA white space and line terminators
    (r"^\d$", "\u0663", False),  # \d is ASCII only (Python's re would match Arabic-Indic three)
    (r"^\w$", "\u00e9", False),  # so is \w
    ("^.$", "\n", False),
    ("^.$", "\r", False),
    ("^.$", "\u2028", False),
    ("^.$", "\U0001f600", True),  # code points, as under the u flag
    ("^a$", "a\n", False),  # $ is the end of the string only (Python's re also matches before a final LF)
    (r"^\uD83D\uDE00$", "\U0001f600", True),  # a surrogate pair escape is one character
    (r"^\uD83D\u0041$", "\ud83dA", True),  # a lone high surrogate stays a code unit
    (r"^\u{1F600}$", "\U0001f600", True),
    (r"^\x41\u0042\t\n\v\f\r\0$", "AB\t\n\v\f\r\0", True),
    (r"^[\b]$", "\b", True),
    (r"^\^\$\\\.\*\+\?\(\)\[\]\{\}\|\/\-$", "^$\\.*+?()[]{}|/-", True),
    (r"^[\x00-\x1f]$", "\x07", True),
    ("^[z-\u00ff]$", "\u00e9", True),
    # quantifiers and escapes at their edges
    ("^a?$", "aa", False),
    ("^a{0000000001}$", "a", True),
    ("^a{0000000001}$", "aa", False),
    (r"^\u{10FFFF}$", "\U0010ffff", True),
    (r"^\uD800\uDC00$", "\U00010000", True),
    (r"^\uDBFF\uDFFF$", "\U0010ffff", True),
    (r"^\uD7FF\uDC00$", "\ud7ff\udc00", True),
    (r"^\uDC00\uDC00$", "\udc00\udc00", True),
    (r"^\uD800\uE000$", "\ud800\ue000", True),
    (r"^\uD83DxxDC00$", "\ud83dxxDC00", True),
    (r"^\uD83D\uDE00a$", "\U0001f600a", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), MATCHES)
def test_search_follows_ecma_262(pattern: str, text: str, expected: bool) -> None:
    assert Pattern(pattern).search(text) is expected


REFUSED = [
    # (pattern, unsupported: a valid ECMA-262 pattern outside the subset)
    ("(?=a)", True), ("(?!a)", True), ("(?<=a)b", True), ("(?<!a)b", True), ("(?i)a", True),
    ("(?P<x>a)", True), (r"(a)\1", True), (r"\k<x>", True), (r"\p{L}", True), (r"\P{L}", True),
    (r"\cJ", True), (r"\a", True), (r"\z", True), (r"\A", True), (r"\ ", True),
    ("a{1001}", True), ("a{1,1001}", True), ("a{99999999999}", True),
    ("(" * (MAX_NESTING + 1) + ")" * (MAX_NESTING + 1), True),
    ("a{1000}{5}", False),
    ("a**", False), ("*a", False), ("+", False), ("?", False), ("a|*", False), ("{2}", False), ("^*", False),
    (r"\b+", False), ("$?", False),
    ("(a", False), ("a)", False), ("(?<>a)", False), ("(?<1a>b)", False), ("(?<a", False),
    ("[a", False), ("[", False), ("[z-a]", False), (r"[\w-.]", False), (r"[a-\d]", False),
    ("\\", False), (r"\x4", False), (r"\xZZ", False), (r"\u12", False), (r"\u{}", False), (r"\u{110000}", False),
    (r"\u{12", False), ("a{3,2}", False), (r"\01", True),  # Annex B legacy octal
]


@pytest.mark.parametrize(("pattern", "unsupported"), REFUSED)
def test_patterns_outside_the_subset_or_invalid_are_refused_at_compile_time(pattern: str, unsupported: bool) -> None:
    with pytest.raises(PatternError) as caught:
        Pattern(pattern)
    assert isinstance(caught.value, UsageError)
    assert caught.value.unsupported is unsupported
    assert str(caught.value).startswith("pattern ")


def test_a_pattern_whose_automaton_is_too_large_is_refused() -> None:
    with pytest.raises(PatternError) as caught:
        Pattern("(" + "a?" * 1000 + "){5}")
    assert caught.value.unsupported and str(MAX_STATES) in str(caught.value)
    largest = Pattern("^" + "a" * (MAX_STATES - 2))  # with the assertion and MATCH: MAX_STATES states
    assert largest.search("a" * (MAX_STATES - 2)) and not largest.search("a" * (MAX_STATES - 3))


def test_error_messages_never_quote_the_pattern() -> None:
    canary = "CANARYxyz"
    for pattern in (f"(?={canary})", f"({canary}", f"[{canary}", f"{canary}\\", f"\\p{{{canary}}}"):
        with pytest.raises(UsageError) as caught:
            Pattern(pattern)
        assert canary not in str(caught.value)


def test_the_largest_repetition_is_accepted() -> None:
    assert Pattern(f"^a{{{MAX_REPEAT}}}$").search("a" * MAX_REPEAT)
    assert not Pattern(f"^a{{{MAX_REPEAT}}}$").search("a" * (MAX_REPEAT - 1))


def test_groups_nested_to_the_limit_are_accepted() -> None:
    pattern = "(" * MAX_NESTING + "a" + ")" * MAX_NESTING
    assert Pattern(pattern).search("a")


# The README states these figures; written out here so that moving a constant fails a test. Each row:
# the pattern and a text it matches at the limit, then one step past it (refused as unsupported).
DOCUMENTED_LIMITS = {
    "64 nested groups": (("(" * 64 + "a" + ")" * 64, "a"), "(" * 65 + "a" + ")" * 65),
    "repetition bounds up to 1000": (("^a{1000}$", "a" * 1000), "^a{1001}$"),
    # "^" + n literal characters: n + 2 states with the assertion and the match.
    "1024 automaton states": (("^" + "a" * 1022, "a" * 1022), "^" + "a" * 1023),
}


@pytest.mark.parametrize("limit", list(DOCUMENTED_LIMITS))
def test_each_documented_pattern_limit_accepts_its_figure_and_refuses_one_more(limit: str) -> None:
    (at_limit, text), past_limit = DOCUMENTED_LIMITS[limit]
    assert Pattern(at_limit).search(text)
    with pytest.raises(PatternError) as caught:
        Pattern(past_limit)
    assert caught.value.unsupported


# -- agreement with re where ECMA-262 and Python agree (ASCII text without line terminators) -----

ALPHABET = "ab1 _-x"
ATOMS = ["a", "b", "1", ".", "[ab]", "[^a]", "[a-x]", r"\d", r"\w", r"\s", r"\W", r"\D", r"\S", "x", "-", r"\-"]
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?", "{0,3}?"]


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0, quantified: bool = False) -> str:
    """A pattern of the subset; inside a quantified group (``quantified``), groups take no quantifier of their
    own: ``re``, the oracle, backtracks, and quantified groups nested three deep cost it seconds per text of ten
    characters (a draw whose search took 12 s in CPython), while two levels (``(a+)+``) stay cheap."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["atom"] * 6 + ["group", "alt", "anchor"] if depth < 3 else ["atom"]))
        if kind == "anchor":
            parts.append(draw(st.sampled_from(["^", "$", r"\b", r"\B"])))
            continue
        quantifier = "" if quantified and kind != "atom" else draw(st.sampled_from(QUANTIFIERS))
        inner = quantified or quantifier != ""
        if kind == "group":
            item = "(" + draw(st.sampled_from(["", "?:"])) + draw(patterns(depth + 1, inner)) + ")"
        elif kind == "alt":
            item = "(?:" + draw(patterns(depth + 1, inner)) + "|" + draw(patterns(depth + 1, inner)) + ")"
        else:
            item = draw(st.sampled_from(ATOMS))
        parts.append(item + quantifier)
    return "".join(parts)


#: A pattern that needs more than MAX_STATES states (nested counted repetitions multiply), drawn once when
#: ``patterns()`` still nested quantified groups three deep.
TOO_MANY_STATES = ("^a(?:a|(?:aaa|(?:a|aaa){0,3}?^){0,3}?)+(?:(?:a|aa(?:a|aaa))aa*|(?:a(aaaa{0,3}?)a+|(?:a|a)+"
                   "(?:a|aa{0,3}?){1,2}(?:aaa{0,3}?|aaa*a+){0,3}?){0,3}?a){0,3}?")


@settings(max_examples=400, deadline=None)
@given(pattern=patterns(), texts=st.lists(st.text(alphabet=ALPHABET, max_size=10), min_size=1, max_size=8))
@example(pattern=TOO_MANY_STATES, texts=[""])
def test_search_agrees_with_re_on_their_common_ground(pattern: str, texts: list[str]) -> None:
    try:
        ours = Pattern(pattern)
    except PatternError as error:
        # Over the documented state limit (tested above), the pattern is refused: not common ground. Only that
        # refusal: the generator uses nothing outside the subset.
        assert error.unsupported and f"more than {MAX_STATES} automaton states" in str(error), str(error)
        reject()
    theirs = re.compile(pattern)
    for text in texts:
        if not text and r"\B" in pattern:
            continue  # re before Python 3.14: \B never matches an empty string (ECMA-262: it does)
        assert ours.search(text) is (theirs.search(text) is not None), (pattern, text)


# -- linear time, by counting ------------------------------------------------------------------

#: Patterns that make a backtracking engine exponential (or quadratic) on the paired input.
PATHOLOGICAL = [
    ("^(a+)+$", lambda n: "a" * n + "!"),
    (r"^(\w+\s?)*$", lambda n: "word " * (n // 5) + "!"),
    ("^(a|aa)+$", lambda n: "a" * n + "b"),
    ("(a|a)*b", lambda n: "a" * n),
    ("^(x+x+)+y$", lambda n: "x" * n),
    (r"^(\d+)*\.$", lambda n: "1" * n + "x"),
    ("(.*a){20}", lambda n: "a" * (n // 2) + "b" * (n // 2)),
    (r"\b(\w+\b\s*)+!", lambda n: "ab " * (n // 3)),
    ("^[^@]+@[^@]+\\.[^@]+$", lambda n: "a" * n + "@b"),
]


@pytest.mark.parametrize(("pattern", "make"), PATHOLOGICAL, ids=[p for p, _ in PATHOLOGICAL])
def test_search_cost_is_linear_in_the_input_on_pathological_patterns(pattern: str, make: object) -> None:
    states = len(Pattern(pattern)._program.kind)
    costs = []
    for n in (20_000, 40_000):
        compiled = Pattern(pattern)  # a fresh DFA cache each time: the bound holds without reuse
        text = make(n)  # type: ignore[operator]
        compiled.search(text)
        assert compiled.work <= len(text) * (states + 1) + states
        costs.append(compiled.work)
    assert costs[1] <= 2 * costs[0] + 2 * states


def test_a_pattern_with_more_dfa_states_than_the_cache_holds_still_matches_like_re() -> None:
    # (a|b)*a(a|b){11}: "the 12th character from the end is a", 4096 DFA states.
    pattern = "(a|b)*a(a|b){11}$"
    compiled = Pattern(pattern)
    rng = random.Random(7)
    text = "".join(rng.choice("ab") for _ in range(2 * MAX_DFA_STATES))
    for end in range(len(text) - 12, len(text)):
        assert compiled.search(text[:end]) is (re.search(pattern, text[:end]) is not None)
    assert len(compiled._states) <= MAX_DFA_STATES
    states = len(compiled._program.kind)
    compiled.work = 0
    compiled.search(text)
    assert compiled.work <= len(text) * (states + 1) + states


def test_a_dfa_cache_is_reused_between_searches() -> None:
    compiled = Pattern(r"^[a-z0-9_]{1,64}$")
    compiled.search("get_weather")
    first = compiled.work
    compiled.search("get_weather")
    assert compiled.work - first == len("get_weather")  # cached: one step per character, no closures


# -- character classes and word boundaries, at every edge ----------------------------------------

def _zs() -> set[int]:
    import unicodedata

    return {c for c in range(0x3100) if unicodedata.category(chr(c)) == "Zs"}


LINE_TERMINATORS = {0x0A, 0x0D, 0x2028, 0x2029}
#: ECMA-262: WhiteSpace (TAB, VT, FF, ZWNBSP, any Zs) and LineTerminator; derived here from
#: Python's Unicode database, independently of the module's table.
SPACE = {0x09, 0x0B, 0x0C, 0xFEFF} | _zs() | LINE_TERMINATORS
WORD = {ord(c) for c in "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"}
DIGIT = {ord(c) for c in "0123456789"}
CODES = [*range(0x3100), 0xD7FF, 0xE000, 0xFEFE, 0xFEFF, 0xFF00, 0x10FFFE, 0x10FFFF]
CLASSES = {
    r"\d": DIGIT, r"\D": {c for c in CODES if c not in DIGIT},
    r"\w": WORD, r"\W": {c for c in CODES if c not in WORD},
    r"\s": SPACE, r"\S": {c for c in CODES if c not in SPACE},
    ".": {c for c in CODES if c not in LINE_TERMINATORS},
    r"[\d\s]": DIGIT | SPACE, r"[^\w]": {c for c in CODES if c not in WORD},
}


@pytest.mark.parametrize("klass", sorted(CLASSES))
def test_a_class_escape_holds_exactly_the_ecma_characters(klass: str) -> None:
    compiled = Pattern(f"^{klass}$")
    wrong = [hex(c) for c in CODES if compiled.search(chr(c)) is not (c in CLASSES[klass])]
    assert not wrong


def test_a_word_boundary_is_found_exactly_around_word_characters() -> None:
    boundary, inside, after_a = Pattern(r"\b"), Pattern(r"\B"), Pattern(r"^a\b")
    for c in range(0x80):
        assert boundary.search(chr(c)) is (c in WORD), hex(c)
        assert inside.search(chr(c)) is (c not in WORD), hex(c)
        assert after_a.search("a" + chr(c)) is (c not in WORD), hex(c)


@pytest.mark.parametrize(("pattern", "inside", "outside"), [
    ("[a-cx-z]", "abcxyz", "dmwA`{"),
    ("[ac]", "ac", "bd"),
    ("[a-dc-f]", "abcdef", "`g"),
    ("[ab]", "ab", "[]^"),
    ("[^b]", "ac\x00\U0010ffff", "b"),
    ("[^a]", "\x00b", "a"),
    ("[^\\u{0}-\\u{10FFFE}]", "\U0010ffff", "\x00a\U0010fffe"),
    ("[\\b\\-]", "\b-", "b\\"),
])
def test_class_ranges_merge_and_complement_exactly(pattern: str, inside: str, outside: str) -> None:
    compiled = Pattern(f"^{pattern}$")
    assert all(compiled.search(c) for c in inside)
    assert not any(compiled.search(c) for c in outside)


@pytest.mark.parametrize("pattern", ["[a-", r"\01x", r"\u{1234567}"])
def test_more_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(PatternError):
        Pattern(pattern)


def test_one_state_more_than_the_limit_is_refused() -> None:
    with pytest.raises(PatternError):
        Pattern("^" + "a" * (MAX_STATES - 1))


def test_a_new_pattern_has_done_no_work() -> None:
    assert Pattern(r"^(a+)+\b$").work == 0


# -- from a full mutation run (2026-12-05): what the bounds-only tests above let through -----------------------

def test_the_work_counts_the_closure_at_the_end_of_the_text_exactly_once() -> None:
    # "^$" compiles to three states (the two assertions and the match), all visited by the one closure an empty
    # text needs; the second search finds the answer cached on the state.
    compiled = Pattern("^$")
    assert compiled.search("") is True and compiled.work == 3
    assert compiled.search("") is True and compiled.work == 3


def test_an_anchored_pattern_stops_at_the_first_character_that_cannot_start_it() -> None:
    # A match can begin only at position 0, so no later character restarts it: the first "x" ends the search
    # (its one closure visits the "^" and the "a"), and no DFA state is built past the start.
    compiled = Pattern("^ab")
    assert compiled.search("x" * 1000) is False
    assert compiled.work == 1000 + 2 and len(compiled._states) == 1
    unanchored = Pattern("ab")  # restarts at every character: a second state, the one it stays in
    assert unanchored.search("x" * 1000) is False and len(unanchored._states) == 2


def test_the_dfa_cache_never_holds_more_states_than_its_ceiling() -> None:
    compiled = Pattern("a")
    for i in range(2 * MAX_DFA_STATES + 1):
        compiled._state(frozenset((i,)), 0)
        assert 1 <= len(compiled._states) <= MAX_DFA_STATES


def test_a_class_range_of_one_character_and_a_class_backspace() -> None:
    assert Pattern("^[a-a]$").search("a") and not Pattern("^[a-a]$").search("b")
    backspace = Pattern(r"^[\b]$")
    assert backspace.search("\x08") and not backspace.search("\t") and not backspace.search("\x07")
    assert re.search(r"^[\b]$", "\x08") is not None  # (Python's re reads it the same way)
