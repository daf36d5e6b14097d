"""Counts with their noun in the right number: '1 launch', '2 launches', never '1 launches' or 'launch(es)'.

Every line roofline prints with a count and a noun goes through `counted`, so a one-launch profile reads as
English and a reader never has to parse '(s)'."""

from __future__ import annotations

_IRREGULAR = {"launch": "launches", "entry": "entries", "match": "matches", "batch": "batches",
              "capture": "captures", "process": "processes", "box": "boxes"}


def plural(noun: str) -> str:
    """The plural of a (last) word: the table above, else -s. 'GPU event' -> 'GPU events'."""
    head, _, last = noun.rpartition(" ")
    many = _IRREGULAR.get(last) or (last[:-1] + "ies" if last.endswith("y") and last[-2:-1] not in "aeiou"
                                    else last + "s")
    return f"{head} {many}" if head else many


def counted(n: int | float, noun: str, many: str | None = None, *, thousands: bool = True) -> str:
    """'1 launch', '0 launches', '1,200 launches': the count (with thousands separators unless thousands=False)
    and the noun, singular only for exactly one. `many` overrides the plural ('1 time', '2 times' need none)."""
    shown = f"{n:,}" if thousands and isinstance(n, int) else f"{n}"
    return f"{shown} {noun if n == 1 else (many or plural(noun))}"
