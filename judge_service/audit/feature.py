"""The hindsight audit: what it adds to the service (``core.features``)."""

from judge_service.core.features import Feature

FEATURE = Feature(name="audit", commands="judge_service.audit.cli:add_commands")
