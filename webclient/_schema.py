"""Tool-input validators: a built-in JSON Schema subset, a ``jsonschema`` adapter, and one normaliser.

Every validator has the same shape: ``validator(instance) -> list[str]``. An empty list means valid;
otherwise each entry is a *content-free* problem description ``"<instance pointer>: <keyword>"``, for
example ``"/location: required"`` or ``"/items/3: maxLength"``. Tool arguments are payload content, so
a description never contains an instance value, and an object key appears in the pointer only when the
schema itself declares that name (under ``properties`` or ``required``); any other key is written
``*``. The whole instance is ``(root)``. At most :data:`MAX_PROBLEMS` descriptions are returned.

:class:`SchemaValidator` implements the subset that function calling uses, with JSON Schema 2020-12
semantics:

========================  ====================================================================
keyword                   behaviour
========================  ====================================================================
``type``                  a name or a non-empty list of names; ``1.0`` is an ``integer``, ``true``
                          is not a ``number``; NaN and +-Infinity are not numbers at all
``enum`` / ``const``      JSON equality: ``1 == 1.0``, ``true != 1``, objects by keys and values
``properties``            each declared member present in the object is checked against its schema
``required``              each missing member is reported at its own pointer
``additionalProperties``  ``false`` rejects undeclared members (one problem per object); a schema
                          checks each undeclared member
``items``                 one schema for every element (the array "tuple" form is not supported)
``minItems``/``maxItems``, ``minLength``/``maxLength`` (in code points)
``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (numbers, 2020-12 style)
``pattern``               ECMA-262 syntax and meaning, with *search* semantics as JSON Schema specifies
                          (unanchored), matched in time linear in the string by
                          :mod:`webclient._regex` (never by backtracking :mod:`re`: a caller's
                          pattern applied to model output could take exponential time); patterns
                          outside its subset (lookaround, backreferences, ``\\p{...}``) are
                          refused at construction like unsupported keywords
``anyOf``                 at least one branch must accept the instance
``$ref``                  ``"#"``, ``"#/$defs/<name>"`` or ``"#/definitions/<name>"`` only; like
                          every 2020-12 applicator it is applied *together with* its sibling
                          keywords (under a declared draft-04/06/07 ``$schema``, where siblings of
                          ``$ref`` are ignored, such a schema is rejected instead)
========================  ====================================================================

Annotation keywords are accepted and have no effect on validation: ``title``, ``description``,
``default``, ``examples``, ``$comment``, ``deprecated``, ``readOnly``, ``writeOnly`` and ``format``
(2020-12 treats ``format`` as an annotation by default; it is *not* asserted), plus ``$schema``,
``$id``, ``$defs`` and ``definitions`` at the schema root.

Every check is linear in the instance: ``minLength``/``maxLength`` are ``len`` (code points),
``pattern`` runs the linear-time matcher, ``enum``/``const`` compare each value once. Each ``anyOf``
branch is evaluated at most once per value and depth within a call, so nested ``anyOf`` whose branches
share definitions (n levels would be 2**n paths) stay polynomial.

Any other keyword makes the constructor raise :class:`~webclient.UsageError` naming the keyword and
its location in the schema: a validator that silently ignored ``oneOf`` or ``uniqueItems`` would
accept arguments the tool author meant to refuse. Invalid schemas are refused the same way (a keyword
value of the wrong type, an invalid regular expression, a dangling ``$ref``, a ``$ref``/``anyOf``
cycle that would evaluate the same instance forever). Error messages name keywords and schema
locations, never keyword values.

The schema is walked once, at construction, into a graph of small check functions, so a call does
no schema interpretation. Validation never raises for any instance.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias
from urllib.parse import unquote

from ._errors import UsageError
from ._regex import Pattern, PatternError

#: Schema objects entered on one evaluation path (each ``properties``/``items`` step, each ``$ref``
#: and each ``anyOf`` branch counts one), and the deepest schema nesting accepted at construction.
#: Tool-argument schemas are shallow: OpenAI's strict structured outputs allow at most 10 levels of
#: object nesting (5 at launch). Each entry costs two or three Python frames, so 128 keeps a
#: validation under ~400 frames, inside CPython's default recursion limit of 1000 and the smaller
#: stacks of WebAssembly builds. Deeper instances (possible only through a recursive ``$ref``) are rejected
#: with the keyword ``depth`` instead of raising ``RecursionError``.
MAX_DEPTH: Final = 128

#: Problem descriptions returned per call. The first few are what a log or a model-facing error
#: needs; the cap keeps a megabyte array of bad elements from producing a megabyte of descriptions.
MAX_PROBLEMS: Final = 32

#: The signature every validator has after :func:`validator_for`.
Validator: TypeAlias = Callable[[object], list[str]]

_TYPE_NAMES: Final = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_ANNOTATIONS: Final = frozenset({
    "$comment", "default", "deprecated", "description", "examples", "format", "readOnly", "title",
    "writeOnly",
})
_ROOT_ONLY: Final = frozenset({"$defs", "$id", "$schema", "definitions"})
#: Dialects in which siblings of ``$ref`` are ignored (so applying them would change the meaning).
_OLD_DIALECT: Final = re.compile(r"json-schema\.org/draft-0[3-7]/schema")
_ROOT = "(root)"

# An instance location, built lazily as a linked list: (parent, segment). A ``str`` segment is an
# already escaped "/name" (or "/*"); an ``int`` is an array index. Rendered only when a problem is
# recorded, so a passing validation builds no strings.
_Path: TypeAlias = "tuple[_Path, str | int] | None"
_Check: TypeAlias = Callable[[object, "_Path", int, "_Sink"], None]


def _render(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, segment = path
        parts.append(segment if isinstance(segment, str) else f"/{segment}")
    return "".join(reversed(parts)) or _ROOT


def _escape(name: str) -> str:
    """One RFC 6901 reference token, with its leading slash."""
    return "/" + name.replace("~", "~0").replace("/", "~1")


class _Full(Exception):
    """The sink holds MAX_PROBLEMS descriptions: stop validating."""


class _Stop(Exception):
    """A probe saw its first problem: the branch fails, no need to look further."""


#: One call's memo of ``anyOf`` branch results: (id of the branch node, id of the instance, depth)
#: -> accepted. Nested ``anyOf`` whose branches share definitions would otherwise evaluate the same
#: branch on the same value once per path to it: 2**n times for n nested two-branch levels. With it
#: each (branch, value, depth) is evaluated at most once per call, so the work stays polynomial
#: (nodes x values x MAX_DEPTH at worst). The ids are stable for the call: every value is reachable
#: from the instance being validated, which the caller keeps alive until the call returns.
_Memo: TypeAlias = "dict[tuple[int, int, int], bool]"


class _Sink:
    """Collects problem descriptions for one call, and holds the call's branch memo and probe."""

    __slots__ = ("memo", "probe", "problems")

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.memo: _Memo = {}
        self.probe: _Sink = _Probe(self.memo)

    def add(self, path: _Path, keyword: str) -> None:
        self.problems.append(f"{_render(path)}: {keyword}")
        if len(self.problems) >= MAX_PROBLEMS:
            raise _Full


