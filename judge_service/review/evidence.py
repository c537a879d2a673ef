"""What a reviewer sees of a rollout: excerpts of the task and transcript, verdicts, findings.

Review items store this snapshot, so the page shows what the decision was about even after
the batch is gone, and nothing unbounded lands in the queue.
"""

from __future__ import annotations

from typing import Any

from judge_service.domain import Outcome, Sample

PROMPT_CHARS = 800
TRANSCRIPT_CHARS = 2500
RATIONALE_CHARS = 600
FINDING_CHARS = 400


def clip(text: str | None, limit: int) -> str:
    """Head and tail of ``text``, the middle cut with a marker saying how much."""
    text = text or ""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def rollout_evidence(
    ref: str,
    batch_id: str,
    sample: Sample,
    outcome: Outcome,
    *,
    transcript_chars: int = TRANSCRIPT_CHARS,
) -> dict[str, Any]:
    """A JSON-ready summary of one scored rollout, bounded in size."""
    return {
        "ref": ref,
        "batch_id": batch_id,
        "sample_id": sample.id,
        "prompt": clip(sample.prompt_text(), PROMPT_CHARS),
        "completion": clip(sample.transcript(), transcript_chars),
        "reward": outcome.reward,
        "raw_reward": outcome.raw_reward,
        "valid": outcome.valid,
        "failure_kind": outcome.failure_kind,
        "hack_score": outcome.hack_score,
        "agreement": outcome.agreement,
        "components": dict(outcome.components),
        "judges": [
            {
                "judge": v.judge,
                "score": v.score,
                "rationale": clip(v.rationale, RATIONALE_CHARS),
                "error": clip(v.error, RATIONALE_CHARS) or None,
            }
            for v in outcome.judges
        ],
        "findings": [
            {
                "detector": f.detector,
                "kind": f.kind,
                "severity": f.severity,
                "confidence": f.confidence,
                "evidence": clip(f.evidence, FINDING_CHARS),
            }
            for f in outcome.findings
        ],
    }
