"""The participant's side of a crowd study (`studies.py`): entering by the study link (the platform's ids
checked, an account made or resumed), the next item within the quota (gold items by their own schedule), the
opaque assignment references, the time limit, and the exit to the platform with the completion or screen-out
code."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from tailorbench.annotation import models as orm
from tailorbench.annotation import service, tasks
from tailorbench.annotation.crowd_admin import (
    get_study,
    gold_plan,
    holding_count,
    is_expired,
    items_left,
    leave_study,
    release_timed_out,
)
from tailorbench.annotation.crowd_common import EXTERNAL_ID, ROLE, Refused, as_utc, completion_target, secret_hash
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Participant, Study, utcnow
from tailorbench.annotation.submit_sql import Gone, Result


@dataclass(frozen=True)
class EntryParams:
    """The platform's ids from the study link's query string."""

    external_id: str
    study_id: str
    session_id: str


def find_study(s: Session, secret: str) -> Study:
    """The study of a link secret (Refused 404 for an unknown one: it looks like no page at all)."""
    study = s.scalar(select(Study).where(Study.secret_hash == secret_hash(secret))) if secret else None
    if study is None:
        raise Refused(404, "Not available", "There is no study at this address. Check the link you were given.")
    return study


def entry_params(study: Study, query: Mapping[str, str]) -> EntryParams:
    """The participant's ids from the link, by the study's parameter names (Refused 400 for a missing or
    malformed one: the platform did not fill in its placeholders)."""
    got = []
    for name, required in ((study.param_id, True), (study.param_study, False), (study.param_session, False)):
        value = (query.get(name) or "").strip()
        if (value or required) and not EXTERNAL_ID.fullmatch(value):
            raise Refused(400, "Link incomplete",
                          f"The study link lacks a valid {name}. Open the study from the platform's page again.")
        got.append(value)
    return EntryParams(*got)


def _own_participant(s: Session, study: Study, user_id: int | None) -> Participant | None:
    if user_id is None:
        return None
    return s.scalar(select(Participant).where(Participant.study_id == study.id, Participant.user_id == user_id))


def check_entry(s: Session, study: Study, ids: EntryParams, user_id: int | None) -> Participant | None:
    """Before the consent page: the visitor's own participant record when their session is that participant's
    (they resume), None for a newcomer; Refused when the link cannot let them in."""
    mine = _own_participant(s, study, user_id)
    if mine is not None and mine.external_id == ids.external_id:
        if mine.external_study_id and ids.study_id != mine.external_study_id:
            raise Refused(403, "Another study",
                          "This link names another study than the one you started. Open the study from the "
                          "platform's page again.")
        return mine
    taken = s.scalar(select(Participant.id).where(Participant.study_id == study.id,
                                                  Participant.external_id == ids.external_id))
    if taken is not None:
        raise Refused(403, "Already started",
                      "This participant has already started the study in another browser. Continue there, or "
                      "message the researcher through the platform for a new personal link.")
    if not study.is_open:
        raise Refused(410, "Study closed", "This study is closed. Please return it on the platform.")
    if items_left(s, study.project_id) == 0:
        raise Refused(410, "No items left", "Every item of this study has been taken, so there is no work left "
                                            "for you (and no completion code). Please return the study on the "
                                            "platform.")
    if holding_count(s, study) >= study.max_participants:
        raise Refused(403, "Study full", "This study is full: all places are taken. Please return it on the "
                                         "platform.")
    return None


def _user_name(s: Session, study: Study, external_id: str) -> str:
    """The account's name: the platform id itself (the exports' raters are then platform ids, as in the
    Re-Centering files), or `ID~sSTUDY` when another account already has that name."""
    if s.scalar(select(orm.User.id).where(orm.User.name == external_id)) is None:
        return external_id
    return f"{external_id}~s{study.id}"


def enter(db: Database, secret: str, ids: EntryParams) -> tuple[str, int]:
    """A newcomer accepted the consent page: make their account and participant record and log them in.
    Returns (session cookie value, project id). Refused when the study is closed or full or the id is taken.
    Participants past the time limit are released first, so their places count as free."""
    with db.session() as s:
        study = find_study(s, secret)
        study = get_study(s, study.id, lock=True)  # one entry at a time per study: the cap holds
        release_timed_out(s, study)
        check_entry(s, study, ids, None)  # closed, full, or the id taken meanwhile
        user = orm.User(name=_user_name(s, study, ids.external_id), role=ROLE, active=True,
                    token_hash=service.token_hash(secrets.token_urlsafe(32)))  # no login link until `reissue`
        s.add(user)
        s.flush()
        s.add(orm.Member(project_id=study.project_id, user_id=user.id))
        now = utcnow()
        s.add(Participant(study_id=study.id, user_id=user.id, external_id=ids.external_id,
                          external_study_id=ids.study_id, external_session_id=ids.session_id, status="active",
                          consent_at=now, started_at=now))
        cookie = secrets.token_urlsafe(32)
        s.add(orm.WebSession(id_hash=service.token_hash(cookie), user_id=user.id, csrf=secrets.token_urlsafe(32),
                         expires_at=now + timedelta(days=service.SESSION_DAYS)))
        return cookie, study.project_id


def resume(db: Database, part_id: int, ids: EntryParams) -> int:
    """The participant came back through the link in their own browser: keep the latest platform session id.
    Returns the project id."""
    with db.session() as s:
        part = s.get(Participant, part_id)
        assert part is not None
        if ids.session_id:
            part.external_session_id = ids.session_id
        return get_study(s, part.study_id).project_id


@dataclass(frozen=True)
class Exit:
    """Where a participant goes instead of another item: `url` (the platform's completion URL with the code) or
    a page (`status`, `title`, `message`) for one who is out of the study."""

    url: str | None = None
    status: int = 303
    title: str = ""
    message: str = ""


def _gold_failed(s: Session, study: Study, user_id: int, project_id: int) -> bool:
    if study.screenout_gold_below is None:
        return False
    q = (select(orm.Label.value, Item.gold, orm.Project.task_type).join(Item, Item.id == orm.Label.item_id)
         .join(orm.Project, orm.Project.id == orm.Label.project_id)
         .where(orm.Label.user_id == user_id, orm.Label.project_id == project_id, Item.is_gold.is_(True)))
    rows = s.execute(q).all()
    if len(rows) < study.screenout_after_gold:
        return False
    task = tasks.task_type(rows[0][2])
    return sum(task.gold_score(gold, value) for value, gold, _ in rows) / len(rows) < study.screenout_gold_below


def _exit(s: Session, study: Study, part: Participant, status: str) -> Exit:
    if part.status == "active":
        leave_study(s, part, status)
    if part.status == "no_items":
        return NO_ITEMS
    code = study.screenout_code if status == "screened_out" else study.completion_code
    assert code is not None
    return Exit(completion_target(study.completion_url, code))


TIME_UP = Exit(status=410, title="Time is up",
               message="Your time for this study ran out (or you returned it), so your place went to someone "
                       "else. Please return the study on the platform.")


NO_ITEMS = Exit(status=410, title="No items left",
                message="Every item of this study was taken before you got one, so there is no work for you and "
                        "no completion code. Please return the study on the platform.")


def locked_participant(s: Session, user_id: int, project_id: int | None = None) -> tuple[Participant, Study] | None:
    """The participant record of `user_id` (in a study of `project_id`, when given) with its study, the
    participant's row locked: every step of one participant (a page load, a submit) runs one at a time, so two
    connections of theirs can never both make an assignment (PostgreSQL allowed five open ones and 12 labels
    on a quota of 10 before; SQLite's transactions are exclusive anyway). A participant past the time limit is
    released here. None for anyone who is no participant (of that project)."""
    q = (select(Participant, Study).join(Study, Study.id == Participant.study_id)
         .where(Participant.user_id == user_id))
    if project_id is not None:
        q = q.where(Study.project_id == project_id)
    found = s.execute(q.with_for_update(of=Participant)).first()
    if found is None:
        return None
    part, study = found
    if is_expired(study, part, utcnow()):
        leave_study(s, part, "timed_out")
    return part, study


def time_is_up(s: Session, user_id: int) -> Exit | None:
    """TIME_UP for a participant who timed out or returned the study (every route says so), else None."""
    found = locked_participant(s, user_id)
    return TIME_UP if found is not None and found[0].status in ("timed_out", "returned") else None


def next_assignment(s: Session, user_id: int, project_id: int) -> service.Current | Exit | None:
    """A participant's next step in `project_id`: their current assignment (resumed or new, never beyond the
    quota, never two open at once), or an Exit (done, screened out, out of time). None when they are no
    participant of this project's studies (then the ordinary rules apply)."""
    found = locked_participant(s, user_id, project_id)
    if found is None:
        return None
    part, study = found
    if part.status in ("finished", "screened_out", "no_items"):
        return _exit(s, study, part, part.status)
    if part.status in ("timed_out", "returned"):
        return TIME_UP
    if study.screenout_code is not None and _gold_failed(s, study, user_id, project_id):
        return _exit(s, study, part, "screened_out")
    n_done = n_open = 0
    for done, n in s.execute(select(Assignment.done, func.count()).where(
            Assignment.user_id == user_id, Assignment.project_id == project_id).group_by(Assignment.done)):
        n_done, n_open = (n, n_open) if done else (n_done, n)
    if n_done + n_open >= study.quota and not n_open:
        return _exit(s, study, part, "finished")
    current = None if n_open else _scheduled_gold(s, study, part, project_id, n_done)
    if current is None:  # resume, or a regular item (gold items come only by the schedule)
        current = service.next_assignment(s, user_id, project_id, gold=False)
    if current is None:  # items held by participants past the time limit come back, then try once more
        if release_timed_out(s, study)["released"]:
            current = service.next_assignment(s, user_id, project_id, gold=False)
        if current is None:  # nothing left: a code only for work done
            return _exit(s, study, part, "finished" if n_done else "no_items")
    return current


def _scheduled_gold(s: Session, study: Study, part: Participant, project_id: int,
                    position: int) -> service.Current | None:
    """The participant's gold item at `position` of their quota by their schedule (`gold_plan`), assigned
    now; None when a regular item comes here. A scheduled item they already had (gold imported since changed
    the draw) is replaced by another of the plan's they have not had."""
    project = s.get(orm.Project, project_id)
    assert project is not None
    gold_ids = s.scalars(select(Item.id).where(Item.project_id == project_id, Item.is_gold.is_(True))).all()
    plan = gold_plan(study.gold_seed or 0, part.id, study.quota, project.gold_every, gold_ids)
    if position not in plan:
        return None
    had = set(s.scalars(select(Assignment.item_id).where(Assignment.user_id == part.user_id,
                                                         Assignment.project_id == project_id)))
    todo = [plan[position]] + [i for _, i in sorted(plan.items())]
    item_id = next((i for i in todo if i not in had), None)
    if item_id is None:
        return None
    item = s.get(Item, item_id)
    assert item is not None
    layout = tasks.task_type(project.task_type).new_layout()
    a = Assignment(project_id=project_id, item_id=item_id, user_id=part.user_id, layout=layout, is_gold=True,
                   done=False, created_at=utcnow())
    s.add(a)
    s.flush()
    return service.Current(a.id, layout, position, (item.ext_id, item.payload))


def assignment_ref(s: Session, assignment_id: int) -> str:
    """The opaque reference of a participant's assignment (made on first use): what their URLs and pages
    carry instead of the assignment's id."""
    ref = s.scalar(select(Assignment.ref).where(Assignment.id == assignment_id))
    if ref is None:
        ref = secrets.token_urlsafe(16)
        s.execute(update(Assignment).where(Assignment.id == assignment_id).values(ref=ref))
    return ref


def by_ref(s: Session, user_id: int, ref: str) -> int:
    """The id of the participant's own assignment with reference `ref` (NotFound for anyone else's)."""
    found = s.scalar(select(Assignment.id).where(Assignment.ref == ref, Assignment.user_id == user_id)) if ref else None
    if found is None:
        raise service.NotFound("no such assignment")
    return found


def place_kept_until(s: Session, user_id: int) -> str | None:
    """When an active participant's place goes to someone else (their time limit, ISO UTC); None otherwise."""
    found = s.execute(select(Participant, Study).join(Study, Study.id == Participant.study_id)
                      .where(Participant.user_id == user_id)).first()
    if found is None or found[0].status != "active":
        return None
    part, study = found
    return (as_utc(part.started_at) + timedelta(minutes=study.time_limit_min)).strftime("%Y-%m-%d %H:%M UTC")


def quota(s: Session, user_id: int, project_id: int) -> int | None:
    """A participant's quota in `project_id` (what their task pages count down from); None for anyone else."""
    return s.scalar(select(Study.quota).join(Participant, Participant.study_id == Study.id)
                    .where(Participant.user_id == user_id, Study.project_id == project_id))


def assignment_quota(s: Session, role: str, assignment_id: int) -> int | None:
    """`quota` of the participant holding `assignment_id` (None, and no query, for other roles)."""
    if role != ROLE:
        return None
    return s.scalar(select(Study.quota).join(Participant, Participant.study_id == Study.id)
                    .join(Assignment, Assignment.user_id == Participant.user_id)
                    .where(Assignment.id == assignment_id, Assignment.project_id == Study.project_id))


def exit_code(s: Session, user_id: int) -> str | None:
    """The completion (or screen-out) code of a participant who is done; None while they are not."""
    found = s.execute(select(Participant.status, Study).join(Study, Study.id == Participant.study_id)
                      .where(Participant.user_id == user_id)).first()
    if found is None or found[0] not in ("finished", "screened_out"):
        return None
    return found[1].screenout_code if found[0] == "screened_out" else found[1].completion_code


def exit_url(s: Session, user_id: int) -> str | None:
    """The platform URL a participant who is done goes back to (completion or screen-out code); None while
    they are not done."""
    found = s.execute(select(Participant.status, Study).join(Study, Study.id == Participant.study_id)
                      .where(Participant.user_id == user_id)).first()
    if found is None or found[0] not in ("finished", "screened_out"):
        return None
    status, study = found
    code = study.screenout_code if status == "screened_out" else study.completion_code
    assert code is not None
    return completion_target(study.completion_url, code)


def submit_and_next(db: Database, user_id: int, assignment_id: int, form: Mapping[str, str]) -> Result:
    """A participant's submission, by the reference path (`service.submit`; the caller then shows
    `next_assignment`'s page), so their quota is counted: `SubmitSQL.submit_and_next`'s interface (Gone for
    someone else's assignment, tasks.FormError with nothing stored)."""
    try:
        with db.session() as s:
            found = locked_participant(s, user_id)  # one step of theirs at a time, past the time limit: out
            if found is not None and found[0].status in ("timed_out", "returned"):
                return Result(found[1].project_id, None)  # stores nothing; the caller's page says "Time is up"
            got = service.submit(s, user_id, assignment_id, form)
    except service.NotFound:
        raise Gone(assignment_id) from None
    return Result(got.project_id, None)


# the platform ids of the exports: service.NO_PLATFORM_IDS, service.platform_ids (exports sit below studies)
NO_PLATFORM_IDS = service.NO_PLATFORM_IDS
platform_ids = service.platform_ids
