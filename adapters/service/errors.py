"""Errors of the HTTP service: one base class; each subclass carries its HTTP status and error type.

Every error a client sees has the shape `{"error": {"type": ..., "message": ...}}` (see `app.py`);
`type` is the class's `error_type`, the status code its `status_code`. Configuration problems found
before the server starts (`ServiceConfigError`) are reported by the CLI as one line.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse


def error_response(
    status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A response in the error shape."""
    return JSONResponse(
        {"error": {"type": error_type, "message": message}}, status_code=status, headers=headers
    )


class ServiceError(Exception):
    """Base class of every error raised by `haygraph.adapters.service`."""

    status_code = 500
    error_type = "internal_error"


class ServiceConfigError(ServiceError):
    """A serve setting, the API-keys file or the threads database is unusable; the message names it."""

    error_type = "config_error"


class BadRequestError(ServiceError):
    """The request is well-formed JSON but asks for something invalid (bad filters, thread id, model)."""

    status_code = 400
    error_type = "invalid_request"


class AuthenticationError(ServiceError):
    """The `Authorization: Bearer KEY` header is missing or names no known key."""

    status_code = 401
    error_type = "authentication_error"


class ForbiddenError(ServiceError):
    """The API key is valid but may not do this (a read-only key uploading or removing documents)."""

    status_code = 403
    error_type = "forbidden"


class PayloadTooLargeError(ServiceError):
    """An uploaded file is larger than the service accepts."""

    status_code = 413
    error_type = "request_too_large"


class InsufficientStorageError(ServiceError):
    """The server's disk is full (or read-only): an upload could not be saved; nothing was changed."""

    status_code = 507
    error_type = "insufficient_storage"


class NotFoundError(ServiceError):
    """The thread (or model) asked for does not exist for this caller."""

    status_code = 404
    error_type = "not_found"


class ConflictError(ServiceError):
    """The request does not fit the thread's state (e.g. a confirmation for a thread that waits for none)."""

    status_code = 409
    error_type = "conflict"


class NotReadyError(ServiceError):
    """The knowledge base or the model is not loaded yet (or the service is shutting down)."""

    status_code = 503
    error_type = "not_ready"


class DeadlineExceededError(ServiceError):
    """The request did not finish within the service's per-request deadline."""

    status_code = 504
    error_type = "deadline_exceeded"


class ShuttingDownError(NotReadyError):
    """The service is shutting down: draining (`/readyz`) or past its shutdown grace (a turn is stopped)."""

    error_type = "shutting_down"


class StoreUnavailableError(ServiceError):
    """The store's database server failed (down, restarting, unreachable); answered with `Retry-After`."""

    status_code = 503
    error_type = "store_unavailable"


class ThreadsUnavailableError(ServiceError):
    """The threads database failed (down, restarting, locked); answered with `Retry-After`."""

    status_code = 503
    error_type = "threads_unavailable"


class AuthUnavailableError(ServiceError):
    """The identity provider's signing keys cannot be fetched: tokens cannot be checked (503)."""

    status_code = 503
    error_type = "auth_unavailable"
