"""What both sides of a crowd study share (`studies.py`): the participants' role, the platform's parameter names
and completion URL, the statuses a participant can end in, the patterns an id, a parameter name and a code must
match, the hash under which a study's secret is stored, and the completion target a finished participant is
sent to."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import quote

from tailorbench.annotation import service

#: the role of the accounts made for study participants
ROLE = "participant"
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
PROLIFIC_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
STATUSES = ("active", "finished", "screened_out", "timed_out", "returned", "no_items")
#: what a platform id may look like (Prolific's are 24 hex digits); anything else is refused, never stored
EXTERNAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}")
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,100}")
MAX_CONSENT = 20_000


class Refused(Exception):
    """The study link cannot let this visitor in (closed, full, bad parameters, or an id already in use): the
    page says why, with this HTTP status."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


def secret_hash(secret: str) -> str:
    return service.token_hash(secret)


def as_utc(stamp: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite gives them back naive)."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def completion_target(url: str, code: str) -> str:
    """The platform's completion URL for `code` ("{code}" in the URL is replaced, URL-quoted)."""
    return url.replace("{code}", quote(code, safe=""))
