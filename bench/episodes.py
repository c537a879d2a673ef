"""Benchmark: the service CPU of an episode step (target: at most 2 ms without a model
call), its latency, and 256 episodes played at once.

``judge-service serve`` runs embedded (SQLite, the in-process executor, no local judge).
A world is built over HTTP from a forge job of ``data/retail`` traces (all 331 by default,
``--goals N`` for the traces of the first N goals); then ``serve`` is started again on the
same database, as a world is served long after it was built (the build's leftovers would
otherwise sit in the measured process's heap), and the forge's trace tasks that have a
reference end state are played by a scripted policy: the traced agent's assistant messages
replayed, from the run whose user the episode replays (the same policy as
``tests/episodes/test_world_episodes_api.py``). Nothing calls a model: tools are answered by paths
(a)-(d), the user is the replay user.

CPU is the serve process's own, all threads: the sum of ``/proc/<pid>/task/*/schedstat``
run times (nanoseconds) read just before each request is sent and just after its answer
arrives, less the process's idle rate (its heartbeat and sweeper threads, measured first)
over the request's wall time. Played one request at a time, so each delta is that
request's. Steps are split by what they do:

- tool-call steps: the action calls tools, the world answers them;
- user-reply steps: the action is text, the replay user answers;
- ending steps: the episode ends, so the step also scores it through the reward path (one
  sample: the end-state judge and the audit) and waits for it. Shown apart: that is the
  reward path's cost, not a step's.

The baseline, measured in the same run on the same process, is the cheapest request an
episode makes: ``GET /v1/episodes/{id}`` (the "state" call: the key checked, the row read,
the world found in the cache), on each episode once it is open. The ratio says what playing
an action adds over reading the episode. ``GET /healthz`` (no key, no database) beside it
is the floor of any request on the machine: the HTTP server, the middleware and routing. The
first reset of a world is shown too: it loads the world and its forge jobs' traces, which
every later request finds in the process's cache (:mod:`judge_service.world.world_cache`).

Then ``--concurrent`` episodes (256) are opened at once, and played at once (each but its
last action, which would end it) over one ``httpx.AsyncClient``: the resets' wall time and
latency, then the steps' throughput, latency p50/p99 and CPU per step (``/proc/<pid>/stat``
over the window, less the steps that a user ended, at their sequential cost).

What profiling showed (cProfile in-process, the thread hops run inline), and what changed:

- SQLAlchemy's ORM per step: a session, the row as an object, statements built per call
  (16 SQL ``==`` comparisons and their coercions a step). Prebuilt Core statements with
  bound parameters on a plain connection: read, update and commit 0.9-1.2 ms -> 0.23 ms.
- SQLite reaches a column stored after a large one only through the large one's overflow
  pages: the forge task lookup read ``forge_jobs.project`` past the multi-megabyte
  ``inputs`` (4.5 ms of a reset, profiled), and the world row its ``world``. Resets now
  read only what comes first (an episode's script, then its row's last column, now has its
  own table: below).
- 256 episodes stepping at once waited in SQLite's busy handler, which sleeps: 123 -> ~200
  steps/s with a mutex per database file in the process (``episodes.store_writers.one_writer``).
- Thread hops: Starlette's ``run_in_threadpool`` (anyio: its limiter, cancel scopes, an
  extra loop turn) cost ~185 us of CPU a hop here, a plain executor's ~80 us, and a step
  took three (the user-model and simulator checks, then the play). Now one
  (``core.api.threads.on_thread``); the model checks hop only when the cached script names
  a model or is not cached yet.
- SQLAlchemy's execution (its context, result and row objects) cost ~0.1 ms a statement:
  a step's read and write and the state read run prebuilt statements on the DBAPI cursor
  (``episodes.store.Lean``: the columns' own bind and result processors, errors raised as
  SQLAlchemy's), and the episode's JSON is written by pydantic-core from the model, not
  dumped to a dict first: the step's transaction -0.18 ms (paired, in-process).
- FastAPI solves every dependency anew on each request (~50 us each here): the role check
  and the project scope are one dependency on the episode routes (``deps.TrainerInScope``),
  4 solved a request instead of 6: -75 us a step or state read (in-process, play stubbed).
- Before -> after, same machine, two ``serve`` alternating episodes (``--goals 40``):
  tool-call step 3.19 -> 2.30 ms, user-reply step 2.77 -> 1.96, state read 1.82 -> 1.57,
  /healthz 0.69 both; the full run, back to back: 3.28 -> 1.96, 2.95 -> 1.67, 1.92 ->
  1.27 (/healthz 0.74 -> 0.59: the host's noise), 256 at once 158 -> 178 steps/s, 3.15 ->
  2.30 ms CPU a step.
- Session 29 (py-spy on ``serve`` during this bench; each change paired against the code
  before it in the same hour, the ratio to ``/healthz`` compared):
  - FastAPI's dependency solving was ~1/4 of the service's CPU: the step's and state read's
    arguments are bound by a plan made when the route is built (``core.api.lean``); the two
    routes sit on the app's own router, as FastAPI 0.165 matches an included router's route
    through a wrapper that matched it twice (~1/10); FastAPI's OpenTelemetry check is off.
  - h11 parsed each request in Python: uvicorn's httptools protocol with the same 431 head
    bound and head timeout (``core.api.edge``): a minimal app's request 0.235 -> 0.145 ms.
  - Together: a tool-call step 0.77x and ``/healthz`` 0.79x, paired.
  - The episode's ~20 KB script sat in the row a step updates, and SQLite rewrites a whole
    row: scripts have their own table (migration 0016): a user-reply step 2.78 -> 2.52x
    ``/healthz``.
  - The hop to a thread and back was about a sixth of a step: on SQLite, a step is played
    on the loop's thread when nothing would make it wait (``episodes.store_play_now``: the world and
    script cached, the episode writer free, a kept connection whose busy timeout is 0, so a
    lock held elsewhere fails it at once and the step goes to a thread): 3.15 -> 2.72x, and
    2.83 -> 2.62x once the connection is kept instead of checked out of the pool each step.
  - Against the session's start, same hours: a tool-call step 3.14-3.23x -> 2.57-2.71x
    ``/healthz``, with ``/healthz`` itself ~0.8x.
- Left: the middleware stack (SecurityHeaders, RequestDeadline, BodyGuard and FastAPI's own
  ServerError, exception and exit-stack layers: each wraps ``send``) ~1/7 of the CPU; the
  socket's writes ~1/8; the engine (a call's answer and record, the action's parsing) ~1/7;
  the step's read, write and commit ~1/5.

    .venv/bin/python bench/episodes.py [--goals 80] [--episodes 60] [--concurrent 256]
        [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at run time

import httpx

from bench.common import BIN, Child, cli, free_port, service_env, start_service, wait_http
from judge_service.traces.conversation import Trace, parse_traces
from tests.episodes.test_world_episodes_api import replay_actions

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "data" / "retail"
TARGET_MS = 2.0
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ns(pid: int) -> int:
    """The process's run time so far over its live threads, in nanoseconds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as handle:
                total += int(handle.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
    return total


def process_cpu_s(pid: int) -> float:
    """User + system time of the process (ended threads included), in seconds."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def retail_traces(goals: int) -> str:
    """The JSONL of the traces of the first ``goals`` goals of the corpus."""
    truth = [json.loads(line) for line in (RETAIL / "truth.jsonl").read_text().splitlines()]
    keep = set(list(dict.fromkeys(r["goal_id"] for r in truth))[:goals])
    wanted = {r["trace_id"] for r in truth if r["goal_id"] in keep}
    lines = (RETAIL / "traces.jsonl").read_text().splitlines()
    return "".join(f"{line}\n" for line in lines if json.loads(line)["id"] in wanted)


def wait_status(client: httpx.Client, path: str, headers: dict, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(path, headers=headers).json()
        if body["status"] in ("done", "failed"):
            return body
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} still {body['status']}")
        time.sleep(0.2)


def build_world(client: httpx.Client, admin: dict, text: str) -> tuple[str, list[dict]]:
    """A forge job of the traces and a world built from it; the trace tasks with a
    reference end state."""
    upload = client.post(
        "/v1/forge/traces",
        content=text,
        params={"mine": "false"},
        headers={**admin, "content-type": "application/x-ndjson"},
    )
    upload.raise_for_status()
    job = wait_status(client, f"/v1/forge/jobs/{upload.json()['id']}", admin)
    if job["status"] != "done":
        raise RuntimeError(f"forge job failed: {job.get('error')}")
    built = client.post("/v1/worlds", json={"jobs": [job["id"]]}, headers=admin)
    built.raise_for_status()
    world = wait_status(client, f"/v1/worlds/{built.json()['id']}", admin)
    if world["status"] != "done":
        raise RuntimeError(f"world failed: {world.get('error')}")
    listed = client.get("/v1/tasks", params={"job_id": job["id"]}, headers=admin).json()
    tasks = [t for t in listed["tasks"] if t["kind"] == "trace" and t["end_state"]]
    return world["id"], tasks


@dataclass
class Samples:
    """CPU (ms) and wall latency (ms) per kind of request."""

    cpu: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    wall: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, cpu_ms: float, wall_ms: float) -> None:
        self.cpu[kind].append(cpu_ms)
        self.wall[kind].append(wall_ms)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


class Meter:
    """One request at a time, with the serve process's CPU around it."""

    def __init__(self, client: httpx.Client, pid: int, idle_ns_per_s: float) -> None:
        self.client, self.pid, self.idle = client, pid, idle_ns_per_s
        self.samples = Samples()

    def request(self, method: str, path: str, **options: Any) -> tuple[httpx.Response, float]:
        """The answer, and the CPU (ms) it cost (NaN when a thread ended in between)."""
        before, start = cpu_ns(self.pid), time.perf_counter()
        response = self.client.request(method, path, **options)
        wall = time.perf_counter() - start
        used = cpu_ns(self.pid) - before - self.idle * wall
        response.raise_for_status()
        return response, (max(used, 0) / 1e6 if used >= -1e5 else float("nan")), wall * 1e3

    def add(self, kind: str, cpu_ms: float, wall_ms: float) -> None:
        if cpu_ms == cpu_ms:  # not NaN
            self.samples.add(kind, cpu_ms, wall_ms)


def idle_rate(pid: int, seconds: float = 2.0) -> float:
    before, start = cpu_ns(pid), time.perf_counter()
    time.sleep(seconds)
    return (cpu_ns(pid) - before) / (time.perf_counter() - start)


def step_kind(action: dict[str, Any], done: bool) -> str:
    if done:
        return "ending step"
    return "tool-call step" if action.get("tool_calls") else "user-reply step"


def play_one(meter: Meter, trainer: dict, world_id: str, task: dict, seed: int, traces) -> None:
    """Reset, one state read (the baseline), the replayed actions."""
    body = {"task_id": task["id"], "seed": seed}
    opened, cpu, wall = meter.request(
        "POST", f"/v1/worlds/{world_id}/episodes", json=body, headers=trainer
    )
    meter.add("reset", cpu, wall)
    episode_id = opened.json()["episode_id"]
    _, cpu, wall = meter.request("GET", f"/v1/episodes/{episode_id}", headers=trainer)
    meter.add("state read (baseline)", cpu, wall)
    _, cpu, wall = meter.request("GET", "/healthz")
    meter.add("healthz (no key, no db)", cpu, wall)
    actions = replay_actions(opened.json()["observation"]["messages"], traces)
    for number, action in enumerate(actions):
        body = {"action": action, "end": number == len(actions) - 1}
        answer, cpu, wall = meter.request(
            "POST", f"/v1/episodes/{episode_id}/step", json=body, headers=trainer
        )
        done = answer.json()["done"]
        meter.add(step_kind(action, done), cpu, wall)
        if done:
            return


async def open_async(
    client: httpx.AsyncClient, trainer: dict, world_id: str, task: dict, seed: int
) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    body = {"task_id": task["id"], "seed": seed}
    opened = await client.post(f"/v1/worlds/{world_id}/episodes", json=body, headers=trainer)
    opened.raise_for_status()
    return time.perf_counter() - start, opened.json()


async def steps_async(
    client: httpx.AsyncClient, trainer: dict, opened: dict[str, Any], actions: list[dict]
) -> list[tuple[str, float]]:
    """The actions: each step's kind and latency (s). A user that ends the episode on its
    own makes an ending step."""
    out = []
    for action in actions:
        start = time.perf_counter()
        path = f"/v1/episodes/{opened['episode_id']}/step"
        answer = await client.post(path, json={"action": action}, headers=trainer)
        answer.raise_for_status()
        done = answer.json()["done"]
        out.append((step_kind(action, done), time.perf_counter() - start))
        if done:
            break
    return out


async def concurrent_run(
    url: str,
    pid: int,
    trainer: dict,
    world_id: str,
    tasks: list[dict],
    traces,
    count: int,
    ending_cpu_ms: float,
) -> dict[str, Any]:
    """``count`` episodes opened at once, then all played at once (each but its last
    action). The steps' CPU is the window's less the ending steps' (at their sequential
    cost): what ``count`` trainers stepping together cost per step."""
    # idle connections expire here before `serve` closes them (JS_KEEP_ALIVE_S, 5 s): a
    # request sent on a connection the server is closing would fail
    limits = httpx.Limits(
        max_connections=count, max_keepalive_connections=count, keepalive_expiry=1.0
    )
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        cpu_before, start = process_cpu_s(pid), time.perf_counter()
        opened = await asyncio.gather(
            *(open_async(client, trainer, world_id, tasks[i % len(tasks)], i) for i in range(count))
        )
        reset_wall, reset_cpu = time.perf_counter() - start, process_cpu_s(pid) - cpu_before
        # the replayed actions but the last, which would end the episode
        plays = [(o, replay_actions(o["observation"]["messages"], traces)[:-1]) for _, o in opened]
        cpu_before, start, mine = process_cpu_s(pid), time.perf_counter(), time.process_time()
        runs = await asyncio.gather(*(steps_async(client, trainer, o, a) for o, a in plays))
        wall, cpu = time.perf_counter() - start, process_cpu_s(pid) - cpu_before
        client_cpu = time.process_time() - mine
    steps = [(kind, s * 1e3) for run in runs for kind, s in run]
    plain = [ms for kind, ms in steps if kind != "ending step"]
    ending = len(steps) - len(plain)
    return {
        "episodes": count,
        "reset_wall_s": reset_wall,
        "reset_cpu_ms_each": reset_cpu * 1e3 / count,
        "reset_p50_ms": percentile([s * 1e3 for s, _ in opened], 0.5),
        "reset_p99_ms": percentile([s * 1e3 for s, _ in opened], 0.99),
        "steps": len(plain),
        "ending_steps": ending,
        "wall_s": wall,
        "steps_per_s": len(steps) / wall,
        "cpu_ms_per_step": (cpu * 1e3 - ending * ending_cpu_ms) / max(1, len(plain)),
        "p50_ms": percentile(plain, 0.5),
        "p99_ms": percentile(plain, 0.99),
        "serve_cores": cpu / wall,
        "client_cores": client_cpu / wall,
    }


def summary(samples: Samples) -> dict[str, dict[str, float]]:
    out = {}
    for kind, cpu in samples.cpu.items():
        wall = samples.wall[kind]
        out[kind] = {
            "n": len(cpu),
            "cpu_ms_mean": statistics.fmean(cpu),
            "cpu_ms_p50": percentile(cpu, 0.5),
            "wall_ms_p50": percentile(wall, 0.5),
            "wall_ms_p99": percentile(wall, 0.99),
        }
    return out


def print_report(report: dict[str, Any]) -> None:
    print(f"world: {report['traces']} traces, {report['tasks']} tasks with an end state")
    print(f"idle CPU of serve: {report['idle_ms_per_s']:.2f} ms/s (subtracted)")
    first = report["first_reset_cpu_ms"]
    print(f"first reset (loads the world and its traces): {first:.1f} ms CPU")
    head = f"{'':26} {'n':>5} {'CPU ms':>8} {'CPU p50':>8} {'wall p50':>9} {'wall p99':>9}"
    print(head)
    rows = report["sequential"]
    base = rows.get("state read (baseline)", {}).get("cpu_ms_mean")
    for kind in (
        "tool-call step",
        "user-reply step",
        "ending step",
        "reset",
        "state read (baseline)",
        "healthz (no key, no db)",
    ):
        if kind in rows:
            r = rows[kind]
            print(
                f"{kind:26} {r['n']:>5} {r['cpu_ms_mean']:>8.3f} {r['cpu_ms_p50']:>8.3f} "
                f"{r['wall_ms_p50']:>9.2f} {r['wall_ms_p99']:>9.2f}"
            )
    for kind in ("tool-call step", "user-reply step"):
        if kind in rows and base:
            cpu = rows[kind]["cpu_ms_mean"]
            verdict = "ok" if cpu <= TARGET_MS else "ABOVE TARGET"
            print(f"{kind}: {cpu:.3f} ms CPU = {cpu / base:.2f}x the state read; {verdict}")
    c = report["concurrent"]
    print(
        f"\n{c['episodes']} concurrent episodes: opened in {c['reset_wall_s']:.2f} s (reset "
        f"p50 {c['reset_p50_ms']:.0f} ms, p99 {c['reset_p99_ms']:.0f} ms, "
        f"{c['reset_cpu_ms_each']:.2f} ms CPU each); then {c['steps']} steps (and "
        f"{c['ending_steps']} ending steps) in {c['wall_s']:.2f} s, {c['steps_per_s']:.0f} "
        f"steps/s, step latency p50 {c['p50_ms']:.1f} ms, p99 {c['p99_ms']:.1f} ms, "
        f"{c['cpu_ms_per_step']:.3f} ms CPU per step; cores busy: serve "
        f"{c['serve_cores']:.2f}, this client {c['client_cores']:.2f} (of {os.cpu_count()})"
    )


def serve(env: dict[str, str]) -> tuple[Child, str]:
    """``judge-service serve`` on a free port, on the database already made."""
    port = free_port()
    child = Child([str(BIN / "judge-service"), "serve", "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", child.proc, timeout=180)
    except BaseException:
        child.stop()
        raise
    return child, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=80, help="goals of data/retail to use")
    parser.add_argument("--episodes", type=int, default=60, help="episodes played one by one")
    parser.add_argument("--concurrent", type=int, default=256)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-episodes-"))
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{folder / 'episodes.db'}",
        JS_FORGE_EMBEDDINGS="tfidf",
        JS_LOCAL_MODEL_URL="http://127.0.0.1:9/v1",  # nothing here calls a model
        JS_LOG_LEVEL="WARNING",
    )
    child, url, key = start_service(env)
    try:
        made = cli("keys", "create", "--role", "admin", env=env)
        admin = {"Authorization": f"Bearer {made.strip().splitlines()[-1]}"}
        trainer = {"Authorization": f"Bearer {key}"}
        text = retail_traces(args.goals)
        traces: dict[str, Trace] = {t.id: t for t in parse_traces(text)}
        with httpx.Client(base_url=url, timeout=300) as client:
            world_id, tasks = build_world(client, admin, text)
        child.stop()  # the build's leftovers out of the process that serves the episodes
        child, url = serve(env)
        with httpx.Client(base_url=url, timeout=300) as client:
            pid = child.proc.pid
            idle = idle_rate(pid)
            meter = Meter(client, pid, idle)
            path, body = f"/v1/worlds/{world_id}/episodes", {"task_id": tasks[0]["id"]}
            _, first_ms, _ = meter.request("POST", path, json=body, headers=trainer)
            for number in range(args.episodes):
                play_one(meter, trainer, world_id, tasks[number % len(tasks)], number, traces)
        sequential = summary(meter.samples)
        ending_ms = sequential.get("ending step", {}).get("cpu_ms_mean", 0.0)
        concurrent = asyncio.run(
            concurrent_run(url, pid, trainer, world_id, tasks, traces, args.concurrent, ending_ms)
        )
        report = {
            "traces": len(traces),
            "tasks": len(tasks),
            "idle_ms_per_s": idle / 1e6,
            "first_reset_cpu_ms": first_ms,
            "sequential": sequential,
            "concurrent": concurrent,
        }
    finally:
        child.stop()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)


if __name__ == "__main__":
    main()
