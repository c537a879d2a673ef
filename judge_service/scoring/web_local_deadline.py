"""The answer's warning when the local judge cannot score a batch before its deadline.

The local SmolLM2 judge scores about one sample in ten seconds on a small CPU machine. A batch
it cannot finish in ``timeout_s`` still ends, its unscored samples masked ``timeout``; the
warning says why at the top of the answer, so a trainer sees "too slow for this deadline", not
a mystery.
"""

from __future__ import annotations

from judge_service import wire
from judge_service.core.batch_plan import BatchPlan
from judge_service.core.settings import Settings
from judge_service.judging.names import LOCAL_JUDGE_NAME, LOCAL_JUDGE_SAMPLES_PER_S
from judge_service.scoring.web_batching import batch_timeout_s


def local_judge_warnings(
    request: wire.RewardRequest, plan: BatchPlan, *, settings: Settings
) -> list[str]:
    """A warning when the batch's local-judge calls need longer than its deadline at the
    rate assumed of the local judge (``LOCAL_JUDGE_SAMPLES_PER_S``); no warning otherwise
    (and none without the local judge).
    The plan's panel is the request's, or the default one it resolved to."""
    local = sum(1 for entry in plan.judges if entry.name == LOCAL_JUDGE_NAME)
    if not local:
        return []
    calls = local * len(request.samples)
    rate = LOCAL_JUDGE_SAMPLES_PER_S  # the same for a configured JS_LOCAL_MODEL_URL
    need_s, timeout_s = calls / rate, batch_timeout_s(request, settings=settings)
    if need_s <= timeout_s:
        return []
    return [
        f"the local judge serves ~{rate:.2g} samples/s; {calls} samples need ~{need_s:.0f} s, "
        f"beyond timeout_s={timeout_s:g}: samples not scored by then are masked as timeout. "
        "Give a longer timeout_s, smaller batches, or real judge models (judges, "
        "JS_DEFAULT_JUDGES)."
    ]
