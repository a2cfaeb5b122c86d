"""The heart of elicitkit, shared by server and client: questions, their schemas, answers, outcomes."""

from elicitkit.elicitation.answers import apply_defaults, parse_result, validate_answer
from elicitkit.elicitation.enums import LEGACY_ENUM_NAMES, Format, TitledEnum, Titles
from elicitkit.elicitation.errors import (
    ElicitationError,
    ElicitationFailed,
    ElicitationTimeout,
    ElicitationUnsupported,
    InvalidAnswer,
    SchemaError,
    UrlElicitationRequired,
)
from elicitkit.elicitation.requests import (
    ElicitationMode,
    ElicitRequest,
    FormRequest,
    Origin,
    UrlRequest,
    create_form_request,
    create_url_request,
)
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationAction,
    ElicitationResult,
)
from elicitkit.elicitation.schema import check_schema, for_version, form_for

__all__ = [
    "LEGACY_ENUM_NAMES",
    "AcceptedElicitation",
    "CancelledElicitation",
    "DeclinedElicitation",
    "ElicitRequest",
    "ElicitationAction",
    "ElicitationError",
    "ElicitationFailed",
    "ElicitationMode",
    "ElicitationResult",
    "ElicitationTimeout",
    "ElicitationUnsupported",
    "FormRequest",
    "Format",
    "InvalidAnswer",
    "Origin",
    "SchemaError",
    "TitledEnum",
    "Titles",
    "UrlElicitationRequired",
    "UrlRequest",
    "apply_defaults",
    "check_schema",
    "create_form_request",
    "create_url_request",
    "for_version",
    "form_for",
    "parse_result",
    "validate_answer",
]
