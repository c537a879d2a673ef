"""The documents half of a forge job: chunk, synthesise through the models, group by document.

Models are called only through :class:`judge_service.judging.client.ModelClient`; the forge gets an
``ask`` callable. The generator and verifiers answer at temperature 0; the solver at 1.0, so
its ``samples_per_task`` answers are samples, each cached under its own number.
"""

from __future__ import annotations

import asyncio
from typing import Any

from judge_service.core.settings import Settings
from judge_service.domain import CallUsage
from judge_service.forge.documents import DEFAULT_CHUNK_CHARS, Document, chunk
from judge_service.forge.similar import families
from judge_service.forge.synthesis import REASONS, GapBand, SynthesisResult, synthesise
from judge_service.judging.client import get_client
from judge_service.judging.client_options import model_options, model_spec

SOLVER_TEMPERATURE = 1.0


def role_models(options: dict[str, Any], settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """litellm call options per role; an unset role falls back to the generator's model. A
    model that cannot be resolved is a ValueError naming its option (``option solver: ...``)."""
    generator = model_options(options.get("generator"), settings, option="generator")
    verifiers = [  # a null in the list is no model, not "unset"
        model_options(model_spec(v, f"verifiers[{n}]"), settings, option=f"verifiers[{n}]")
        for n, v in enumerate(options.get("verifiers") or [])
    ] or [generator]
    solver = (
        model_options(options["solver"], settings, option="solver")
        if options.get("solver") is not None
        else generator
    )
    return {"generator": [generator], "verifier": verifiers, "solver": [solver]}


async def _synthesise(
    job_id: str, documents: list[Document], options: dict[str, Any], settings: Settings
) -> tuple[SynthesisResult, int, CallUsage]:
    models = role_models(options, settings)
    client = get_client(settings)
    usage = CallUsage()

    async def ask(role: str, index: int, messages: list, schema: dict, sample: int) -> dict:
        nonlocal usage
        spec = models[role][index]
        temperature = SOLVER_TEMPERATURE if role == "solver" else 0.0
        reply, cost = await client.complete_json(
            spec["model"],
            messages,
            schema,
            cache_key_parts={
                "forge_job": job_id,
                "role": role,
                "index": index,
                "sample": sample,
                "messages": messages,  # the forge's prompts hold no random fence
            },
            api_base=spec.get("api_base"),
            api_key=spec.get("api_key"),
            timeout=float(spec.get("timeout_s", 120.0)),
            sampling={"temperature": temperature, "max_tokens": 300},
            response_format_kind=spec.get("response_format_kind", "json_schema"),
            free=bool(spec.get("free", False)),
            schema_name=f"forge_{role}",
        )
        usage += cost
        return reply

    chunks = [
        c
        for d in documents
        for c in chunk(d, int(options.get("chunk_chars") or DEFAULT_CHUNK_CHARS))
    ]
    result = await synthesise(
        chunks,
        ask,
        verifiers=len(models["verifier"]),
        samples_per_task=int(options.get("samples_per_task", 4)),
        max_tasks=int(options.get("max_tasks", 50)),
        band=GapBand(float(options.get("min_pass", 0.0)), float(options.get("max_pass", 0.75))),
    )
    return result, len(chunks), usage


def forge_documents(
    job_id: str, documents: list[Document], options: dict[str, Any], settings: Settings
) -> tuple[SynthesisResult, dict[str, Any], list[tuple[str, list[str], list[int]]], CallUsage]:
    """The synthesis result, the job's counts, its families (one per document,
    ``(name, terms, task indices)``, named by the document and its questions' top terms),
    and what the model calls cost."""
    result, n_chunks, usage = asyncio.run(_synthesise(job_id, documents, options, settings))
    by_document: dict[str, list[int]] = {}
    for index, task in enumerate(result.tasks):
        by_document.setdefault(task.chunk.document_id, []).append(index)
    grouped = []
    for document, members in by_document.items():
        terms = families([result.tasks[i].question for i in members], distance=2.0)[0].terms
        grouped.append((f"{document}: {' / '.join(terms)}" if terms else document, terms, members))
    counts = {
        "documents": len(documents),
        "chunks": n_chunks,
        "candidates": result.candidates,
        "tasks": len(result.tasks),
        "families": len(grouped),
        "dropped": {reason: result.dropped.get(reason, 0) for reason in REASONS},
    }
    return result, counts, grouped, usage
