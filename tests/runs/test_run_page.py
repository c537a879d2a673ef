"""The run page (``/runs/{run_id}``), the list of runs, and ``judge-service report``.

A four-step run is built through the real API: two constant judges whose scores drift apart
(the raw reward rises, agreement falls), more judge-injection answers each step (the default
detectors flag them, the floor penalty zeroes them, review items are queued), groups of two,
and human labels. The page must draw the report's series, mark its alarms, and link the
flagged rollouts to their review items.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from judge_service.core.api.app import create_app
from judge_service.core.settings import get_settings
from tests.audit.test_hack_audit_api import HONEST, INJECTION
from tests.conftest import make_key
from tests.helpers import JUDGE_SERVICE, run_cli, service_env
from tests.review.test_review_queue import flagged_batch

RUN = "page-run"
STEPS = 4
#: Labels per step, by sample id; "s3" at step 3 is honest but labelled bad, so κ there is 0.5.
LABELS: dict[int, dict[str, str]] = {
    0: {"s1": "good"},
    1: {"s0": "bad", "s1": "good"},
    2: {"s0": "bad", "s2": "bad", "s1": "good", "s3": "good"},
    3: {"s0": "bad", "s1": "good", "s3": "bad", "s5": "good"},
}
SVG = re.compile(r"<svg .*?</svg>", re.S)

Client = TestClient | httpx.Client


def build_run(http: Client, trainer: dict[str, str], reviewer: dict[str, str]) -> list[str]:
    """Score the run's steps and label some rollouts; returns the batch ids in step order."""
    batch_ids = []
    for step in range(STEPS):
        hacked = {2 * i for i in range(step)}  # one hack in each of the first `step` groups
        samples = [
            {
                "id": f"s{i}",
                "group_id": f"g{i // 2}",
                "prompt": "What is the capital of France?",
                "completion": INJECTION if i in hacked else HONEST,
            }
            for i in range(8)
        ]
        high = 0.5 + 0.1 * step
        judges = [
            {"name": "slow_constant", "score": high, "delay_s": 0},
            {"name": "slow_constant", "score": round(high - 0.1 * step, 2), "delay_s": 0},
        ]
        body = {"samples": samples, "judges": judges, "run_id": RUN, "step": step}
        answer = http.post("/v1/rewards", json=body, headers=trainer)
        assert answer.status_code == 200, answer.text
        batch_ids.append(answer.json()["batch_id"])
    for step, labels in LABELS.items():
        for sample_id, label in labels.items():
            body = {"batch_id": batch_ids[step], "sample_id": sample_id, "label": label}
            assert http.post("/v1/labels", json=body, headers=reviewer).status_code == 201
    return batch_ids


def series_points(svg: str, gid: str) -> int:
    """How many markers the series ``gid`` draws (one ``<use>`` per point)."""
    match = re.search(rf'<g id="{gid}">(.*?)</g>\s*(?:<g id=|</g>)', svg, re.S)
    assert match, f"no series {gid}"
    return match.group(1).count("<use ")


def plots_of(html: str) -> dict[str, str]:
    figures = re.findall(r'<figure class="plot card" data-plot="(\w+)">(.*?)</figure>', html, re.S)
    return {name: SVG.search(body).group(0) for name, body in figures}  # type: ignore[union-attr]


@pytest.fixture
def staged(client: TestClient, keys: dict[str, Any], embedded_settings) -> dict[str, Any]:
    batches = build_run(client, keys["trainer"], keys["reviewer"])
    return {"batches": batches, "url": embedded_settings.database_url}


def test_the_run_page_needs_the_review_sign_in(client: TestClient, keys, staged):
    anonymous = client.get(f"/runs/{RUN}", follow_redirects=False)
    assert anonymous.status_code == 401
    assert 'name="next" value="/runs/page-run"' in anonymous.text and "<svg" not in anonymous.text
    assert client.get("/runs").status_code == 401
    trainer = client.get(f"/runs/{RUN}", headers=keys["trainer"])
    assert trainer.status_code == 403 and "<svg" not in trainer.text
    assert client.get(f"/runs/{RUN}", headers=keys["reviewer"]).status_code == 200

    signed_in = client.post(
        "/review/login",
        data={"key": keys["reviewer"]["Authorization"].split()[1], "next": f"/runs/{RUN}"},
        follow_redirects=False,
    )
    assert signed_in.status_code == 303 and signed_in.headers["location"] == f"/runs/{RUN}"
    page = client.get(f"/runs/{RUN}")  # the session cookie, no header
    assert page.status_code == 200 and "<svg" in page.text
    elsewhere = client.post(
        "/review/login",
        data={"key": keys["reviewer"]["Authorization"].split()[1], "next": "https://evil.example"},
        follow_redirects=False,
    )
    assert elsewhere.headers["location"].startswith("/review?")  # never another host


