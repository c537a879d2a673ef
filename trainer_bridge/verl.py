"""veRL adapter: ``compute_score(data_source, solution_str, ground_truth, extra_info)``.

veRL wants a number per call, so a masked sample gives ``score`` 0.0 with
``valid: False`` next to it; read ``valid`` to drop it from the batch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from trainer_bridge.client import RewardClient


def _client(extra_info: dict[str, Any] | None) -> tuple[RewardClient, dict[str, Any]]:
    info = dict(extra_info or {})
    base_url = info.pop("judge_service_url", None) or os.environ.get("JUDGE_SERVICE_URL")
    if not base_url:
        raise ValueError("set JUDGE_SERVICE_URL or extra_info['judge_service_url']")
    api_key = info.pop("judge_service_key", None) or os.environ.get("JUDGE_SERVICE_KEY")
    return RewardClient(base_url, api_key), info


def _as_dict(result: Any) -> dict[str, Any]:
    return {
        "score": result.reward if result.valid else 0.0,
        "hack_score": result.hack_score,
        "valid": result.valid,
        "failure_kind": result.failure_kind,
    }


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None],
) -> list[dict[str, Any]]:
    """The batch variant (veRL's BatchRewardManager): one service call for the batch."""
    client, info = _client(extra_infos[0] if extra_infos else None)
    samples = []
    for index, (source, solution, truth, extra) in enumerate(
        zip(data_sources, solution_strs, ground_truths, extra_infos, strict=True)
    ):
        prompt = (extra or {}).get("prompt") or (extra or {}).get("question") or source
        samples.append(
            {
                "id": str(index),
                "prompt": prompt,
                "completion": solution,
                "reference": truth,
                "metadata": {"data_source": source},
            }
        )
    results = client.score(
        samples,
        rubric=info.get("rubric"),
        judges=info.get("judges"),
        run_id=info.get("run_id"),
        step=info.get("step"),
        detail="compact",
    )
    return [_as_dict(r) for r in results]


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None
) -> dict[str, Any]:
    """One rollout: ``{"score", "hack_score", "valid", "failure_kind"}``."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]
