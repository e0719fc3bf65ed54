"""``--add-noqa``: a ``# noqa: CODE`` comment on each line with a finding, merged into one that is there.

Only comments are written: a line that ends inside a string or with a backslash
continuation cannot take one and is reported instead. Running it twice adds nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from typing import NamedTuple

from flake8_tensorconv.engine import NOQA
from flake8_tensorconv.findings import Finding
from flake8_tensorconv.source import Source


class NoqaResult(NamedTuple):
    text: str
    count: int  # lines that got a new or a longer noqa comment
    skipped: list[tuple[int, str]]  # (line, why no comment could go there)


def add_noqa(source: Source, findings: Iterable[Finding]) -> NoqaResult:
    codes_by_line: dict[int, set[str]] = {}
    for finding in findings:
        codes_by_line.setdefault(finding.start.line, set()).add(finding.code)
    try:
        comments, inside_strings = _comments_and_strings(source.normalized)
    except (tokenize.TokenError, SyntaxError) as error:
        return NoqaResult(source.text, 0, [(line, f"cannot tokenize the file: {error}") for line in sorted(codes_by_line)])
    edits: list[tuple[int, int, str]] = []
    skipped: list[tuple[int, str]] = []
    for line, codes in sorted(codes_by_line.items()):
        text = source.line(line)
        start_of_line = source.line_starts[line - 1]
        comment_column = comments.get(line)
        if comment_column is not None:
            match = NOQA.search(text, comment_column)
            if match is not None:
                if not match.group("codes"):
                    continue  # a bare noqa comment already silences every code
                existing = {code.upper() for code in re.split(r"[,\s]+", match.group("codes").strip())}
                if codes <= existing:
                    continue
                merged = ", ".join(sorted(existing | codes))
                start, end = match.span("codes")
                edits.append((start_of_line + start, start_of_line + end, merged))
                continue
        elif line in inside_strings:
            skipped.append((line, "the line ends inside a string, where a comment cannot go; add `# noqa` after the string by hand"))
            continue
        elif text.rstrip().endswith("\\"):
            skipped.append((line, "the line ends with a backslash continuation, where a comment cannot go"))
            continue
        content_end = len(text.rstrip())
        comment = f"  # noqa: {', '.join(sorted(codes))}"
        edits.append((start_of_line + content_end, start_of_line + content_end, comment))
    result = source.text
    for start, end, content in sorted(edits, reverse=True):
        result = result[:start] + content + result[end:]
    return NoqaResult(result, len(edits), skipped)


def _comments_and_strings(text: str) -> tuple[dict[int, int], set[int]]:
    """The column of each line's comment, and the lines whose end lies inside a string."""
    comments: dict[int, int] = {}
    inside: set[int] = set()
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+: f-strings are several tokens
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            comments.setdefault(token.start[0], token.start[1])
        elif token.type == tokenize.STRING:
            inside.update(range(token.start[0], token.end[0]))
        elif token.type == fstring_start:
            open_fstrings.append(token.start[0])
        elif token.type == fstring_end and open_fstrings:
            inside.update(range(open_fstrings.pop(), token.end[0]))
    return comments, inside