def test_the_run_page_draws_the_reports_series_and_alarms(client: TestClient, keys, staged):
    headers = keys["reviewer"]
    report = client.get(f"/v1/runs/{RUN}/report", headers=headers).json()
    assert {a["kind"] for a in report["alarms"]} == {
        "reward_up_hacks_up",
        "reward_up_agreement_down",
    }
    html = client.get(f"/runs/{RUN}", headers=headers).text
    plots = plots_of(html)
    assert list(plots) == ["reward", "hacks", "agreement", "no_advantage"]
    kinds = sorted({k for row in report["steps"] for k in row["hack_rate_by_kind"]})
    assert kinds, "the injection answers must be flagged by kind"
    expected = {
        "reward": ["raw_reward", "reward"],
        "hacks": ["hack_rate", *(f"kind-{k}" for k in kinds)],
        "agreement": ["agreement"],
        "no_advantage": ["no_advantage_share"],
    }
    for plot, series in expected.items():
        for key in series:
            assert series_points(plots[plot], f"{plot}-{key}") == STEPS, (plot, key)
    # κ where labels allow it: step 0 has one class only, steps 1-3 have both.
    assert series_points(plots["agreement"], "agreement-kappa") == 3
    assert "κ vs human labels" in plots["agreement"] and "raw reward" in plots["reward"]
    for alarm, marked in (
        ("reward_up_hacks_up", ("reward", "hacks")),
        ("reward_up_agreement_down", ("reward", "agreement")),
    ):
        assert f'data-alarm="{alarm}"' in html
        for plot in plots:
            assert (f'id="{plot}-alarm-{alarm}"' in plots[plot]) == (plot in marked), plot
    steps = re.search(r"<summary>Figures per step</summary>(.*?)</details>", html, re.S).group(1)
    rows = re.findall(r"<tr><td class=\"num\">(\d+)</td>(.*?)</tr>", steps, re.S)
    kappa = [re.findall(r'<td class="num">([^<]*)</td>', cells)[-2] for _, cells in rows]
    assert kappa == ["—", "1.000", "1.000", "0.500"]
    for row, (step, cells) in zip(report["steps"], rows, strict=True):
        assert int(step) == row["step"] and f"{row['raw_reward_mean']:.3f}" in cells
    assert "<script" not in html and not re.search(r"(src|href)=\"(https?:)?//", html)


def test_flagged_rollouts_link_to_their_review_items(client: TestClient, keys, staged):
    headers = keys["reviewer"]
    html = client.get(f"/runs/{RUN}", headers=headers).text
    table = re.search(r'aria-label="Flagged rollouts">(.*?)</section>', html, re.S).group(1)
    rows = re.findall(r'<tr data-sample="(\w+)">(.*?)</tr>', table, re.S)
    assert len(rows) == 1 + 2 + 3  # one hack at step 1, two at step 2, three at step 3
    assert [r[0] for r in rows[:3]] == ["s0", "s2", "s4"]  # the newest step first
    assert all(">3<" in cells for _, cells in rows[:3])
    items = client.get(f"/v1/review?kind=hack_finding&run_id={RUN}", headers=headers).json()
    by_sample = {(i["batch_id"], i["sample_id"]): i["id"] for i in items["items"]}
    newest = staged["batches"][3]
    for sample_id, cells in rows[:3]:
        item_id = by_sample[(newest, sample_id)]
        assert f'href="/review/items/{item_id}"' in cells
    link = re.search(r'href="(/review/items/\d+)"', table).group(1)
    item_page = client.get(link, headers=headers)
    assert item_page.status_code == 200
    assert "hack_finding" in item_page.text and "Confirm hack" in item_page.text
    assert client.get(link).status_code == 401

    # A flagged rollout with no review item is listed without a link.
    flagged_batch(staged["url"], [0.92])  # scored straight into storage, never queued
    plain = client.get("/runs/hack-run", headers=headers).text
    (cells,) = re.findall(r'<tr data-sample="h0">(.*?)</tr>', plain, re.S)
    assert "no item" in cells and "href" not in cells
    assert "no data yet" in plain  # a run without steps has no curve


