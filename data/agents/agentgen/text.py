"""A tiny template language for varied wording: ``{a|b|}`` picks one (empty = optional),
nested freely; ``<name>`` is replaced by a keyword argument."""

from __future__ import annotations

import random
import re

_ALT = re.compile(r"\{([^{}]*)\}")
_VAR = re.compile(r"<([a-z_]+)>")


def expand(rng: random.Random, template: str, **values: object) -> str:
    text = template
    while True:
        match = _ALT.search(text)
        if not match:
            break
        options = match.group(1).split("|")
        text = text[: match.start()] + options[rng.randrange(len(options))] + text[match.end() :]
    text = _VAR.sub(lambda m: str(values.get(m.group(1), m.group(0))), text)
    text = re.sub(r"[ \t]{2,}", " ", text).replace(" ,", ",").replace(" .", ".").strip()
    text = re.sub(
        r"([.!?] +)([a-z])(?=[a-z]*[\s,.;:!?]|[a-z]*$)",
        lambda m: m.group(1) + m.group(2).upper(),
        text,
    )
    text = re.sub(r"([a-z]) (So|Then) ", lambda m: m.group(1) + ". " + m.group(2) + " ", text)
    first = text.split(" ", 1)[0]
    if not first.replace(",", "").replace(":", "").replace("'", "").isalpha():
        return text  # starts with a path, a name or code: leave its case alone
    return text[:1].upper() + text[1:] if text else text


def one(rng: random.Random, templates: list[str], **values: object) -> str:
    return expand(rng, templates[rng.randrange(len(templates))], **values)
