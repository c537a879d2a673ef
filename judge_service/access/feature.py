"""Keys and sign-in: the commands and routes that manage them (``core.features``); the
keys' and sessions' tables and lookups are the core's, which checks every request's key."""

from judge_service.core.features import Feature

FEATURE = Feature(
    name="access",
    routers=("judge_service.access.routes:router", "judge_service.access.web_sign_in:router"),
    commands="judge_service.access.cli:add_commands",
)