class _Probe(_Sink):
    """A sink for ``anyOf`` branches: the first problem decides, nothing is recorded."""

    __slots__ = ()

    def __init__(self, memo: _Memo) -> None:
        self.problems = []
        self.memo = memo
        self.probe = self

    def add(self, path: _Path, keyword: str) -> None:
        raise _Stop


class _Node:
    """One compiled schema: the checks to run on an instance, and the nodes that see the *same*
    instance (``$ref`` targets and ``anyOf`` branches), kept for the no-progress cycle check."""

    __slots__ = ("checks", "location", "same_instance")

    def __init__(self, location: str) -> None:
        self.checks: list[_Check] = []
        self.same_instance: list[_Node] = []
        self.location = location


def _run(node: _Node, instance: object, path: _Path, depth: int, sink: _Sink) -> None:
    if depth > MAX_DEPTH:
        sink.add(path, "depth")
        return
    for check in node.checks:
        check(instance, path, depth, sink)


def _passes(node: _Node, instance: object, path: _Path, depth: int, sink: _Sink) -> bool:
    """Whether ``node`` accepts ``instance`` at ``depth``, found once per call (see ``_Memo``)."""
    key = (id(node), id(instance), depth)
    known = sink.memo.get(key)
    if known is not None:
        return known
    try:
        _run(node, instance, path, depth, sink.probe)
    except _Stop:
        known = False
    else:
        known = True
    sink.memo[key] = known
    return known


