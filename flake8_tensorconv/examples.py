"""The fixtures as data: where they live, what each one expects and claims.

A fixture is a runnable snippet in ``fixtures/<CODE>/`` (the format is described
in ``fixtures/README.md``): ``NAME.py`` with ``# expect: TCVnnn`` markers and a
header of ``# key: value`` comment lines, ``NAME.fixed.py`` beside it, and
negatives named ``neg_*.py``. The lint and fix tests, the runtime harness
(``flake8_tensorconv.verify``) and the rule documentation all read them through
this module, which must not import torch or numpy.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

DEVICES = ("cpu", "cuda", "meta")
DEFAULT_DEVICES = ("cpu", "cuda")
COMPARE_MODES = ("no_grad",)
HEADER_KEYS = ("claim", "devices", "claim-devices", "fix-devices", "compare", "differs", "needs")

_CODE_DIRECTORY = re.compile(r"TCV[0-9]{3}")
# `# expect: TCV101` or, where a rule could report at the wrong node, with the 1-based column: `TCV104:12`.
_MARKER = re.compile(r"#\s*expect:\s*(?P<codes>TCV[0-9]{3}(?::[0-9]+)?(?:\s*,\s*TCV[0-9]{3}(?::[0-9]+)?)*)\s*$")
_HEADER_LINE = re.compile(r"#\s*(?P<key>[a-z][a-z-]*):\s*(?P<value>.*?)\s*$")
_CLAIM = re.compile(
    r"(?:(?P<kind>raises|warns)\s+(?P<category>[A-Za-z_][\w.]*)|(?P<holds>holds))\s*:\s*(?P<text>.*)$"
)
_REQUIREMENT = re.compile(r"(?P<package>[A-Za-z0-9_.-]+)\s*(?P<operator>>=|<=|==|!=|>|<)\s*(?P<version>[0-9][0-9.]*)$")


class FixtureError(Exception):
    """A fixture that does not follow fixtures/README.md; the message names the file."""


@dataclass(frozen=True)
class Claim:
    """What the original snippet does: ``raises``, ``warns`` or ``holds``.

    ``category`` is the exception or warning class name (empty for ``holds``);
    ``text`` is the message prefix, or the expression for ``holds``.
    """

    kind: str
    category: str
    text: str

    def message_prefix(self, device: str) -> str:
        """The expected message prefix with ``{device}`` spelled as torch prints it."""
        return self.text.replace("{device}", torch_device_name(device))

    def describe(self, device: str | None = None) -> str:
        """The claim as written, or as it reads on ``device``."""
        if self.kind == "holds":
            return f"holds: {self.text}"
        text = self.text if device is None else self.message_prefix(device)
        return f"{self.kind} {self.category}: {text}"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class Requirement:
    """One version bound from a ``needs`` header, e.g. ``numpy>=2``."""

    package: str
    operator: str
    version: str

    def satisfied_by(self, installed: str) -> bool:
        have, want = _version_tuple(installed), _version_tuple(self.version)
        width = max(len(have), len(want))
        have += (0,) * (width - len(have))
        want += (0,) * (width - len(want))
        return {
            ">=": have >= want,
            "<=": have <= want,
            "==": have == want,
            "!=": have != want,
            ">": have > want,
            "<": have < want,
        }[self.operator]

    def __str__(self) -> str:
        return f"{self.package}{self.operator}{self.version}"


@dataclass(frozen=True)
class Expectation:
    """A finding a fixture line must produce."""

    line: int
    code: str
    column: int | None = None  # 1-based, where the marker names one


@dataclass(frozen=True)
class Fixture:
    code: str
    name: str
    path: Path
    fixed_path: Path | None
    expectations: tuple[Expectation, ...]
    claims: tuple[Claim, ...]
    devices: tuple[str, ...]
    claim_devices: tuple[str, ...]
    fix_devices: tuple[str, ...]
    compare: tuple[str, ...]
    differs: frozenset[str]
    needs: tuple[Requirement, ...]
    # Header comment lines that are not keys: the fixture's own explanation.
    description: str

    @property
    def is_negative(self) -> bool:
        return self.name.startswith("neg_")

    @property
    def id(self) -> str:
        return f"{self.code}/{self.name}"

    @cached_property
    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @cached_property
    def fixed_source(self) -> str | None:
        return None if self.fixed_path is None else self.fixed_path.read_text(encoding="utf-8")

    @property
    def expected_findings(self) -> list[tuple[int, str]]:
        return [(expectation.line, expectation.code) for expectation in self.expectations]


def torch_device_name(device: str) -> str:
    """The device as torch prints it in messages (``cuda`` -> ``cuda:0``)."""
    return "cuda:0" if device == "cuda" else device


def fixtures_root() -> Path:
    """The fixtures folder: inside the package when installed, beside it in a checkout."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "fixtures", package.parent / "fixtures"):
        if candidate.is_dir():
            return candidate
    raise FixtureError(f"no fixtures folder in {package} or {package.parent}; reinstall flake8-tensorconv")


