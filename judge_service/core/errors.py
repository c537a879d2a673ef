"""The service's one error tree. Each class carries its HTTP status and error code.

    JudgeServiceError (500 internal_error)
    ├── BadRequest (400 bad_request)
    │   ├── MalformedJSON (400 malformed_json)      body is not JSON
    │   ├── JSONTooDeep (400 json_too_deep)         body nests too deep
    │   └── InvalidEncoding (400 invalid_encoding)  body is not UTF-8
    ├── Unauthorized (401 unauthorized)             no key, or an unknown/revoked key
    ├── Forbidden (403 forbidden)                   the key's role may not do this
    ├── NotFound (404 not_found)                    no such batch, rubric, review item
    ├── RequestTimeout (408 request_timeout)        body not received in JS_BODY_TIMEOUT_S
    ├── Conflict (409 conflict)                     idempotency key reused for another batch
    ├── PayloadTooLarge (413 payload_too_large)     body over JS_MAX_BODY_MB
    ├── UnsupportedMediaType (415 unsupported_media_type)  a JSON route sent another type
    ├── ValidationFailed (422 validation_error)     wrong types or missing fields
    │   ├── DuplicateSampleIds (422 duplicate_sample_ids)
    │   ├── UnknownJudge (422 unknown_judge)
    │   ├── UnknownAggregator (422 unknown_aggregator)
    │   ├── EndpointRefused (422 endpoint_not_allowed)  api_base/endpoint/api_key not allowed
    │   ├── UnknownRubric (422 unknown_rubric)
    │   └── RubricNotApplicable (422 rubric_not_applicable)  no judge of the panel asks it
    ├── Unavailable (503 unavailable)               the broker is down; sends Retry-After
    │   ├── NoWorker (503 no_worker)                no worker heartbeat within JS_WORKER_GRACE_S
    │   ├── ShuttingDown (503 shutting_down)        `serve` is stopping: it takes no new work
    │   ├── LocalJudgeStarting (503 local_judge_starting)  llama-server is still being built
    │   └── DatabaseUnavailable (503 database_unavailable)  the database cannot be reached
    └── AnswerTimeout (504 answer_timeout)          no answer within JS_REQUEST_TIMEOUT_S

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


class JSONTooDeep(BadRequest):
    code = "json_too_deep"


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


class RequestTimeout(JudgeServiceError):
    status_code = 408
    code = "request_timeout"


class Conflict(JudgeServiceError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(JudgeServiceError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(JudgeServiceError):
    status_code = 415
    code = "unsupported_media_type"


class ValidationFailed(JudgeServiceError):
    status_code = 422
    code = "validation_error"


class DuplicateSampleIds(ValidationFailed):
    code = "duplicate_sample_ids"


class UnknownJudge(ValidationFailed):
    code = "unknown_judge"


class UnknownAggregator(ValidationFailed):
    code = "unknown_aggregator"


class EndpointRefused(ValidationFailed):
    """A judge spec names a model server the operator did not configure (``JS_ENDPOINTS``),
    a model that endpoint may not serve, or carries its own ``api_key``."""

    code = "endpoint_not_allowed"


class UnknownRubric(ValidationFailed):
    code = "unknown_rubric"


class RubricNotApplicable(ValidationFailed):
    """A batch names a rubric, but no judge of its panel asks a rubric's criteria (only
    model judges do): scored as asked, the rubric would do nothing."""

    code = "rubric_not_applicable"


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


class ShuttingDown(Unavailable):
    """The service is stopping (SIGINT or SIGTERM): it takes no new work; the client should
    come back, to this process's successor or another replica."""

    code = "shutting_down"

    def __init__(
        self,
        message: str = "the service is shutting down and takes no new work; retry later",
        *,
        detail: Any = None,
    ) -> None:
        super().__init__(message, detail=detail)


class DatabaseUnavailable(Unavailable):
    """PostgreSQL down or refusing connections, a SQLite file that cannot be opened or stays
    locked: the request may succeed unchanged once the database is back."""

    code = "database_unavailable"


class AnswerTimeout(JudgeServiceError):
    status_code = 504
    code = "answer_timeout"


class LocalJudgeStarting(Unavailable):
    """The local judge's llama-server is still being built on this machine (once, on the
    first start): the batch would wait on it, so it is refused with a ``Retry-After``."""

    code = "local_judge_starting"

    def __init__(self, message: str, *, retry_after_s: int, detail: Any = None) -> None:
        super().__init__(message, detail=detail)
        self.retry_after_s = retry_after_s
