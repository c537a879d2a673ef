"""The judges' client and the local judge: what they add to the service (``core.features``)."""

from judge_service.core.features import Feature

FEATURE = Feature(
    name="judging",
    on_start="judge_service.judging.local_gate:start_build",
    on_stop="judge_service.judging.local_gate:stop_build",
    status=(("local_judge", "judge_service.judging.local_gate:local_judge_status"),),
    prepare_worker="judge_service.judging.client:get_client",
    commands="judge_service.judging.cli:add_commands",
)