def rule_codes(root: Path | None = None) -> list[str]:
    """The codes that have a fixtures folder."""
    root = root or fixtures_root()
    return sorted(entry.name for entry in root.iterdir() if entry.is_dir() and _CODE_DIRECTORY.fullmatch(entry.name))


def fixtures_for(code: str, root: Path | None = None) -> list[Fixture]:
    """Every fixture of one rule, positives first, each group by name."""
    folder = (root or fixtures_root()) / code
    if not folder.is_dir():
        return []
    files = sorted(path for path in folder.glob("*.py"))
    fixed = {path.name[: -len(".fixed.py")]: path for path in files if path.name.endswith(".fixed.py")}
    originals = [path for path in files if not path.name.endswith(".fixed.py")]
    orphans = set(fixed) - {path.stem for path in originals}
    if orphans:
        raise FixtureError(f"{folder}: {', '.join(sorted(orphans))}.fixed.py without the original")
    fixtures = [load_fixture(path, code, fixed.get(path.stem)) for path in originals]
    return sorted(fixtures, key=lambda fixture: (fixture.is_negative, fixture.name))


def all_fixtures(root: Path | None = None) -> list[Fixture]:
    root = root or fixtures_root()
    return [fixture for code in rule_codes(root) for fixture in fixtures_for(code, root)]


def load_fixture(path: Path, code: str, fixed_path: Path | None = None) -> Fixture:
    """Parse one fixture file; raises FixtureError when it breaks the format."""
    text = path.read_text(encoding="utf-8")
    name = path.stem
    header, description = _header(text, path)
    expectations = _expectations(text, path)
    devices = _devices(header.get("devices"), DEFAULT_DEVICES, path, "devices")
    fixture = Fixture(
        code=code,
        name=name,
        path=path,
        fixed_path=fixed_path,
        expectations=expectations,
        claims=tuple(_claim(value, path) for value in header.get("claim", ())),
        devices=devices,
        claim_devices=_devices(header.get("claim-devices"), devices, path, "claim-devices"),
        fix_devices=_devices(header.get("fix-devices"), devices, path, "fix-devices"),
        compare=tuple(_words(header.get("compare"))),
        differs=frozenset(_words(header.get("differs"))),
        needs=tuple(_requirement(word, path) for word in _words(header.get("needs"))),
        description=description,
    )
    _validate(fixture)
    return fixture


def _header(text: str, path: Path) -> tuple[dict[str, list[str]], str]:
    header: dict[str, list[str]] = {}
    description: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        match = _HEADER_LINE.fullmatch(stripped)
        if match is None:
            description.append(stripped.lstrip("#").strip())
            continue
        key = match.group("key")
        if key not in HEADER_KEYS:
            raise FixtureError(f"{path}: unknown header key {key!r} (known: {', '.join(HEADER_KEYS)})")
        if key != "claim" and key in header:
            raise FixtureError(f"{path}: header key {key!r} given twice (only 'claim' repeats)")
        header.setdefault(key, []).append(match.group("value"))
    return header, "\n".join(description).strip()


