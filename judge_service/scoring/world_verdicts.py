"""The sample metadata that carries an episode's end-state verdict, and who may set it.

An ended episode is scored as one sample whose ``metadata.world_verdict`` holds its verdict;
the ``world_end_state`` judge reads its reward from there. ``POST /v1/rewards`` refuses a
sample that sets it, so no request can hand itself a verdict: only the episode path does.
"""

from __future__ import annotations

from judge_service import wire
from judge_service.core.errors import ValidationFailed
from judge_service.domain import WORLD_VERDICT


def refuse_world_verdicts(body: wire.RewardRequest) -> None:
    """422 naming ``samples[i].metadata.world_verdict`` when a request sets it: only an
    episode of a world does (its reward is read from it)."""
    for index, sample in enumerate(body.samples):
        if WORLD_VERDICT in sample.metadata:
            field = f"samples[{index}].metadata.{WORLD_VERDICT}"
            raise ValidationFailed(
                f"{field}: only an episode of a world sets it (POST /v1/episodes/{{id}}/step "
                "scores the episode); leave it out of a request",
                detail={"field": field},
            )
