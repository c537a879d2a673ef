"""The embedded service and the local judge's one-time build.

``serve`` answers at once on a fresh machine: llama.cpp's ``llama-server`` builds in the
background (:mod:`judge_service.judging.local_build`) while the deterministic judges and the audit
score. ``/readyz`` shows the build's stage; a batch that needs the local judge before it is
built is refused with 503 ``local_judge_starting`` and a ``Retry-After``, never accepted and
masked. With a broker, the workers (maybe on other machines) build their own, and the API
has nothing to check.
"""

from __future__ import annotations

from judge_service.core.batch_plan import BatchPlan
from judge_service.core.errors import LocalJudgeStarting
from judge_service.core.settings import Settings
from judge_service.judging.local_build import BuildState, machine_build
from judge_service.judging.names import LOCAL_JUDGE_NAME

#: Bounds of the ``Retry-After`` sent while the build runs.
MIN_RETRY_S, MAX_RETRY_S = 10, 60


def builds_here(settings: Settings) -> bool:
    """True when this process runs the local judge itself, so needs it built: embedded,
    with no ``JS_LOCAL_MODEL_URL``."""
    return settings.embedded and not settings.local_model_url


def start_build(settings: Settings) -> None:
    """Start the build in the background when this process needs it and it isn't done."""
    if builds_here(settings):
        machine_build().start_in_background()


def stop_build(settings: Settings) -> None:
    """Stop a build this process runs (the next start resumes it)."""
    if builds_here(settings):
        machine_build().stop()


def local_judge_status(settings: Settings) -> str:
    """What ``/readyz`` says of the local judge."""
    if settings.local_model_url:
        return f"served at {settings.local_model_url}"
    if not settings.embedded:
        return "run by the workers"
    return machine_build().state().describe()


def _plan_models(plan: BatchPlan) -> list[str]:
    """The judges and hindsight models a batch's plan asks."""
    return [entry.name for entry in [*plan.judges, *(plan.hindsight or [])]]


def retry_after_s(state: BuildState) -> int:
    """A guess of the build's time left, from its percentage, within the bounds."""
    left = float(MAX_RETRY_S)
    if state.stage.startswith("compiling ") and state.stage.endswith("%"):
        done = int(state.stage.removeprefix("compiling ").removesuffix("%"))
        if done > 0:
            left = state.elapsed_s * (100 - done) / done
    return int(min(MAX_RETRY_S, max(MIN_RETRY_S, left)))


def require_local_judge(plan: BatchPlan, settings: Settings) -> None:
    """Raise LocalJudgeStarting when the plan needs the local judge and this machine's
    llama-server is not built yet; (re)starts a build that is not running."""
    require_local_model(_plan_models(plan), settings, field="judges")


def require_local_model(models: list[str], settings: Settings, *, field: str) -> None:
    """The gate of every request whose work will ask ``models`` (a batch's judges, a mining
    job's model; ``field`` names where the request gave them): LocalJudgeStarting when one
    is the local judge and this machine's llama-server is not built yet, instead of work
    accepted that then fails; (re)starts a build that is not running."""
    if not (LOCAL_JUDGE_NAME in models and builds_here(settings)):
        return
    build = machine_build()
    if build.ready():
        return
    build.start_in_background()  # after a failure or a stop: try again
    state = build.state()
    retry = retry_after_s(state)
    other = "name other judges (the deterministic ones score now)"
    raise LocalJudgeStarting(
        f"the local judge ({LOCAL_JUDGE_NAME}) is not ready: llama-server is being built "
        f"once for this machine, {state.describe()}; retry in {retry} s, or "
        f"{other if field == 'judges' else f'give another {field}'}",
        retry_after_s=retry,
        detail={"field": field, "local_judge": state.as_json()},
    )