def _expectations(text: str, path: Path) -> tuple[Expectation, ...]:
    found: list[Expectation] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.COMMENT or "expect:" not in token.string:
                continue
            match = _MARKER.fullmatch(token.string)
            if match is None:
                raise FixtureError(f"{path}:{token.start[0]}: malformed marker {token.string!r}")
            for entry in re.split(r"\s*,\s*", match.group("codes")):
                code, _, column = entry.partition(":")
                found.append(Expectation(token.start[0], code, int(column) if column else None))
    except (tokenize.TokenError, SyntaxError) as error:
        raise FixtureError(f"{path}: cannot tokenize: {error}") from None
    return tuple(sorted(found, key=lambda expectation: (expectation.line, expectation.code)))


def _claim(value: str, path: Path) -> Claim:
    match = _CLAIM.fullmatch(value)
    if match is None or not match.group("text"):
        raise FixtureError(f"{path}: claim {value!r} is not 'raises TYPE: PREFIX', 'warns CATEGORY: PREFIX' or 'holds: EXPR'")
    if match.group("holds"):
        expression = match.group("text")
        try:
            compile(expression, f"{path} (claim)", "eval")
        except SyntaxError as error:
            raise FixtureError(f"{path}: holds claim is not an expression: {error.msg}") from None
        return Claim("holds", "", expression)
    return Claim(match.group("kind"), match.group("category"), match.group("text"))


def _words(values: list[str] | None) -> Iterable[str]:
    for value in values or ():
        yield from (word for word in re.split(r"[,\s]+", value) if word)


def _devices(values: list[str] | None, default: tuple[str, ...], path: Path, key: str) -> tuple[str, ...]:
    if values is None:
        return default
    devices = tuple(_words(values))
    unknown = [device for device in devices if device not in DEVICES]
    if unknown:
        raise FixtureError(f"{path}: {key}: unknown device(s) {', '.join(unknown)} (known: {', '.join(DEVICES)})")
    return devices


def _requirement(word: str, path: Path) -> Requirement:
    match = _REQUIREMENT.fullmatch(word)
    if match is None:
        raise FixtureError(f"{path}: needs: {word!r} is not 'package>=version' (operators >=, <=, ==, !=, >, <)")
    return Requirement(match.group("package").lower(), match.group("operator"), match.group("version"))


def _version_tuple(version: str) -> tuple[int, ...]:
    """``2.13.0+cpu`` -> (2, 13, 0); pre-release and local parts are ignored."""
    match = re.match(r"[0-9]+(?:\.[0-9]+)*", version.strip())
    return tuple(int(part) for part in match.group().split(".")) if match else (0,)


def _validate(fixture: Fixture) -> None:
    where = fixture.path
    if fixture.is_negative:
        if fixture.expectations:
            raise FixtureError(f"{where}: a negative (neg_*) must not carry '# expect:' markers")
        if fixture.fixed_path is not None or fixture.claims:
            raise FixtureError(f"{where}: a negative has no fixed form and no claim")
    else:
        if not fixture.expectations:
            raise FixtureError(f"{where}: a positive needs at least one '# expect: {fixture.code}' marker")
        if not fixture.claims:
            raise FixtureError(f"{where}: a positive needs a '# claim:' header")
    for key, devices in (("claim-devices", fixture.claim_devices), ("fix-devices", fixture.fix_devices)):
        extra = set(devices) - set(fixture.devices)
        if extra:
            raise FixtureError(f"{where}: {key} lists {', '.join(sorted(extra))}, which is not in devices")
    unknown = set(fixture.compare) - set(COMPARE_MODES)
    if unknown:
        raise FixtureError(f"{where}: compare: unknown mode(s) {', '.join(sorted(unknown))} (known: no_grad)")


__all__ = [
    "Claim",
    "Expectation",
    "Fixture",
    "FixtureError",
    "Requirement",
    "all_fixtures",
    "fixtures_for",
    "fixtures_root",
    "load_fixture",
    "rule_codes",
    "torch_device_name",
]
