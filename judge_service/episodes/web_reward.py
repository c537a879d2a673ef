"""An ended episode through the normal reward path: one sample of its run's step.

**The chain, from the end state to the reward** (drawn in docs/world.md, "The reward, step
by step"):

1. :func:`judge_service.world.verify.end_state_verdict`: the end state against the task's
   reference (pure; the world's part).
2. :func:`judge_service.episodes.episode.finish`: the episode's verdict (its tool answers as
   the call records: a write only a model could answer leaves it undetermined).
3. :func:`judge_service.episodes.store_play.played_in`: the verdict stored with the episode,
   in the step's transaction.
4. :func:`judge_service.episodes.routes.scored` calls :func:`score_episode` (here): the
   episode as one sample, submitted through ``app.state.submit_rewards``.
5. The queue: the batch stored and dispatched (``core.worker.dispatch``), scored by a
   worker's ``scoring.job.score_batch``.
6. The plugin judge ``world_end_state`` (``plugins/judges/world_end_state.py``): 1.0 or 0.0
   from the verdict; masked when the world could not decide.
7. The audit: the default detectors plus ``world_claims`` (a claim of success the end state
   contradicts), their penalty applied to the score.
8. :func:`judge_service.episodes.routes.reward_of`: the scored sample's reward, ``None``
   when the sample is masked or was not scored, so the step and its sample always agree.

An agent's action that is not a chat message (a tool call without its function, say) was
answered in the episode with a tool error; in the sample it is kept as its JSON text and the
episode scores 0.0, the reason named (:func:`scorable`). A malformed action is the agent's
failure, a reward like any other, never a masked sample.

The sample: id the episode's, prompt its opening (the messages up to and including the first
user turn: the system prompt and that turn), completion the rest, ``group_id`` the task (so
a GRPO group of one task has group statistics and the run's tiers see the task), metadata
``{"world_verdict": <the verdict>}``. The run page, tiers and review then see episodes as
they see any sample.

**Why through ``app.state.submit_rewards``.** There is one submission path (validate, store,
dispatch, wait, answer: ``scoring/web_submission.py``), and an episode's sample must take it,
with the wait and deadline of ``POST /v1/rewards``. That module is the scoring feature's web
layer, which no other feature may import (``tests/project/test_feature_rules.py``), and
moving it into the core would move scoring's whole request handling with it. So scoring's
declaration (``scoring/feature.py``, ``setup_app``) puts it on the app as
``app.state.submit_rewards``, beside the core's ``dispatcher`` and ``registry``; this module
reaches it through the request (typed by :class:`EpisodesState`). Before submitting, the
rewards route's gate is checked (no worker alive, the service stopping: 503).

Only this path sets ``world_verdict``: ``POST /v1/rewards`` refuses a sample that carries it
(:func:`~judge_service.scoring.world_verdicts.refuse_world_verdicts`), so a trainer cannot plant
its own end-state reward.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from judge_service import wire
from judge_service.audit.detectors import resolve_detectors
from judge_service.core.api.state import ServiceState
from judge_service.core.api.worker_gate import check_worker
from judge_service.core.projects import Scope, scope_of
from judge_service.domain import WORLD_VERDICT
from judge_service.episodes.store_inputs import EpisodeState

JUDGE = "world_end_state"
DETECTOR = "world_claims"


class Submitted(Protocol):
    """What the rewards path answers (``scoring.web_submission.Answer``), as read here."""

    status: str
    batch_id: str
    results: Any

    def to_json(self) -> str: ...


class SubmitRewards(Protocol):
    """``app.state.submit_rewards``: ``POST /v1/rewards``'s validate, store, dispatch, wait."""

    def __call__(
        self, body: wire.RewardRequest, *, state: Any, key: Any, scope: Scope
    ) -> Awaitable[Submitted]: ...


class EpisodesState(ServiceState, EpisodeState, Protocol):
    """The app's ``state`` as the episode routes read it: the service's parts, the cache of
    loaded worlds and scripts, and the rewards path an ended episode is scored by."""

    submit_rewards: SubmitRewards


def split_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict], list[dict]]:
    """``(prompt, completion)``: the messages up to and including the first user turn (an
    episode's opening observation: system prompt and first user turn), then the rest."""
    items = [dict(m) for m in messages]
    first_user = next((i for i, m in enumerate(items) if m.get("role") == "user"), 1)
    return items[: first_user + 1], items[first_user + 1 :]


#: The verdict's key naming the agent's messages that were not chat messages.
MALFORMED = "malformed"


