"""``GET /runs`` and ``GET /runs/{run_id}``: a training run's curves, behind the review sign-in.

The same visitors as ``/review`` (a reviewer or admin key, by the page's cookie session or
``Authorization: Bearer``); without one the sign-in form answers 401 and brings the visitor
back here once signed in.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from judge_service.core.api.deps import SessionDep
from judge_service.core.api.web.pages import page_scope, refusal, render, viewer
from judge_service.runs import web_view as run_view

router = APIRouter(include_in_schema=False)


@router.get("/runs", response_class=HTMLResponse)
def runs_list(request: Request, session: SessionDep) -> HTMLResponse:
    """The runs with their latest step, each linked to its page."""
    who = viewer(request, session)
    refused = refusal(who, next_path="/runs")
    if refused is not None:
        return refused
    assert who.key is not None
    project = page_scope(who.key).see
    return HTMLResponse(
        run_view.runs_page(session=session, key=who.key, csrf=who.csrf, project=project)
    )


@router.get("/runs/{run_id:path}", response_class=HTMLResponse)
def run_detail(run_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    """Reward, hack rate, agreement and dead groups per step, with alarms and flagged rollouts."""
    who = viewer(request, session)
    refused = refusal(who, next_path=f"/runs/{quote(run_id, safe='')}")
    if refused is not None:
        return refused
    assert who.key is not None
    project = page_scope(who.key).see
    html = run_view.run_page(
        session=session, run_id=run_id, key=who.key, csrf=who.csrf, project=project
    )
    if html is None:
        return render(
            "missing.html", status=404, key=who.key, what=f"No scored batches for run {run_id!r}."
        )
    return HTMLResponse(html)