# -- JSON data model ---------------------------------------------------------------------------

_JSON_TYPE: Final[dict[type, str]] = {
    dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
    int: "integer", float: "number",
}


def _json_type(value: object) -> str | None:
    """The JSON type name of ``value`` (``"integer"`` for ``int``, ``"number"`` for a finite float),
    or ``None`` for anything that is not JSON data (including NaN and +-Infinity)."""
    name = _JSON_TYPE.get(type(value))
    if name is None:  # subclasses; bool before int
        for kind, kind_name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                                (dict, "object"), (list, "array")):
            if isinstance(value, kind):
                name = kind_name
                break
    if name == "number" and isinstance(value, float) and not math.isfinite(value):
        return None
    return name


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar_key(value: object) -> tuple[str, object] | None:
    """A hashable key under which JSON-equal scalars collide (``1`` and ``1.0``, never ``true``)."""
    name = _json_type(value)
    if name in ("integer", "number"):
        return ("n", value)
    if name in ("string", "boolean", "null"):
        return (name, value)
    return None


def _json_equal(a: object, b: object) -> bool:
    """JSON Schema equality, iteratively (no recursion limit to hit)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        else:
            kx, ky = _scalar_key(x), _scalar_key(y)
            if kx is None or ky is None or kx != ky:
                return False
    return True


# -- compilation -------------------------------------------------------------------------------

def _where(location: str) -> str:
    return location if len(location) <= 120 else location[:117] + "..."


def _name(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 40 else text[:37] + "..."


class _Compiler:
    """Walks a schema once and builds its :class:`_Node` graph."""

    def __init__(self, schema: Mapping[str, object] | bool) -> None:
        self.nodes: list[_Node] = []
        self.defs: dict[str, dict[str, _Node]] = {"$defs": {}, "definitions": {}}
        dialect = schema.get("$schema") if isinstance(schema, Mapping) else None
        self.old_dialect = isinstance(dialect, str) and _OLD_DIALECT.search(dialect) is not None
        #: The member names the schema spells (see the module docstring): a pointer shows only these.
        self.declared = _declared_names(schema)
        self.root = _Node("#")
        if isinstance(schema, Mapping):
            # Placeholders first, so a $ref may point at a definition not compiled yet (or at itself).
            pending: list[tuple[_Node, object]] = []
            for section, table in self.defs.items():
                members = schema.get(section)
                if members is None:
                    continue
                if not isinstance(members, Mapping):
                    raise UsageError(f"invalid schema: {section} must be an object (at #)")
                for name, sub in members.items():
                    if not isinstance(name, str):
                        raise UsageError(f"invalid schema: {section} keys must be strings (at #)")
                    node = _Node(f"#/{section}{_escape(name)}")
                    table[name] = node
                    pending.append((node, sub))
            for node, sub in pending:
                self.fill(node, sub, depth=1, root=False)
        self.fill(self.root, schema, depth=0, root=True)
        self.check_progress()

    def compile(self, schema: object, location: str, depth: int) -> _Node:
        node = _Node(location)
        self.fill(node, schema, depth, root=False)
        return node

    def fill(self, node: _Node, schema: object, depth: int, *, root: bool) -> None:
        """Compile ``schema`` into the (possibly placeholder) ``node``."""
        self.nodes.append(node)
        where = node.location
        if depth > MAX_DEPTH:
            raise UsageError(f"invalid schema: nested deeper than {MAX_DEPTH} levels (at {_where(where)})")
        if schema is True:
            return
        if schema is False:
            node.checks.append(_false)
            return
        if not isinstance(schema, Mapping):
            raise UsageError(f"invalid schema: a schema must be an object or a boolean (at {_where(where)})")
        for key in schema:
            if not isinstance(key, str):
                raise UsageError(f"invalid schema: keyword {_name(key)} is not a string (at {_where(where)})")
            if key in _ROOT_ONLY and not root:
                raise UsageError(f"unsupported schema: keyword {key!r} is only supported at the root"
                                 f" (at {_where(where)})")
            if key not in _IMPLEMENTED and key not in _ANNOTATIONS and key not in _ROOT_ONLY:
                raise UsageError(f"unsupported schema keyword {_name(key)} (at {_where(where)})")
        _check_annotations(schema, where)
        if self.old_dialect and "$ref" in schema and any(k in _IMPLEMENTED for k in schema if k != "$ref"):
            raise UsageError(f"unsupported schema: $ref with sibling keywords under a draft-04..07 $schema,"
                             f" where the siblings would be ignored (at {_where(where)})")
        for keywords, build in _GROUPS:
            if any(k in schema for k in keywords):
                check = build(self, schema, where, depth, node)
                if check is not None:
                    node.checks.append(check)

    def resolve(self, ref: str, where: str) -> _Node:
        if ref == "#":
            return self.root
        for section, table in self.defs.items():
            prefix = f"#/{section}/"
            if ref.startswith(prefix):
                token = unquote(ref[len(prefix):])
                if "/" in token:
                    break
                name = token.replace("~1", "/").replace("~0", "~")
                target = table.get(name)
                if target is None:
                    raise UsageError(f"invalid schema: dangling $ref into {section} (at {_where(where)})")
                return target
        raise UsageError("unsupported schema: $ref must be '#', '#/$defs/<name>' or '#/definitions/<name>'"
                         f" (at {_where(where)})")

    def check_progress(self) -> None:
        """Refuse a cycle of ``$ref``/``anyOf`` edges: it would evaluate one instance forever."""
        state: dict[int, int] = {}  # id(node) -> 1 on the DFS stack, 2 done
        for start in self.nodes:
            if id(start) in state:
                continue
            stack: list[tuple[_Node, int]] = [(start, 0)]
            state[id(start)] = 1
            while stack:
                node, i = stack.pop()
                if i < len(node.same_instance):
                    stack.append((node, i + 1))
                    nxt = node.same_instance[i]
                    seen = state.get(id(nxt))
                    if seen == 1:
                        raise UsageError("invalid schema: $ref/anyOf cycle that never descends into the"
                                         f" instance (at {_where(nxt.location)})")
                    if seen is None:
                        state[id(nxt)] = 1
                        stack.append((nxt, 0))
                else:
                    state[id(node)] = 2


def _false(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
    sink.add(path, "false")


def _check_annotations(schema: Mapping[str, object], where: str) -> None:
    for key, kinds in (("title", str), ("description", str), ("$comment", str), ("format", str),
                       ("$schema", str), ("$id", str), ("deprecated", bool), ("readOnly", bool),
                       ("writeOnly", bool), ("examples", list | tuple)):
        if key in schema and not isinstance(schema[key], kinds):
            raise UsageError(f"invalid schema: {key} has the wrong type (at {_where(where)})")


def _count(schema: Mapping[str, object], keyword: str, where: str) -> int | None:
    """A non-negative integer keyword value (``2.0`` counts as an integer), or ``None`` if absent."""
    if keyword not in schema:
        return None
    value = schema[keyword]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageError(f"invalid schema: {keyword} must be a non-negative integer (at {_where(where)})")
    return value


def _bound(schema: Mapping[str, object], keyword: str, where: str) -> int | float | None:
    if keyword not in schema:
        return None
    value = schema[keyword]
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))):
        raise UsageError(f"invalid schema: {keyword} must be a finite number (at {_where(where)})")
    return value


def _schema_list(schema: Mapping[str, object], keyword: str, where: str) -> list[object]:
    value = schema[keyword]
    if not isinstance(value, list | tuple) or not value:
        raise UsageError(f"invalid schema: {keyword} must be a non-empty array (at {_where(where)})")
    return list(value)


# Each builder reads its group of keywords (see ``_GROUPS``) from one schema object at nesting
# ``level`` and returns a check, or ``None`` when the group cannot fail (for example ``items: true``).

def _build_type(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    value = s["type"]
    names = [value] if isinstance(value, str) else value
    if (not isinstance(names, list | tuple) or not names or any(n not in _TYPE_NAMES for n in names)
            or len(set(names)) != len(names)):
        raise UsageError(f"invalid schema: type must be a type name or a non-empty array of distinct"
                         f" type names (at {_where(where)})")
    allowed = frozenset(names)
    integral = "integer" in allowed and "number" not in allowed

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        name = _json_type(instance)
        if name in allowed or (name == "integer" and "number" in allowed):
            return
        if integral and isinstance(instance, float) and name == "number" and instance.is_integer():
            return
        sink.add(path, "type")

    return check


def _build_enum(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    members = s["enum"]
    if not isinstance(members, list | tuple):
        raise UsageError(f"invalid schema: enum must be an array (at {_where(where)})")
    return _membership(list(members), "enum")


def _build_const(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    return _membership([s["const"]], "const")


def _membership(members: list[object], keyword: str) -> _Check:
    """Scalars are looked up in a set; containers are compared one by one."""
    keys = set()
    containers = []
    for member in members:
        key = _scalar_key(member)
        if key is None:
            containers.append(member)
        else:
            keys.add(key)

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        key = _scalar_key(instance)
        if key is not None:
            if key in keys:
                return
        elif any(_json_equal(instance, m) for m in containers):
            return
        sink.add(path, keyword)

    return check


def _build_numeric(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    bounds = [(k, _bound(s, k, where)) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
    minimum, maximum, ex_minimum, ex_maximum = (b for _, b in bounds)

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        if not _is_number(instance):
            return
        x: Any = instance
        finite = not isinstance(x, float) or math.isfinite(x)
        if minimum is not None and not (finite and x >= minimum):
            sink.add(path, "minimum")
        if maximum is not None and not (finite and x <= maximum):
            sink.add(path, "maximum")
        if ex_minimum is not None and not (finite and x > ex_minimum):
            sink.add(path, "exclusiveMinimum")
        if ex_maximum is not None and not (finite and x < ex_maximum):
            sink.add(path, "exclusiveMaximum")

    return check


def _build_string(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    min_length = _count(s, "minLength", where) or 0
    max_length = _count(s, "maxLength", where)
    search = None
    if "pattern" in s:
        pattern = s["pattern"]
        if not isinstance(pattern, str):
            raise UsageError(f"invalid schema: pattern must be a string (at {_where(where)})")
        try:
            search = Pattern(pattern).search
        except PatternError as exc:
            raise UsageError(f"{'unsupported' if exc.unsupported else 'invalid'} schema: {exc}"
                             f" (at {_where(where)})") from None

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        if not isinstance(instance, str):
            return
        n = len(instance)
        if n < min_length:
            sink.add(path, "minLength")
        if max_length is not None and n > max_length:
            sink.add(path, "maxLength")
        if search is not None and not search(instance):
            sink.add(path, "pattern")

    return check


def _build_array(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    min_items = _count(s, "minItems", where) or 0
    max_items = _count(s, "maxItems", where)
    items: _Node | None = None
    if "items" in s:
        if isinstance(s["items"], list | tuple):
            raise UsageError(f"unsupported schema: the array form of items (tuple validation)"
                             f" (at {_where(where)})")
        items = c.compile(s["items"], f"{where}/items", level + 1)
        if not items.checks:
            items = None

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        if not isinstance(instance, list):
            return
        n = len(instance)
        if n < min_items:
            sink.add(path, "minItems")
        if max_items is not None and n > max_items:
            sink.add(path, "maxItems")
        if items is not None:
            for i, element in enumerate(instance):
                _run(items, element, (path, i), depth + 1, sink)

    return check


def _build_object(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    properties: dict[str, tuple[str, _Node]] = {}
    declared = s.get("properties", {})
    if not isinstance(declared, Mapping):
        raise UsageError(f"invalid schema: properties must be an object (at {_where(where)})")
    for name, sub in declared.items():
        if not isinstance(name, str):
            raise UsageError(f"invalid schema: property names must be strings (at {_where(where)})")
        segment = _escape(name)
        properties[name] = (segment, c.compile(sub, f"{where}/properties{segment}", level + 1))
    required = s.get("required", [])
    if (not isinstance(required, list | tuple) or not all(isinstance(n, str) for n in required)
            or len(set(required)) != len(required)):
        raise UsageError(f"invalid schema: required must be an array of distinct strings (at {_where(where)})")
    missing_at = [(name, _escape(name)) for name in required]
    additional = s.get("additionalProperties", True)
    closed = additional is False
    extra: _Node | None = None
    if not isinstance(additional, bool):  # (a schema: compile refuses anything else, naming where)
        extra = c.compile(additional, f"{where}/additionalProperties", level + 1)
        if not extra.checks:
            extra = None
    checked = [(name, seg, sub) for name, (seg, sub) in properties.items() if sub.checks]
    declared = c.declared

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        if not isinstance(instance, dict):
            return
        for name, segment in missing_at:
            if name not in instance:
                sink.add((path, segment), "required")
        for name, segment, sub in checked:
            if name in instance:
                _run(sub, instance[name], (path, segment), depth + 1, sink)
        if closed:
            if any(key not in properties for key in instance):
                sink.add(path, "additionalProperties")
        elif extra is not None:
            for key, value in instance.items():
                if key not in properties:
                    _run(extra, value, (path, _escape(key) if key in declared else "/*"), depth + 1, sink)

    return check


def _build_any_of(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    branches = [c.compile(sub, f"{where}/anyOf/{i}", level + 1)
                for i, sub in enumerate(_schema_list(s, "anyOf", where))]
    node.same_instance.extend(branches)
    if any(not b.checks for b in branches):
        return None  # a branch that accepts everything: anyOf cannot fail (branches still compiled)

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        for branch in branches:
            if _passes(branch, instance, path, depth + 1, sink):
                return
        sink.add(path, "anyOf")

    return check


def _build_ref(c: _Compiler, s: Mapping[str, object], where: str, level: int, node: _Node) -> _Check | None:
    ref = s["$ref"]
    if not isinstance(ref, str):
        raise UsageError(f"invalid schema: $ref must be a string (at {_where(where)})")
    target = c.resolve(ref, where)
    node.same_instance.append(target)

    def check(instance: object, path: _Path, depth: int, sink: _Sink) -> None:
        _run(target, instance, path, depth + 1, sink)

    return check


_Builder: TypeAlias = Callable[[_Compiler, Mapping[str, object], str, int, _Node], "_Check | None"]

#: The implemented keywords, in evaluation (and so reporting) order. Keywords that constrain the
#: same kind of instance are compiled together into one check, so an instance of another kind costs
#: one ``isinstance`` per group rather than one per keyword.
_GROUPS: Final[tuple[tuple[tuple[str, ...], _Builder], ...]] = (
    (("type",), _build_type),
    (("enum",), _build_enum),
    (("const",), _build_const),
    (("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"), _build_numeric),
    (("minLength", "maxLength", "pattern"), _build_string),
    (("minItems", "maxItems", "items"), _build_array),
    (("required", "properties", "additionalProperties"), _build_object),
    (("anyOf",), _build_any_of),
    (("$ref",), _build_ref),
)
_IMPLEMENTED: Final = frozenset(k for keywords, _ in _GROUPS for k in keywords)


class SchemaValidator:
    """A compiled JSON Schema (the subset in the module docstring).

    ``SchemaValidator(schema)`` raises :class:`~webclient.UsageError` for a schema that uses an
    unsupported keyword or is invalid. ``validator(instance)`` returns ``[]`` when the instance is
    valid, else up to :data:`MAX_PROBLEMS` content-free descriptions; it never raises.
    """

    __slots__ = ("_root",)

    def __init__(self, schema: Mapping[str, object] | bool) -> None:
        self._root = _Compiler(schema).root

    def __call__(self, instance: object) -> list[str]:
        """Validate ``instance`` (JSON data as ``json.loads`` returns it); see the class docstring."""
        sink = _Sink()
        with contextlib.suppress(_Full):  # MAX_PROBLEMS reached: the list is complete enough
            _run(self._root, instance, None, 0, sink)
        return sink.problems


class JsonschemaValidator:
    """The same call shape, backed by the ``jsonschema`` library (full 2020-12 support by default).

    ``jsonschema`` is imported here, on construction; without it this raises
    :class:`~webclient.UsageError`. The dialect follows the schema's ``$schema`` (default 2020-12);
    ``format`` is an annotation, as in :class:`SchemaValidator`. An invalid schema raises
    ``UsageError`` naming the failed meta-schema keyword and where. Calls return content-free
    descriptions in the same ``"<pointer>: <keyword>"`` form (an object key appears only if the schema
    declares that name somewhere), and an exception inside ``jsonschema`` (for example an unresolvable
    remote ``$ref``) becomes one description rather than propagating.
    """

    __slots__ = ("_declared", "_validator")

    def __init__(self, schema: Mapping[str, object] | bool) -> None:
        try:
            jsonschema: Any = importlib.import_module("jsonschema")
        except ImportError:
            raise UsageError("JsonschemaValidator needs the jsonschema package, which is not installed") from None
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            where = "#" + "".join(_escape(str(p)) for p in exc.absolute_path)
            raise UsageError(f"invalid schema: fails the meta-schema keyword {_name(exc.validator)}"
                             f" (at {_where(where)})") from None
        self._validator: Any = cls(schema)
        self._declared = _declared_names(schema)

    def __call__(self, instance: object) -> list[str]:
        """Validate ``instance``; see the class docstring."""
        problems: list[str] = []
        reported: set[tuple[str, str]] = set()
        try:
            for error in self._validator.iter_errors(instance):
                base = "".join(f"/{p}" if isinstance(p, int) else self._segment(p) for p in error.absolute_path)
                keyword = "false" if error.validator is None else str(error.validator)
                if keyword == "required" and isinstance(error.instance, dict):
                    locations = [base + _escape(n) for n in error.validator_value
                                 if isinstance(n, str) and n not in error.instance]
                else:
                    locations = [base]
                for location in locations:
                    if (location, keyword) not in reported:
                        reported.add((location, keyword))
                        problems.append(f"{location or _ROOT}: {keyword}")
                if len(problems) >= MAX_PROBLEMS:
                    return problems[:MAX_PROBLEMS]
        except Exception as exc:  # a validator must not raise on an instance
            problems.append(f"{_ROOT}: jsonschema raised {type(exc).__name__}")
        return problems

    def _segment(self, key: object) -> str:
        return _escape(key) if isinstance(key, str) and key in self._declared else "/*"


def _declared_names(schema: object) -> frozenset[str]:
    """Every name the schema itself spells as a member name (``properties`` keys, ``required``)."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping):
                names.update(k for k in props if isinstance(k, str))
            required = node.get("required")
            if isinstance(required, list | tuple):
                names.update(n for n in required if isinstance(n, str))
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return frozenset(names)


