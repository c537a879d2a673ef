"""Client side of judge-service for trainers: batched rewards over HTTP.

Imports only ``judge_service.wire`` (and httpx, tenacity), so a trainer node needs
only the base install. Adapters: ``trainer_bridge.trl``, ``.verifiers``, ``.verl``; OpenRLHF
calls the service's ``/get_reward`` route directly.
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

__all__ = [
    "AsyncRewardClient",
    "Reward",
    "RewardClient",
    "RewardConnectionError",
    "RewardError",
    "RewardServiceError",
    "RewardTimeout",
]