def test_runs_lists_each_run_with_its_latest_step(client: TestClient, keys, staged):
    headers = keys["reviewer"]
    html = client.get("/runs", headers=headers).text
    (row,) = re.findall(rf'<tr data-run="{RUN}">(.*?)</tr>', html, re.S)
    assert f'href="/runs/{RUN}"' in row
    assert re.findall(r"<td[^>]*>(\d+)</td>", row) == ["3", "4"]  # latest step, batches
    missing = client.get("/runs/no-such-run", headers=headers)
    assert missing.status_code == 404 and "no-such-run" in missing.text


@pytest.mark.parametrize("where", ["default", "postgresql"])
def test_the_report_command_writes_the_same_page(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
):
    """``judge-service report`` on the default embedded database, and on PostgreSQL named by
    JS_DATABASE_URL: the file holds the page's plots, byte for byte, and its tables."""
    env = service_env(XDG_DATA_HOME=str(tmp_path / "xdg"))
    if where == "postgresql":
        env["JS_DATABASE_URL"] = request.getfixturevalue("postgres_url")
    url = database_url_of(env, tmp_path)
    run_cli("db", "upgrade", env=env, cwd=tmp_path)
    settings = get_settings(database_url=url, broker_url=None, cache_url=None)
    trainer = {"Authorization": f"Bearer {make_key(url, 'trainer')}"}
    reviewer = {"Authorization": f"Bearer {make_key(url, 'reviewer')}"}
    with TestClient(create_app(settings)) as client:
        build_run(client, trainer, reviewer)
        page = client.get(f"/runs/{RUN}", headers=reviewer).text
    out = tmp_path / "report.html"
    printed = run_cli("report", RUN, "--out", str(out), env=env, cwd=tmp_path)
    assert str(out) in printed
    written = out.read_text()
    assert plots_of(written) == plots_of(page) and len(plots_of(page)) == 4
    flagged = re.compile(r'aria-label="Flagged rollouts">.*?</section>', re.S)
    assert flagged.search(written).group(0) == flagged.search(page).group(0)  # type: ignore[union-attr]
    assert "judge-service report" in written and "Sign out" not in written

    linked = tmp_path / "linked.html"
    run_cli(
        "report", RUN, "--out", str(linked), "--base-url", "http://judge:8000/", env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert 'href="http://judge:8000/review/items/' in linked.read_text()
    missing = run_cli_failing(
        "report", "nope", "--out", str(tmp_path / "x.html"), env=env, cwd=tmp_path
    )
    assert "no scored batches for run 'nope'" in missing and not (tmp_path / "x.html").exists()

    # --project: only that project's batches of the run (the run was scored in "default")
    ours = tmp_path / "ours.html"
    run_cli("report", RUN, "--out", str(ours), "--project", "default", env=env, cwd=tmp_path)
    assert plots_of(ours.read_text()) == plots_of(page)
    other = run_cli_failing(
        "report", RUN, "--out", str(tmp_path / "y.html"), "--project", "other", env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert f"no scored batches for run {RUN!r} in project 'other'" in other
    assert not (tmp_path / "y.html").exists()
    bad = run_cli_failing(
        "report", RUN, "--out", str(tmp_path / "z.html"), "--project", "Not A Name", env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert "--project" in bad and "is not a project name" in bad


def database_url_of(env: dict[str, str], cwd: Path) -> str:
    """The database URL the commands will use with ``env`` in ``cwd``, made absolute."""
    code = (
        "from judge_service.core.settings import get_settings; print(get_settings().database_url)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    url = done.stdout.strip()
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url[len(prefix) :].startswith("/"):
        url = prefix + str(cwd / url[len(prefix) :])
    return url


def run_cli_failing(*args: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [JUDGE_SERVICE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    return done.stderr
