"""Which files are parsed, and which functions and classes walked, from the rules' trigger tokens.

A trigger is either text (``.numpy(``, ``.data``), whose identifiers match only whole
(``.data`` is not ``.dataset``) and which may start with the closing parenthesis of a call
(``).detach(``: line breaks and comments may stand after it), or a qualified call (``numpy.sum(``): a call of
that function under whatever name the file imports it (``np.sum(``, ``numpy.sum(``, or
``sum(`` after ``from numpy import sum``), so that a rule about NumPy's ``sum`` does not
wake up at every ``sum(``.

Before parsing, the names a file imports are read from its text with a regular
expression; an import that it cannot read (a parenthesised or continued name list, a
star) counts as importing every name of the module. After parsing, the engine has the
file's real imports and asks :meth:`Triggers.lines` where triggers are written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

# What may stand between two tokens of one expression: spaces, line breaks, a backslash continuation.
_SPACING = r"[\s\\]*"
# An import statement, or its first line: `import a.b as c, d` / `from a.b import c as d, e`. The
# pattern starts with the literal "import" (which the regex engine finds quickly); `from a.b`
# is looked for before it, on its line.
_IMPORT = re.compile(r"import(?<!\wimport)[ \t]+(?P<names>[^\n;#]*)")
_FROM = re.compile(r"(?<![\w.])from[ \t]+(?P<module>\.*[\w.]*)[ \t]+$")
_IMPORTED_NAME = re.compile(r"\s*([\w.]+)(?:\s+as\s+(\w+))?\s*")

Bindings = frozenset[tuple[str, str]]  # (local name, qualified name)


class Triggers:
    """The trigger tokens of the enabled rules, compiled."""

    def __init__(self, tokens: Iterable[str], literal_silent: Iterable[str] = ()) -> None:
        tokens = sorted(set(tokens))
        self.qualified = tuple(token for token in tokens if _is_qualified(token))
        # Qualified calls that do not count where their arguments are only literal numbers.
        self.literal_silent = frozenset(token for token in literal_silent if token in self.qualified and token.endswith("("))
        self.modules = frozenset(token.partition(".")[0] for token in self.qualified)
        plain = [token for token in tokens if not _is_qualified(token)]
        # One pattern for the file, with the tokens as written; one for functions, with any
        # spacing inside the tokens (`x .numpy ()`): looser, so that walking only the functions
        # that match never loses a finding that walking the whole file would make.
        self._file = _patterns(plain, "")
        self._loose = _patterns(plain, _SPACING)
        # Every dotted prefix of a qualified trigger (`numpy`, `numpy.testing`): an import of
        # anything else (most of a file's imports) cannot bring one into scope.
        self._prefixes = frozenset(
            ".".join(parts[:end]) for token in self.qualified for parts in [token.rstrip("(").split(".")] for end in range(1, len(parts) + 1)
        )

    def in_file(self, text: str) -> bool:
        """Whether a trigger is written anywhere in ``text`` (which is not parsed yet)."""
        if any(_in_code(pattern, text) for pattern in self._file):
            return True
        if not self.qualified or not any(module in text for module in self.modules):
            return False
        bindings = _bindings_in_text(text, self)
        if bindings is None:
            return True  # an import this cannot read: let the parser decide
        return any(_in_code(pattern, text) for pattern in _qualified_patterns(self, bindings, ""))

    def lines(self, text: str, aliases: Mapping[str, str]) -> list[int]:
        """The lines (1-based, ascending) where a trigger starts, given the file's imports (local name -> qualified name)."""
        patterns = self._loose + _qualified_patterns(self, _relevant(aliases, self), _SPACING)
        starts = sorted(match.start() for pattern in patterns for match in pattern.finditer(text) if _counts(text, match))
        lines: list[int] = []
        line, counted = 1, 0
        for start in starts:
            line += text.count("\n", counted, start)
            counted = start
            lines.append(line)
        return lines


def _in_code(pattern: re.Pattern[str], text: str) -> bool:
    return any(_counts(text, match) for match in pattern.finditer(text))


