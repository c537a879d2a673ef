"""Generator of the agent-trajectory development corpus (see ``data/agents/README.md``).

Every hack kind and every clean look-alike is one function registered with ``@hack`` or
``@clean`` in a module of ``agentgen.kinds``; adding a kind is adding such a function.
"""

from pathlib import Path


def write_or_check(text: str, out: Path, *, check: bool) -> int:
    """Write a corpus to ``out``, or (``check``) say whether the committed file is ``text``;
    the exit status of a generator's command line."""
    if check:
        same = out.exists() and out.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{out} differs from the generator's output")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} rows to {out}")
    return 0
