"""``llm``: an LLM judge. Pointwise score, rubric checklist, or relative scoring of a GRPO group.

Text under evaluation is fenced data (see :mod:`.llm_prompts`); only the structured verdict
counts. Model calls go through :mod:`judge_service.judging.client`: limits, retries, cache and cost.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Sequence
from typing import Any, Literal

from judge_service_plugins.judges.llm_prompts import (
    as_text,
    clip,
    content,
    group_schema,
    render,
    rubric_schema,
    rubric_score,
    template_digest,
    verdict_schema,
)

from judge_service.contracts import GroupScorer, JudgeContext, UsesLLM
from judge_service.domain import CallUsage, JudgeScore, Rubric, Sample
from judge_service.judging.client import ModelClient, get_client


class LLMJudge(GroupScorer, UsesLLM):
    """A judge backed by any litellm model (``openai/...``, ``hosted_vllm/...``, ...).

    ``api_base``/``api_key`` are sent only when given, so ``openai/...`` judges otherwise use
    ``OPENAI_API_BASE``/``OPENAI_API_KEY``. ``response_format_kind="json_object"`` is for
    llama.cpp servers. ``client`` is the shared :class:`ModelClient`; without it the judge uses
    ``get_client(context.settings)``.
    """

    def __init__(
        self,
        *,
        model: str,
        name: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        top_p: float | None = None,
        seed: int | None = None,
        timeout_s: float = 60.0,
        relative: bool = False,
        response_format_kind: Literal["json_schema", "json_object"] = "json_schema",
        guidance: str | None = None,
        max_chars: int = 24_000,
        rationale_max_chars: int | None = None,
        score_levels: int | None = None,
        free: bool = False,
        concurrency: int | None = None,
        client: ModelClient | None = None,
    ) -> None:
        if response_format_kind not in ("json_schema", "json_object"):
            raise ValueError(f"unknown response_format_kind {response_format_kind!r}")
        self.name = name or model
        self.model, self.api_base, self.api_key = model, api_base, api_key
        sampling = {"temperature": temperature, "top_p": top_p, "seed": seed}
        self.sampling = {k: v for k, v in sampling.items() if v is not None}
        self.max_tokens, self.timeout_s, self.relative = max_tokens, timeout_s, relative
        self.response_format_kind = response_format_kind
        self.guidance, self.max_chars, self.free, self.client = guidance, max_chars, free, client
        self.concurrency, self.text_max = concurrency, rationale_max_chars
        self.levels = score_levels
        #: Made once: the same schema object on every call lets the client reuse its
        #: compiled validator without writing the schema out as a key each time.
        self.pointwise_schema = verdict_schema(self.text_max, self.levels)

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        """Pointwise score, or the rubric checklist when ``context.rubric`` has criteria."""
        rubric = context.rubric
        if rubric is not None and rubric.criteria:
            template, schema = "judge_rubric.jinja", rubric_schema(rubric, self.text_max)
            tokens = self.max_tokens + 80 * len(rubric.criteria)
        else:
            template, schema = "judge_pointwise.jinja", self.pointwise_schema
            tokens = self.max_tokens
        fields = self._fields(sample)
        verdict, usage = await self._ask(
            template, schema, tokens, {"sample": content(sample)}, context, fields, rubric=rubric
        )
        if template == "judge_pointwise.jinja":
            score = max(0.0, min(1.0, float(verdict["score"])))
            return JudgeScore(score=score, rationale=verdict["rationale"], usage=usage)
        assert rubric is not None
        answers = verdict["criteria"]
        met = {cid: bool(answer["met"]) for cid, answer in answers.items()}
        reasons = "; ".join(
            f"{cid}: {'yes' if answers[cid]['met'] else 'no'} ({answers[cid]['reason']})"
            for cid in met
        )
        return JudgeScore(
            score=rubric_score(rubric, met),
            rationale=f"{verdict['rationale']} [{reasons}]",
            components={f"rubric/{cid}": float(value) for cid, value in met.items()},
            usage=usage,
        )

    async def score_group(
        self, samples: Sequence[Sample], context: JudgeContext
    ) -> list[JudgeScore]:
        """Relative mode: all completions together, in order and reversed, averaged.

        Pointwise per sample when not ``relative``, with a rubric, or when the samples do not
        share one prompt. The group's usage is reported on its first score.
        """
        same_task = len({json.dumps(content(s) | {"completion": None}) for s in samples}) == 1
        rubric_mode = context.rubric is not None and bool(context.rubric.criteria)
        if not self.relative or rubric_mode or not same_task or len(samples) < 2:
            return list(await asyncio.gather(*(self.score(s, context) for s in samples)))
        forward, backward = await asyncio.gather(
            self._group_pass(list(samples), context), self._group_pass(samples[::-1], context)
        )
        backward = backward[::-1]
        scores = []
        for (score_a, why_a, usage_a), (score_b, why_b, usage_b) in zip(
            forward, backward, strict=True
        ):
            rationale = f"in order: {why_a} | reversed: {why_b}"
            scores.append(
                JudgeScore(
                    score=(score_a + score_b) / 2, rationale=rationale, usage=usage_a + usage_b
                )
            )
        return scores

    async def _group_pass(
        self, samples: list[Sample], context: JudgeContext
    ) -> list[tuple[float, str, CallUsage]]:
        fields = self._fields(samples[0])
        fields["responses"] = [self._clip(s.transcript()) for s in samples]
        parts = {"group": [content(s) for s in samples]}
        tokens = self.max_tokens * len(samples)
        verdict, usage = await self._ask(
            "judge_group.jinja",
            group_schema(len(samples), self.text_max, self.levels),
            tokens,
            parts,
            context,
            fields,
        )
        items = [verdict[f"response_{i}"] for i in range(1, len(samples) + 1)]
        usages = [usage] + [CallUsage()] * (len(samples) - 1)
        return [
            (max(0.0, min(1.0, float(it["score"]))), it["rationale"], u)
            for it, u in zip(items, usages, strict=True)
        ]

    def _clip(self, text: str) -> str:
        return clip(text, self.max_chars)

    def _fields(self, sample: Sample) -> dict[str, Any]:
        reference = None if sample.reference is None else self._clip(as_text(sample.reference))
        return {
            "task": self._clip(as_text(sample.prompt)),
            "response": self._clip(sample.transcript()),
            "reference": reference,
            "context": [self._clip(doc) for doc in sample.context or []],
            "guidance": self.guidance,
        }

    async def _ask(
        self,
        template: str,
        schema: dict[str, Any],
        max_tokens: int,
        parts: dict[str, Any],
        context: JudgeContext,
        fields: dict[str, Any],
        rubric: Rubric | None = None,
    ) -> tuple[dict[str, Any], CallUsage]:
        """Render the template around fenced data (on a cache miss: ``messages`` is made by
        the client when it needs them) and ask the model for the verdict."""
        messages = functools.partial(render, template, fields, rubric)
        key_parts = {
            **parts,
            "template": f"{template}:{template_digest(template)}",
            "system": template_digest("judge_system.jinja"),
            "guidance": self.guidance,
            "max_chars": self.max_chars,
            "rubric": None if rubric is None else [rubric.ref, rubric.model_dump(mode="json")],
        }
        client = self.client or get_client(context.settings)
        return await client.complete_json(
            self.model,
            messages,
            schema,
            cache_key_parts=key_parts,
            api_base=self.api_base,
            api_key=self.api_key,
            timeout=self.timeout_s,
            deadline=context.deadline,
            sampling={**self.sampling, "max_tokens": max_tokens},
            response_format_kind=self.response_format_kind,
            free=self.free,
            concurrency=self.concurrency,
        )