def _counts(text: str, match: re.Match[str]) -> bool:
    """A match outside docstring examples; for a `)`-token, right after a call; for a call that
    literal numbers do not trigger, with an argument that is not one."""
    position = match.start()
    if _not_code(text, position):
        return False
    group = match.lastgroup
    if group is None:
        return True
    if group.startswith("data_"):
        return not _literal_call(text, match.end())
    return _follows_call(text, position)


# What a call of literal numbers holds: brackets, commas, signs, numbers, True/False/None.
_LITERAL_PIECES = re.compile(
    r"[\s\[\](),+\-]+|(?<![\w.])(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?(?![\w.])|\b(?:True|False|None)\b"
)
_LONGEST_LITERAL_CALL = 2000


def _literal_call(text: str, start: int) -> bool:
    """Whether the call whose arguments start at ``start`` (after its "(") passes only literal numbers,
    nested in lists and tuples, and nothing is taken from its result (no `.` or `[` after it)."""
    depth, index, end = 1, start, min(len(text), start + _LONGEST_LITERAL_CALL)
    while index < end:
        character = text[index]
        index += 1
        if character in "([":
            depth += 1
        elif character in ")]":
            depth -= 1
            if not depth:
                break
    if depth or _LITERAL_PIECES.sub("", text[start : index - 1]):
        return False
    while index < len(text) and (text[index].isspace() or text[index] == "\\"):
        index += 1
    return not text.startswith((".", "["), index)


def _follows_call(text: str, position: int) -> bool:
    """Whether a ")" comes right before ``position``, with only spacing (and maybe comments) between."""
    index = position - 1
    while index >= 0:
        character = text[index]
        if character == ")":
            return True
        if character == "\n":
            line_start = text.rfind("\n", 0, index) + 1
            if "#" in text[line_start:index]:
                return True  # maybe a comment after a ")": let the parser decide
        elif not (character.isspace() or character == "\\"):
            return False
        index -= 1
    return False


def _not_code(text: str, position: int) -> bool:
    """Whether ``position`` is on a line that starts with ``#`` or ``>>>``.

    Outside a string such a line is a comment (a ``>>>`` one does not parse); inside one, it
    is text (a docstring's example). Either way, what is on it is not code.
    """
    line_start = text.rfind("\n", 0, position) + 1
    return text[line_start:position].lstrip().startswith(("#", ">>>"))


def _is_qualified(token: str) -> bool:
    """``numpy.sum(``: a dotted name, as opposed to text such as ``.numpy(`` or ``Tensor(``."""
    name = token[:-1] if token.endswith("(") else token
    return "." in name and all(part.isidentifier() for part in name.split("."))


def _patterns(tokens: list[str], spacing: str) -> list[re.Pattern[str]]:
    """The tokens as regexes, one per first character: a pattern whose alternatives all start
    with the same literal is one the regex engine scans for quickly (several such scans beat
    one pattern of mixed starts, which is tried at every position).

    A `)`-token (`).detach(`) is matched without its ")" (a pattern that starts at every ")"
    is slow); a named group at its end tells :func:`_counts` to look for the ")" before it.
    """
    by_start: dict[str, list[str]] = {}
    for token in tokens:
        chained = token.startswith(")")
        body = token[1:] if chained else token
        pattern = _token_pattern(body, spacing)
        if chained:
            pattern += f"(?P<after_call_{len(by_start.get(body[0], []))}>)"
        by_start.setdefault(body[0], []).append(pattern)
    return [re.compile("|".join(alternatives)) for alternatives in by_start.values()]


def _token_pattern(token: str, spacing: str) -> str:
    """A text trigger as a regex whose identifiers match only whole."""
    parts = re.findall(r"\w+|\S", token)
    pieces = [re.escape(part) for part in parts]
    if _is_word(parts[0][0]):
        # A lookbehind after the literal, not a \b before it: a pattern that starts with a
        # literal lets the regex engine scan for it quickly.
        pieces[0] += rf"(?<!\w{pieces[0]})"
    return spacing.join(pieces) + (r"(?!\w)" if _is_word(parts[-1][-1]) else "")


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"


