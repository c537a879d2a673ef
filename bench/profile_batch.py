"""Where the service's CPU goes while a worker scores one batch (cProfile).

A 1,024-sample batch, a panel of three LLM judges (``openai/profile-judge-a|b|c`` on the
OpenAI-compatible fake with 50 ms latency, so 3,072 judge calls) and the default
detectors, scored by the worker's own task (``scoring.job.score_batch``) on SQLite,
under cProfile. Prints the CPU per judge call and the functions that cost most.

    .venv/bin/python bench/profile_batch.py [--samples 1024] [--no-audit] [--top 30]
        [--sort tottime|cumulative] [--out profile.pstats] [--no-profile]

The fake server runs in its own process, so only the service's CPU is profiled.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at run time

from bench.common import fake_judge_server
from judge_service import wire
from judge_service.core.api.app import tune_garbage_collector
from judge_service.core.registry import Registry
from judge_service.core.settings import get_settings
from judge_service.core.storage.db import session_scope, upgrade
from judge_service.judging.client import get_client
from judge_service.scoring import store_batches as batches
from judge_service.scoring.job import score_batch
from judge_service.scoring.web_batching import SAMPLES_IN, resolve_plan

#: A regular expression on file paths: the code this service is responsible for.
OWN_CODE = r"/judge_service/|/plugins/(judges|aggregators)/"
MODELS = ("openai/profile-judge-a", "openai/profile-judge-b", "openai/profile-judge-c")


def samples(n: int) -> list[dict]:
    run = uuid.uuid4().hex
    return [
        {
            "id": f"s{i}",
            "group_id": f"g{i // 4}",
            "prompt": f"Task {i // 4} of {run}: summarise the quarterly report in two sentences.",
            "completion": f"Revenue grew 4% on the quarter ({i}); costs fell. Summary {run}.",
        }
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--no-audit", action="store_true", help="judges only, no detectors")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime", choices=("tottime", "cumulative"))
    parser.add_argument("--out", type=Path, help="also write the pstats file here")
    parser.add_argument(
        "--no-profile", action="store_true", help="only the CPU per call, without cProfile"
    )
    args = parser.parse_args()
    fake, api_base = fake_judge_server(50)
    home = Path("/tmp") / f"js-profile-{uuid.uuid4().hex[:6]}"
    home.mkdir()
    settings = get_settings(
        database_url=f"sqlite:///{home / 'profile.db'}",
        broker_url=None,
        cache_url=None,
        judge_concurrency=64,
        **({"detectors": "none"} if args.no_audit else {}),
    )
    upgrade(settings.database_url)
    registry = Registry()
    judges = [{"name": m, "api_base": api_base} for m in MODELS]
    request = wire.RewardRequest.model_validate(
        {"samples": samples(args.samples), "judges": judges, "timeout_s": 600}
    )
    plan = resolve_plan(request, settings=settings, registry=registry, project="default")
    get_client(settings)  # litellm imported and its tables loaded before the heap is frozen
    tune_garbage_collector()
    try:
        with session_scope(settings.database_url) as session:
            batch_id = uuid.uuid4().hex
            batches.create_batch(
                session=session,
                batch_id=batch_id,
                samples=SAMPLES_IN.dump_python(request.samples, mode="json"),
                plan=plan,
                request_hash="profile",
                timeout_s=600,
            )
        profiler = cProfile.Profile()
        cpu, wall = time.process_time(), time.perf_counter()
        if not args.no_profile:
            profiler.enable()
        status = score_batch(batch_id, settings=settings, registry=registry)
        profiler.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        fake.stop()
    calls = args.samples * len(MODELS)
    print(
        f"{status}: {args.samples} samples, {calls} judge calls in {wall:.2f} s wall; "
        f"service CPU {cpu:.2f} s = {cpu / calls * 1000:.2f} ms per judge call"
        + ("" if args.no_profile else " (under cProfile, which inflates it)")
    )
    if args.no_profile:
        return
    stats = pstats.Stats(profiler)
    if args.out:
        stats.dump_stats(args.out)
    print("The service's own code (judge_service/, plugins/judges, plugins/aggregators):")
    stats.sort_stats(args.sort).print_stats(OWN_CODE, args.top)
    print("Everything (litellm, the detectors, the standard library included):")
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
