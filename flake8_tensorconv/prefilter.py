"""Which files are parsed, and which functions and classes walked, from the rules' trigger tokens.

A trigger is either text (``.numpy(``, ``.data``, ``Tensor(``), whose identifiers match
only whole (``.data`` is not ``.dataset``), or a qualified call (``numpy.sum(``): a call of
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
# An import statement, or its first line: `import a.b as c, d` / `from a.b import c as d, e`.
_IMPORT = re.compile(r"\b(?:from[ \t]+(?P<module>\.*[\w.]*)[ \t]+)?import[ \t]+(?P<names>[^\n;#]*)")
_IMPORTED_NAME = re.compile(r"\s*([\w.]+)(?:\s+as\s+(\w+))?\s*")

Bindings = frozenset[tuple[str, str]]  # (local name, qualified name)


class Triggers:
    """The trigger tokens of the enabled rules, compiled."""

    def __init__(self, tokens: Iterable[str]) -> None:
        tokens = sorted(set(tokens))
        plain = [token for token in tokens if not _is_qualified(token)]
        self.qualified = tuple(token for token in tokens if _is_qualified(token))
        self.modules = frozenset(token.partition(".")[0] for token in self.qualified)
        # One pattern for the file, with the tokens as written; one for functions, with any
        # spacing inside the tokens (`x .numpy ()`): looser, so that walking only the functions
        # that match never loses a finding that walking the whole file would make.
        self._plain = _file_pattern(plain) if plain else None
        self._plain_loose = re.compile("|".join(_token_pattern(token, _SPACING) for token in plain)) if plain else None
        # `from torch import Tensor as T` makes `T(` a call of the trigger `Tensor(`.
        self._call_names = frozenset(token[:-1] for token in plain if token.endswith("(") and token[:-1].isidentifier())

    def in_file(self, text: str) -> bool:
        """Whether a trigger is written anywhere in ``text`` (which is not parsed yet)."""
        if self._plain is not None and _in_code(self._plain, text):
            return True
        if not self.qualified or not any(module in text for module in self.modules):
            return False
        bindings = _bindings_in_text(text, self)
        if bindings is None:
            return True  # an import this cannot read: let the parser decide
        pattern = _qualified_pattern(self, bindings, "")
        return pattern is not None and _in_code(pattern, text)

    def lines(self, text: str, aliases: Mapping[str, str]) -> list[int]:
        """The lines (1-based, ascending) where a trigger starts, given the file's imports (local name -> qualified name)."""
        patterns = [self._plain_loose] if self._plain_loose is not None else []
        qualified = _qualified_pattern(self, _relevant(aliases, self), _SPACING)
        if qualified is not None:
            patterns.append(qualified)
        renamed = sorted(
            local for local, qualname in aliases.items() if qualname.rpartition(".")[2] in self._call_names and local != qualname.rpartition(".")[2]
        )
        if renamed:
            patterns.append(re.compile("|".join(_token_pattern(f"{local}(", _SPACING) for local in renamed)))
        starts = sorted(match.start() for pattern in patterns for match in pattern.finditer(text) if not _in_doctest(text, match.start()))
        lines: list[int] = []
        line, counted = 1, 0
        for start in starts:
            line += text.count("\n", counted, start)
            counted = start
            lines.append(line)
        return lines


def _in_code(pattern: re.Pattern[str], text: str) -> bool:
    return any(not _in_doctest(text, match.start()) for match in pattern.finditer(text))


def _in_doctest(text: str, position: int) -> bool:
    """Whether ``position`` is on a ``>>>`` line: in valid Python, only a string (a docstring's example) has one."""
    line_start = text.rfind("\n", 0, position) + 1
    return text[line_start:position].lstrip().startswith(">>>")


def _is_qualified(token: str) -> bool:
    """``numpy.sum(``: a dotted name, as opposed to text such as ``.numpy(`` or ``Tensor(``."""
    name = token[:-1] if token.endswith("(") else token
    return "." in name and all(part.isidentifier() for part in name.split("."))


def _file_pattern(tokens: list[str]) -> re.Pattern[str]:
    """The tokens as written, in one pattern that the regex engine scans quickly.

    Most tokens are calls (`tensor(`): they are found at their "(" (a rare character next to
    the letters the names start with), looking back for the name.
    """
    calls = [token for token in tokens if token.endswith("(")]
    others = [_token_pattern(token, "") for token in tokens if not token.endswith("(")]
    if calls:
        others.append(r"\((?:" + "|".join(_looking_back(token) for token in calls) + ")")
    return re.compile("|".join(others))


def _looking_back(token: str) -> str:
    escaped = re.escape(token)
    if _is_word(token[0]):
        return rf"(?<={escaped})(?<!\w{escaped})"
    return rf"(?<={escaped})"


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
        module, names = match.group("module"), match.group("names").strip()
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


def _relevant(aliases: Mapping[str, str], triggers: Triggers) -> Bindings:
    return frozenset((local, qualname) for local, qualname in aliases.items() if qualname.partition(".")[0] in triggers.modules)


@lru_cache(maxsize=256)
def _qualified_pattern(triggers: Triggers, bindings: Bindings, spacing: str) -> re.Pattern[str] | None:
    """Where the qualified triggers are called under the given imports."""
    alternatives = []
    for local, qualname in sorted(bindings):
        calls, names = [], []
        for token in triggers.qualified:
            target, call = (token[:-1], True) if token.endswith("(") else (token, False)
            if target == qualname:
                rest = ""
            elif target.startswith(qualname + "."):
                rest = target[len(qualname) + 1 :]
            else:
                continue
            (calls if call else names).append(rest)
        head = re.escape(local) + rf"(?<!\w{re.escape(local)})"
        for rests, tail in ((calls, spacing + r"\("), (names, r"(?!\w)")):
            if "" in rests:
                alternatives.append(head + tail)
            attributes = sorted(rest for rest in rests if rest)
            if attributes:
                dotted = "|".join(spacing.join(re.escape(part) for part in re.findall(r"\w+|\.", rest)) for rest in attributes)
                alternatives.append(f"{head}{spacing}\\.{spacing}(?:{dotted}){tail}")
    return re.compile("|".join(alternatives)) if alternatives else None
