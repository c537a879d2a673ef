"""Client side of judge-service for trainers: batched rewards and a world's episodes over HTTP.

Imports only ``judge_service.wire`` (and httpx, tenacity), so a trainer node needs
only the base install. Adapters: ``trainer_bridge.trl``, ``.verifiers``, ``.verl``; OpenRLHF
calls the service's ``/get_reward`` route directly. Episodes (reset, step, state) of a world
built from traces: ``trainer_bridge.episodes``, driven by TRL (``.trl_episodes``:
``GRPOTrainer(environment_factory=...)``) and verifiers (``.verifiers_env``: a multi-turn env).
"""

from trainer_bridge.client import (
    AsyncRewardClient,
    Reward,
    RewardClient,
    RewardConnectionError,
    RewardError,
    RewardServiceError,
    RewardTimeout,
)
from trainer_bridge.episodes import (
    AsyncEpisodeClient,
    EpisodeClient,
    EpisodeEnded,
    EpisodeStart,
    EpisodeStep,
)

__all__ = [
    "AsyncEpisodeClient",
    "AsyncRewardClient",
    "EpisodeClient",
    "EpisodeEnded",
    "EpisodeStart",
    "EpisodeStep",
    "Reward",
    "RewardClient",
    "RewardConnectionError",
    "RewardError",
    "RewardServiceError",
    "RewardTimeout",
]