def scorable(
    messages: Sequence[Any], verdict: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The messages as a sample holds them, and the verdict they are scored by: each message
    that is not a chat message becomes the agent's, its JSON as text, and the verdict says
    reward 0.0, naming each (``malformed``: ``messages[i].field: why``)."""
    kept: list[dict[str, Any]] = []
    malformed: list[str] = []
    for index, message in enumerate(messages):
        try:
            wire.Message.model_validate(message)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = "".join(f".{part}" for part in error.get("loc", ()))
            malformed.append(f"messages[{index}]{where}: {error['msg']}")
            text = json.dumps(message, ensure_ascii=False, default=str)
            kept.append({"role": "assistant", "content": text})
        else:
            kept.append(dict(message))
    if not malformed:
        return kept, dict(verdict)
    return kept, {**verdict, "reward": 0.0, "reached": False, MALFORMED: malformed}


def episode_request(
    *,
    episode_id: str,
    messages: Sequence[Mapping[str, Any]],
    verdict: Mapping[str, Any],
    run_id: str | None,
    step: int | None,
    task_id: str | None,
    detectors: list[str],
) -> wire.RewardRequest:
    """The one-sample request an episode is scored by (its malformed actions scored 0.0:
    :func:`scorable`); raises ``ValidationError`` when the sample is still not one the wire
    accepts."""
    messages, verdict = scorable(messages, verdict)
    prompt, completion = split_messages(messages)
    sample = {
        "id": episode_id,
        "group_id": task_id,
        "prompt": prompt,
        "completion": completion,
        "metadata": {WORLD_VERDICT: dict(verdict)},
    }
    return wire.RewardRequest.model_validate(
        {
            "samples": [sample],
            "judges": [{"name": JUDGE}],
            "detectors": detectors,
            "run_id": run_id,
            "step": step,
            # a retried end of the same episode finds its batch, not a second sample
            "idempotency_key": f"episode:{episode_id}",
        }
    )


def episode_detectors(state: EpisodesState) -> list[str]:
    """The service's default detectors (``JS_DETECTORS``, else every installed one that
    calls no model), with ``world_claims`` added when they leave it out."""
    names = resolve_detectors(None, settings=state.settings, registry=state.registry)
    return names if DETECTOR in names else [*names, DETECTOR]


def masked(episode_id: str, kind: wire.FailureKind, reason: str) -> dict[str, Any]:
    """A result with no reward, and why (never a silent 0)."""
    result = wire.SampleResult(
        id=episode_id, reward=None, valid=False, failure_kind=kind, failure_reason=reason
    )
    return result.model_dump(mode="json")


async def score_episode(
    request: Any,
    *,
    key: Any,
    episode_id: str,
    messages: list[dict],
    verdict: dict,
    run_id: str | None,
    step: int | None,
    task_id: str | None = None,
    project: str | None = None,
) -> dict:
    """Score an ended episode as one sample of ``run_id``/``step`` and wait for it, as
    ``POST /v1/rewards`` waits (its deadline: ``JS_DEFAULT_TIMEOUT_S``).

    Returns the sample's result as the wire's ``SampleResult`` JSON, findings included; a
    masked one with the reason when the messages are not a valid sample or the service
    stopped before it was scored. ``task_id`` groups the sample; ``project`` is the
    episode's (default: the caller's, as ``?project=`` names it). Raises the rewards route's
    errors (503 with no worker, 409 on a reused idempotency key)."""
    state: EpisodesState = request.app.state
    scope = Scope(project, project) if project else scope_of(key.project, _asked(request))
    try:
        body = episode_request(
            episode_id=episode_id,
            messages=messages,
            verdict=verdict,
            run_id=run_id,
            step=step,
            task_id=task_id,
            detectors=episode_detectors(state),
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error.get("loc", ()))
        return masked(episode_id, "bad_sample", f"not a valid sample: {where}: {error['msg']}")
    await check_worker(state)
    answer = await state.submit_rewards(body, state=state, key=key, scope=scope)
    if answer.status != "done" or not answer.results:
        return masked(
            episode_id,
            "timeout",
            f"the service stopped before the episode was scored; its batch {answer.batch_id} "
            f"resumes when the service is back: GET /v1/rewards/{answer.batch_id}",
        )
    result = json.loads(answer.to_json())["results"][0]
    return wire.SampleResult.model_validate(result).model_dump(mode="json")


def _asked(request: Any) -> str | None:
    """The ``?project=`` the caller named, as the routes' scope reads it."""
    params = getattr(request, "query_params", None)
    return params.get("project") if params is not None else None