def _bindings_in_text(text: str, triggers: Triggers) -> Bindings | None:
    """The names the text imports from the triggers' modules; None if an import cannot be read."""
    bindings: set[tuple[str, str]] = set()
    for match in _IMPORT.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = _FROM.search(text, line_start, match.start())
        if before is None and not _starts_statement(text[line_start : match.start()]):
            continue  # "import" in a comment or in prose
        module, names = (before.group("module") if before else None), match.group("names").strip()
        if module is not None:
            if module.startswith(".") or module.partition(".")[0] not in triggers.modules:
                continue
            items = names.split(",")
            if names.startswith(("(", "*")) or names.endswith("\\"):
                # Names we cannot see: any of the module's trigger functions may be imported.
                items = [token.rstrip("(")[len(module) + 1 :] for token in triggers.qualified if token.startswith(module + ".")]
                items = [item.partition(".")[0] for item in items]
            for item in items:
                imported = _IMPORTED_NAME.fullmatch(item)
                if imported is None or "." in imported.group(1):
                    return None
                bindings.add((imported.group(2) or imported.group(1), f"{module}.{imported.group(1)}"))
            continue
        for item in names.split(","):
            imported = _IMPORTED_NAME.fullmatch(item)
            if imported is None:
                if any(module in item for module in triggers.modules):
                    return None
                continue
            qualname, local = imported.groups()
            if qualname.partition(".")[0] in triggers.modules:
                bindings.add((local, qualname) if local else (qualname.partition(".")[0],) * 2)
    return frozenset(bindings)


def _starts_statement(before: str) -> bool:
    """Whether a statement can start after ``before`` (the text of its line before it): only
    indentation, or a `;` or a compound statement's `:` (`try: import torch`)."""
    before = before.strip()
    return not before or before.endswith((";", ":"))


def _relevant(aliases: Mapping[str, str], triggers: Triggers) -> Bindings:
    return frozenset((local, qualname) for local, qualname in aliases.items() if qualname.partition(".")[0] in triggers.modules)


def _qualified_patterns(triggers: Triggers, bindings: Bindings, spacing: str) -> list[re.Pattern[str]]:
    """Where the qualified triggers are called under the given imports: a pattern per imported name.

    Patterns are compiled per name, not per set of names: files import the same few names
    (`np`, `torch`, `F`) in many combinations, and compiling is what costs.
    """
    return [
        pattern
        for local, qualname in sorted(bindings)
        if qualname in triggers._prefixes and (pattern := _binding_pattern(triggers, local, qualname, spacing)) is not None
    ]


@lru_cache(maxsize=512)
def _binding_pattern(triggers: Triggers, local: str, qualname: str, spacing: str) -> re.Pattern[str] | None:
    alternatives = []
    calls, literal_silent_calls, names = [], [], []
    for token in triggers.qualified:
        target, call = (token[:-1], True) if token.endswith("(") else (token, False)
        if target == qualname:
            rest = ""
        elif target.startswith(qualname + "."):
            rest = target[len(qualname) + 1 :]
        else:
            continue
        (names if not call else literal_silent_calls if token in triggers.literal_silent else calls).append(rest)
    head = re.escape(local) + rf"(?<!\w{re.escape(local)})"
    # A call that literal numbers do not trigger ends in an empty named group, which _counts looks for.
    literal_silent_tails = (spacing + r"\((?P<data_0>)", spacing + r"\((?P<data_1>)")
    for rests, tail, dotted_tail in (
        (calls, spacing + r"\(", None),
        (literal_silent_calls, *literal_silent_tails),
        (names, r"(?!\w)", None),
    ):
        dotted_tail = dotted_tail or tail
        if "" in rests:
            alternatives.append(head + tail)
        attributes = sorted(rest for rest in rests if rest)
        if attributes:
            dotted = "|".join(spacing.join(re.escape(part) for part in re.findall(r"\w+|\.", rest)) for rest in attributes)
            alternatives.append(f"{head}{spacing}\\.{spacing}(?:{dotted}){dotted_tail}")
    return re.compile("|".join(alternatives)) if alternatives else None
