"""Prometheus metrics: served by the API at ``/metrics``, by a worker on ``--metrics-port``."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

BATCHES_ACCEPTED = Counter(
    "judge_service_batches_accepted_total", "Batches stored and handed to the queue."
)
SAMPLES_SCORED = Counter(
    "judge_service_samples_scored_total",
    "Samples given a result, by outcome (valid, or the failure kind).",
    ["outcome"],
)
JUDGE_VERDICTS = Counter(
    "judge_service_judge_verdicts_total",
    "Judge verdicts, by judge and status.",
    ["judge", "status"],
)
BATCH_SECONDS = Histogram(
    "judge_service_batch_seconds",
    "Time a worker spent scoring a batch.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
)
BATCHES_REDISPATCHED = Counter(
    "judge_service_batches_redispatched_total",
    "Batch tasks re-sent by a worker's sweeper (lapsed lease, or a message the broker lost).",
)
JOBS_REDISPATCHED = Counter(
    "judge_service_jobs_redispatched_total",
    "Mining and forge tasks re-sent by a worker's sweeper (a queued job whose message was lost).",
    ["kind"],
)
MESSAGES_DROPPED = Counter(
    "judge_service_messages_dropped_total",
    "Score messages acknowledged without scoring, by reason (done, leased, missing).",
    ["reason"],
)
