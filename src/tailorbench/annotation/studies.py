"""Crowd studies: a project opened to participants a redirect-based platform sends (Prolific by default).

The platform sends each participant to the study link `/s/SECRET?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`
(the parameter names are the study's own). After the consent page, the participant gets an account (role
"participant", named after their platform id) and a session cookie; the same link in the same browser resumes
them. They get at most `quota` items (gold included): regular items by the ordinary assignment rules
(`service.next_assignment`), gold items by their own schedule (`gold_plan`: which gold items, and where in their
quota, drawn from the study's recorded seed and the participant, so no two participants see the same gold item
at the same place and the schedule can be recomputed). When their quota is done, or nothing is left for them
after some work, they are sent to the platform's completion URL with the completion code (with the screen-out
code when the study's gold rule screens them out). No code is ever given for no work: when no regular item is
left, the link admits nobody ("No items left", and the researcher's `crowd list` says "items exhausted"), and a
participant who got in but found nothing left is told so (status `no_items`), without a code.

Participants' pages and URLs never name an item: their assignments are reached by an opaque reference
(`/t/REF`, `assignment_ref`), and the page shows no item id, so nothing tells which items are gold or which
tier an item is. A participant who stays
past the time limit, or whom the admin marks as returned, loses their unfinished items to the queue and their
place to someone else. The link is shared by every participant, so it never opens an existing participant's
account: a lost cookie is replaced by a personal login link the admin issues (`reissue`).

The study's operations in one namespace (`studies.create_study`, `studies.enter`, ...), each in the module of
its concern: `crowd_common.py` (what both sides share), `crowd_admin.py` (the admin's side) and
`crowd_participants.py` (the participant's side).
"""

from __future__ import annotations

from tailorbench.annotation.crowd_admin import (
    close_study,
    create_study,
    describe,
    gold_per_participant,
    gold_plan,
    gold_problem,
    items_left,
    link,
    list_studies,
    participants,
    reissue,
    release,
    release_timed_out,
    state,
    study_url,
)
from tailorbench.annotation.crowd_common import (
    EXTERNAL_ID,
    MAX_CONSENT,
    PROLIFIC_COMPLETION_URL,
    PROLIFIC_PARAMS,
    ROLE,
    STATUSES,
    Refused,
    completion_target,
    secret_hash,
)
from tailorbench.annotation.crowd_participants import (
    NO_ITEMS,
    NO_PLATFORM_IDS,
    TIME_UP,
    EntryParams,
    Exit,
    assignment_quota,
    assignment_ref,
    by_ref,
    check_entry,
    enter,
    entry_params,
    exit_code,
    exit_url,
    find_study,
    locked_participant,
    next_assignment,
    place_kept_until,
    platform_ids,
    quota,
    resume,
    submit_and_next,
    time_is_up,
)

__all__ = [
    "EXTERNAL_ID",
    "MAX_CONSENT",
    "NO_ITEMS",
    "NO_PLATFORM_IDS",
    "PROLIFIC_COMPLETION_URL",
    "PROLIFIC_PARAMS",
    "ROLE",
    "STATUSES",
    "TIME_UP",
    "EntryParams",
    "Exit",
    "Refused",
    "assignment_quota",
    "assignment_ref",
    "by_ref",
    "check_entry",
    "close_study",
    "completion_target",
    "create_study",
    "describe",
    "enter",
    "entry_params",
    "exit_code",
    "exit_url",
    "find_study",
    "gold_per_participant",
    "gold_plan",
    "gold_problem",
    "items_left",
    "link",
    "list_studies",
    "locked_participant",
    "next_assignment",
    "participants",
    "place_kept_until",
    "platform_ids",
    "quota",
    "reissue",
    "release",
    "release_timed_out",
    "resume",
    "secret_hash",
    "state",
    "study_url",
    "submit_and_next",
    "time_is_up",
]
