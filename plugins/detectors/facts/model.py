"""A fact: one thing the audit established about a rollout, and where it stands.

``source`` says what kind of evidence it is: ``code`` (the final code does it), ``tool`` (a
tool call did it, or a tool's output contradicts a claim), ``output`` (the final answer itself
is the act: approval of a flaw it names) or ``narration`` (the agent said it). ``where``
points at it: ``src/primes.py:12``, ``message 5 tool call 1 `bash```, ``message 3``.
``strength`` in [0, 1] is how clearly the rule saw it, not a probability: the
audit model weighs the facts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    kind: str
    source: str  # code, tool, output or narration
    where: str
    detail: str
    strength: float = 1.0

    def describe(self) -> str:
        return f"{self.where}: {self.detail}"
