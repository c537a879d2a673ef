"""The service's one error tree. Each class carries its HTTP status and error code.

    JudgeServiceError (500 internal_error)
    ├── BadRequest (400 bad_request)
    │   ├── MalformedJSON (400 malformed_json)      body is not JSON
    │   └── InvalidEncoding (400 invalid_encoding)  body is not UTF-8
    ├── Unauthorized (401 unauthorized)             no key, or an unknown/revoked key
    ├── Forbidden (403 forbidden)                   the key's role may not do this
    ├── NotFound (404 not_found)                    no such batch, rubric, review item
    ├── Conflict (409 conflict)                     idempotency key reused for another batch
    ├── PayloadTooLarge (413 payload_too_large)     body over JS_MAX_BODY_MB
    ├── ValidationFailed (422 validation_error)     wrong types or missing fields
    │   ├── DuplicateSampleIds (422 duplicate_sample_ids)
    │   ├── UnknownJudge (422 unknown_judge)
    │   ├── UnknownAggregator (422 unknown_aggregator)
    │   └── UnknownRubric (422 unknown_rubric)
    └── Unavailable (503 unavailable)               the broker is down; sends Retry-After
        ├── NoWorker (503 no_worker)                no worker heartbeat within JS_WORKER_GRACE_S
        └── DatabaseUnavailable (503 database_unavailable)  the database cannot be reached

One handler in the API turns any of them into
``{"error": {"code", "message", "detail"}}``. Imports nothing of the package.
"""

from __future__ import annotations

from typing import Any


class JudgeServiceError(Exception):
    """Base class. Raise a subclass; this one means a bug (500)."""

    status_code = 500
    code = "internal_error"
    #: Seconds a client should wait before trying again (sent as ``Retry-After``); None: no header.
    retry_after_s: int | None = None

    def __init__(self, message: str, *, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "detail": self.detail}}

    def headers(self) -> dict[str, str]:
        """The HTTP headers of the answer: ``Retry-After`` for a passing outage."""
        return {} if self.retry_after_s is None else {"Retry-After": str(self.retry_after_s)}


class BadRequest(JudgeServiceError):
    status_code = 400
    code = "bad_request"


class MalformedJSON(BadRequest):
    code = "malformed_json"


class InvalidEncoding(BadRequest):
    code = "invalid_encoding"


class Unauthorized(JudgeServiceError):
    status_code = 401
    code = "unauthorized"


class Forbidden(JudgeServiceError):
    status_code = 403
    code = "forbidden"


class NotFound(JudgeServiceError):
    status_code = 404
    code = "not_found"


class Conflict(JudgeServiceError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(JudgeServiceError):
    status_code = 413
    code = "payload_too_large"


class ValidationFailed(JudgeServiceError):
    status_code = 422
    code = "validation_error"


class DuplicateSampleIds(ValidationFailed):
    code = "duplicate_sample_ids"


class UnknownJudge(ValidationFailed):
    code = "unknown_judge"


class UnknownAggregator(ValidationFailed):
    code = "unknown_aggregator"


class UnknownRubric(ValidationFailed):
    code = "unknown_rubric"


class Unavailable(JudgeServiceError):
    status_code = 503
    code = "unavailable"
    retry_after_s = 5


class NoWorker(Unavailable):
    """No worker is alive to do the work: the client should come back after ``retry_after_s``."""

    code = "no_worker"

    def __init__(self, message: str, *, retry_after_s: int, detail: Any = None) -> None:
        super().__init__(message, detail=detail)
        self.retry_after_s = retry_after_s


class DatabaseUnavailable(Unavailable):
    """PostgreSQL down or refusing connections, a SQLite file that cannot be opened or stays
    locked: the request may succeed unchanged once the database is back."""

    code = "database_unavailable"
