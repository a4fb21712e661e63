"""A reason, or None: how a check says no.

A function that tells whether something may be done, shown or used returns
the reason it may not as a sentence the user can act on, and None when it
may: `why_not_<x>` (why_not_writable, why_not_a_figure, ...) or, for a
difference, `why_<x>_differs`. Its docstring says "Why ..., or None when
...". A caller prints the reason as it is, or tests it against None.
"""
from __future__ import annotations

from typing import TypeAlias

Reason: TypeAlias = str | None
