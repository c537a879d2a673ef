"""The run page and the list of runs as HTML: the run report, its plots, κ against human
labels, and the newest flagged rollouts.

One renderer for ``GET /runs/{run_id}`` and ``judge-service report RUN_ID --out FILE``, so
the file is the page. The figures are the run report's (``GET /v1/runs/{run_id}/report``),
not recomputed here; κ comes from the labels through :mod:`judge_service.judging.agreement`.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from judge_service.core.api.web.pages import render_text
from judge_service.core.storage.tables import ApiKeyRow
from judge_service.forge.store_runs import run_tiers
from judge_service.forge.tiers import TIERS
from judge_service.judging import agreement
from judge_service.rubrics.store_labels import CONSENSUS, labeled_scores
from judge_service.runs.report import FLAG, run_report
from judge_service.runs.store import run_samples
from judge_service.runs.store_reads import (
    flagged_rollouts,
    labelled_rewards,
    list_runs,
    one_judge_steps,
)

FLAGGED_SHOWN = 20


def kappa_by_step(pairs: list[tuple[int | None, float, bool]]) -> list[tuple[int, float]]:
    """Per step: Cohen's κ of the final reward (good at or above 0.5) against the labels;
    steps where κ is undefined (one class only, fewer than two labels) are left out."""
    by_step: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for step, reward, good in pairs:
        if step is not None:
            by_step[step].append((reward, good))
    found = []
    for step in sorted(by_step):
        kappa = agreement.figures(CONSENSUS, by_step[step]).cohen_kappa
        if kappa is not None:
            found.append((step, kappa))
    return found


def run_page(
    *,
    session: Session,
    run_id: str,
    key: ApiKeyRow | None = None,
    csrf: str = "",
    link_base: str = "",
    project: str | None = None,
) -> str | None:
    """The run page's HTML; None when the run has no scored batch (of ``project``; None: of
    any). ``link_base`` is put before the page's links (the file written by the CLI links to
    a running service)."""
    samples = run_samples(session=session, run_id=run_id, project=project)
    if not samples:
        return None
    report = run_report(run_id, samples)
    labelled = labelled_rewards(session=session, run_id=run_id, project=project)
    kappa = kappa_by_step(labelled)
    judges = agreement.by_judge(
        (p.judge, p.score, p.good)
        for p in labeled_scores(session=session, run_id=run_id, project=project)
    )
    stepped = [row for row in report["steps"] if row["step"] is not None]
    one_judge = one_judge_steps(session=session, run_id=run_id, project=project)
    # read only: stores no tier
    _, tier_shares = run_tiers(session=session, run_id=run_id, project=project)
    from judge_service.runs.plots import run_plots, tier_plot  # matplotlib: on first view

    return render_text(
        "run.html",
        run_id=run_id,
        report=report,
        latest=stepped[-1] if stepped else report["steps"][-1],
        unstepped=next((row for row in report["steps"] if row["step"] is None), None),
        plots=run_plots(report, kappa, one_judge=one_judge),
        one_judge=one_judge,
        tier_plot=tier_plot(tier_shares) if tier_shares else None,
        tier_shares=tier_shares,
        tiers=TIERS,
        kappa=dict(kappa),
        labels=len(labelled),
        judges=judges,
        flagged=flagged_rollouts(
            session=session, run_id=run_id, threshold=FLAG, limit=FLAGGED_SHOWN, project=project
        ),
        flag=FLAG,
        key=key,
        csrf=csrf,
        link_base=link_base,
        written_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def runs_page(
    *, session: Session, key: ApiKeyRow | None = None, csrf: str = "", project: str | None = None
) -> str:
    """Every run with a finished batch (of ``project``; None: of any), latest step, newest
    first."""
    runs = list_runs(session=session, project=project)
    return render_text("runs.html", runs=runs, key=key, csrf=csrf, link_base="")