class _CallableValidator:
    """Normalises a caller's callable to the validator shape (see :func:`validator_for`)."""

    __slots__ = ("_function",)

    def __init__(self, function: Callable[[object], object]) -> None:
        self._function = function

    def __call__(self, instance: object) -> list[str]:
        try:
            verdict = self._function(instance)
        except Exception as exc:  # a raising validator is a rejection, not a crash
            return [f"{_ROOT}: validator raised {type(exc).__name__}"]
        if verdict is True or verdict is None:
            return []
        if verdict is False:
            return [f"{_ROOT}: validator"]
        if isinstance(verdict, list | tuple) and all(isinstance(p, str) for p in verdict):
            return list(verdict[:MAX_PROBLEMS])
        return [f"{_ROOT}: validator returned an unsupported value"]


def validator_for(spec: object) -> Validator:
    """Turn what a caller registered for a tool into a validator ``(instance) -> list[str]``.

    * a mapping (or ``True``/``False``) is a JSON Schema: a :class:`SchemaValidator` (which raises
      ``UsageError`` at once for an unsupported or invalid schema);
    * a :class:`SchemaValidator` or :class:`JsonschemaValidator` is returned as it is;
    * any other callable is wrapped: ``True`` or ``None`` means valid (so "raise on error" validators
      work), ``False`` is a rejection, a list or tuple of strings is the problem list (the caller's own
      words, passed through as given, at most :data:`MAX_PROBLEMS`), any other return value is a
      rejection (fail closed), and an ``Exception`` raised by it is a rejection naming only the
      exception class; it never propagates.

    Anything else raises ``UsageError``.
    """
    if isinstance(spec, SchemaValidator | JsonschemaValidator):
        return spec
    if isinstance(spec, Mapping | bool):
        return SchemaValidator(spec)
    if callable(spec):
        return _CallableValidator(spec)
    raise UsageError("a tool validator must be a JSON Schema (mapping) or a callable")
