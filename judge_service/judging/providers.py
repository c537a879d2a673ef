"""The model providers litellm knows: the ``openai`` of ``openai/gpt-4.1-mini``.

litellm calls no model whose string starts with anything else ("LLM Provider NOT provided",
with or without an ``api_base``), nor one that names no model after its provider, so a judge
spec naming one would be accepted and then mask every sample. The API refuses it up front
instead (:func:`judge_service.judging.panels.build_member`).

The list is litellm's own: the values of its ``LlmProviders`` enum (``litellm.provider_list``)
and its JSON-configured OpenAI-compatible providers, read from the installed package without
importing it: the import costs ~4 s of CPU, which the lean transport never pays.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import threading
from pathlib import Path

#: Where litellm lists its providers, under its package folder.
ENUM_FILE, ENUM_CLASS = "types/utils.py", "LlmProviders"
JSON_FILE = "llms/openai_like/providers.json"


_READING = threading.Lock()


def litellm_providers() -> frozenset[str] | None:
    """Every provider prefix litellm calls; None when it cannot be read (litellm missing or
    laid out otherwise: then no model string is refused for its provider). Read once, by
    one thread, however many batches build their panels at once."""
    with _READING:
        return _read_providers()


@functools.cache
def _read_providers() -> frozenset[str] | None:
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        enum = _enum_values(folder / ENUM_FILE)
        configured = json.loads((folder / JSON_FILE).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    if not enum or not isinstance(configured, dict):
        return None
    return frozenset(enum) | frozenset(configured)


_CLASS = re.compile(rf"^class {ENUM_CLASS}\b[^\n]*:\n((?:[ \t]+[^\n]*\n|\n)*)", re.M)
_MEMBER = re.compile(r"^[ \t]+[A-Z][A-Z0-9_]*\s*=\s*[\"']([^\"'\n]+)[\"']", re.M)


def _enum_values(path: Path) -> set[str]:
    """The string values assigned in the class ``ENUM_CLASS`` of ``path``, read as text.

    Not ``ast.parse``: CPython 3.11's AST objects keep one recursion counter per interpreter,
    so converting a file this large while other threads parse code (the detectors, other
    batches building their panels) fails with "AST constructor recursion depth mismatch".
    """
    found = _CLASS.search(path.read_text(encoding="utf-8"))
    return set(_MEMBER.findall(found.group(1))) if found else set()


def unusable_model(model: str) -> str | None:
    """Why litellm would not call the model string ``model`` (with a ``/``): a provider it
    does not know, or no model after the provider (``openai/``); None when it would."""
    providers = litellm_providers()
    provider, _, name = model.partition("/")
    if providers is not None and provider not in providers:
        return (
            f"{provider!r} is not a provider litellm knows (such as openai, anthropic, "
            "hosted_vllm; the list: https://docs.litellm.ai/docs/providers)"
        )
    if not name.strip():
        return f"it names no model after its provider (such as {provider}/gpt-4.1-mini)"
    return None
