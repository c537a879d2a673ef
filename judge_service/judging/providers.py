"""The model providers litellm knows: the ``openai`` of ``openai/gpt-4.1-mini``.

litellm calls no model whose string starts with anything else ("LLM Provider NOT provided",
with or without an ``api_base``), so a judge spec naming one would be accepted and then mask
every sample. The API refuses it up front instead (:mod:`judge_service.judging.members`).

The list is litellm's own: the values of its ``LlmProviders`` enum (``litellm.provider_list``)
and its JSON-configured OpenAI-compatible providers, read from the installed package without
importing it: the import costs ~4 s of CPU, which the lean transport never pays.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
from pathlib import Path

#: Where litellm lists its providers, under its package folder.
ENUM_FILE, ENUM_CLASS = "types/utils.py", "LlmProviders"
JSON_FILE = "llms/openai_like/providers.json"


@functools.cache
def litellm_providers() -> frozenset[str] | None:
    """Every provider prefix litellm calls; None when it cannot be read (litellm missing or
    laid out otherwise: then no model string is refused for its provider)."""
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


def _enum_values(path: Path) -> set[str]:
    """The string values assigned in the class ``ENUM_CLASS`` of ``path``."""
    for node in ast.parse(path.read_bytes()).body:
        if isinstance(node, ast.ClassDef) and node.name == ENUM_CLASS:
            return {
                item.value.value
                for item in node.body
                if isinstance(item, ast.Assign)
                and isinstance(item.value, ast.Constant)
                and isinstance(item.value.value, str)
            }
    return set()


def unknown_provider(model: str) -> str | None:
    """Why litellm would not call the model string ``model`` (with a ``/``), or None."""
    providers = litellm_providers()
    provider = model.partition("/")[0]
    if providers is None or provider in providers:
        return None
    return (
        f"{provider!r} is not a provider litellm knows (such as openai, anthropic, "
        "hosted_vllm; the list: https://docs.litellm.ai/docs/providers)"
    )
