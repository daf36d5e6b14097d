"""User text made safe for each place it is shown: a terminal (rich), Markdown, JUnit XML, a matplotlib label.

Kernel names, descriptions, device names, file paths and error messages come from files anyone can write (a
descriptor or results file in a pull request). Each renderer interprets some characters: rich reads `[...]` as
markup and `:name:` as emoji, matplotlib reads `$...$` as mathtext, Markdown reads `|` as a cell border, XML 1.0
cannot hold most control characters at all, and a terminal obeys escape sequences. Every renderer passes user
text through one function here, so a name like `t[/]x`, `$x$` or `a\\x1b[2Jb` is shown exactly as written and
never crashes, restyles or clears anything.
"""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls and DEL, lone surrogates (JSON can carry them; UTF-8 cannot), the two noncharacters XML
# refuses, and the bidirectional overrides that make text read differently from what it is ("Trojan source").
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINES = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, newlines: bool = True) -> str:
    """Control characters shown as visible escapes (`\\x1b`, `\\x00`, `\\r`, `\\ud800`); tabs kept.

    newlines=False also turns line breaks into spaces, for places that must stay on one line."""
    s = str(text)
    if not newlines:
        s = s.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
        return _UNSAFE_LINES.sub(_escape_char, s)
    return _UNSAFE.sub(_escape_char, s)


def literal(text: object, style: str = "") -> Any:
    """A rich Text that shows text as written: no markup, no emoji codes, control characters escaped."""
    # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
    from rich.text import Text

    return Text(clean(text), style=style)


def styled(text: object, style: str) -> Any:
    """Literal text in a style, for the cells roofline colours itself (FAILED in red): never markup strings."""
    return literal(text, style)


def markup(text: object) -> str:
    """Text to embed inside a rich markup string (progress and status lines): brackets escaped."""
    # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
    from rich.markup import escape

    return escape(clean(text, newlines=False))


_MD_SPECIAL = re.compile(r"([\\`*_\[\]!|~#])")


def md(text: object) -> str:
    """One Markdown table cell or list item, shown as written: one line; backslash, `|`, backtick, `*`, `_`, `[`,
    `]`, `!`, `~` and `#` backslash-escaped (a name like `![x](u)` must not become an image in a CI job summary,
    `_a_` must not turn italic); `<` as an entity, so no HTML tag renders."""
    s = _MD_SPECIAL.sub(r"\\\1", clean(text, newlines=False))
    return s.replace("&", "&amp;").replace("<", "&lt;")


def md_code(text: object) -> str:
    """Text as a Markdown code span (outside tables) that survives backticks in it: a longer fence."""
    s = clean(text, newlines=False)
    longest = max((len(run) for run in re.findall("`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows rather than runs: text starting with `=`, `+`, `-`, `@`, a tab or a carriage
    return gets a leading single quote (OWASP's advice against CSV injection). Numbers are left as numbers."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def html_text(text: object) -> str:
    """Text for an HTML page (element text or a quoted attribute): controls and bidi overrides made visible as for
    every other renderer, then `& < > " '` escaped."""
    import html  # lazy: not needed by `roofline analyze`, which imports this module (start-up)

    return html.escape(clean(text, newlines=False))


def xml(text: object) -> str:
    """Text XML 1.0 can hold (ElementTree escapes & < > and quotes itself; it does not drop invalid characters)."""
    return clean(text, newlines=True)


def mpl(text: object) -> str:
    """A matplotlib label shown as written: one line, every `$` escaped so mathtext never parses user text."""
    return clean(text, newlines=False).replace("$", "\\$")
