"""``GET /v1/judges/agreement``: each judge against human labels (kappa, rho, calibration)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from judge_service.core.api.deps import AnyKey, ScopeDep, SessionDep
from judge_service.judging import agreement
from judge_service.rubrics import wire as wire_rubrics
from judge_service.rubrics.store_labels import CONSENSUS, labeled_scores

router = APIRouter(prefix="/v1", tags=["judges"])


def _out(figures: agreement.JudgeFigures) -> wire_rubrics.JudgeAgreement:
    calibration = figures.calibration
    return wire_rubrics.JudgeAgreement(
        judge=figures.judge,
        labels=figures.labels,
        good=figures.good,
        bad=figures.bad,
        cohen_kappa=figures.cohen_kappa,
        spearman_rho=figures.spearman_rho,
        spearman_p=figures.spearman_p,
        calibration=wire_rubrics.Calibration(x=calibration[0], y=calibration[1])
        if calibration
        else None,
    )


@router.get("/judges/agreement", response_model=wire_rubrics.AgreementResponse)
def judge_agreement(
    session: SessionDep,
    key: AnyKey,
    scope: ScopeDep,
    run_id: str | None = None,
    threshold: Annotated[float, Query(gt=0, le=1)] = agreement.THRESHOLD,
):
    """Per judge: Cohen's kappa (score >= ``threshold`` counts as good) and Spearman's rho
    against the majority human label of each rollout, with counts, and the isotonic map a
    calibrated consensus (``calibrate: true``) uses once a judge has enough labels. The
    final reward is reported as ``consensus``."""
    pairs = labeled_scores(session=session, run_id=run_id, project=scope.see)
    figures = agreement.by_judge(((p.judge, p.score, p.good) for p in pairs), threshold=threshold)
    judges = [_out(f) for f in figures if f.judge != CONSENSUS]
    consensus = next((_out(f) for f in figures if f.judge == CONSENSUS), None)
    return wire_rubrics.AgreementResponse(
        threshold=threshold,
        min_labels_for_calibration=agreement.MIN_LABELS_FOR_CALIBRATION,
        judges=judges,
        consensus=consensus,
    )
