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
"""

from __future__ import annotations

import random
import re
import secrets
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from tailorbench.annotation import models as orm
from tailorbench.annotation import service, tasks
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Participant, Study, utcnow
from tailorbench.annotation.submit_sql import Gone, Result
from tailorbench.errors import ConfigError
from tailorbench.options import as_url

#: the role of the accounts made for study participants
ROLE = "participant"
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
PROLIFIC_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
STATUSES = ("active", "finished", "screened_out", "timed_out", "returned", "no_items")
#: what a platform id may look like (Prolific's are 24 hex digits); anything else is refused, never stored
EXTERNAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}")
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
_CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")
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


def _aware(stamp: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite gives them back naive)."""
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def completion_target(url: str, code: str) -> str:
    """The platform's completion URL for `code` ("{code}" in the URL is replaced, URL-quoted)."""
    return url.replace("{code}", quote(code, safe=""))


# --- the admin's side ----------------------------------------------------------------------------------


def _check_code(option: str, code: str) -> str:
    code = code.strip()
    if not _CODE.fullmatch(code):
        raise ConfigError(f"{option}: a completion code is 1-100 letters, digits, '-' or '_', got {code!r}")
    return code


def create_study(db: Database, project: str | int, quota: int, max_participants: int, completion_code: str,
                 screenout_code: str | None = None, screenout_gold_below: float | None = None,
                 screenout_after_gold: int = 2, time_limit_min: int = 60,
                 completion_url: str = PROLIFIC_COMPLETION_URL,
                 params: Sequence[str] = PROLIFIC_PARAMS, consent: str = "") -> tuple[int, str]:
    """Open a study on `project`; returns (study id, link secret). The secret is shown once, stored hashed.
    `params`: the URL parameter names of the participant id, the platform's study id and session id;
    `consent`: the researcher's consent and information text (the consent page shows it first)."""
    if quota < 1 or max_participants < 1 or time_limit_min < 1:
        raise ConfigError("--quota, --max-participants and --time-limit (in minutes) must be at least 1")
    completion_code = _check_code("--completion-code", completion_code)
    if (screenout_code is None) != (screenout_gold_below is None):
        raise ConfigError("--screenout-code and --screenout-gold-below go together (the code and its rule)")
    if screenout_code is not None:
        screenout_code = _check_code("--screenout-code", screenout_code)
    if screenout_gold_below is not None and not 0.0 < screenout_gold_below <= 1.0:
        raise ConfigError(f"--screenout-gold-below: a gold score in (0, 1], got {screenout_gold_below}")
    if len(consent) > MAX_CONSENT:
        raise ConfigError(f"--consent: at most {MAX_CONSENT} characters, got {len(consent)}")
    if screenout_after_gold < 1:
        raise ConfigError("--screenout-after-gold must be at least 1")
    as_url("--completion-url", completion_url)
    if len(params) != 3 or len(set(params)) != 3 or not all(_PARAM_NAME.fullmatch(p) for p in params):
        raise ConfigError(f"the URL parameter names are three distinct names (id, study, session), got {params!r}")
    secret = secrets.token_urlsafe(24)
    with db.session() as s:
        p = service.find_project(s, project)
        n_gold = s.scalar(select(func.count()).select_from(Item).where(Item.project_id == p.id,
                                                                       Item.is_gold.is_(True))) or 0
        problem = gold_problem(quota, p.gold_every, n_gold, screenout_after_gold if screenout_code else None)
        if problem is not None:
            raise ConfigError(problem)
        study = Study(project_id=p.id, secret_hash=secret_hash(secret), link_secret=secret,
                      gold_seed=secrets.randbelow(2**31), quota=quota,
                      max_participants=max_participants, time_limit_min=time_limit_min,
                      completion_url=completion_url, completion_code=completion_code, screenout_code=screenout_code,
                      screenout_gold_below=screenout_gold_below, screenout_after_gold=screenout_after_gold,
                      param_id=params[0], param_study=params[1], param_session=params[2],
                      consent=consent.strip(), is_open=True)
        s.add(study)
        s.flush()
        return study.id, secret


def gold_per_participant(quota: int, gold_every: int, n_gold: int) -> int:
    """How many gold items one participant sees: one in each block of `gold_every` + 1 items of their quota
    (the project's rule, a gold item after every `gold_every` regular ones), at most every gold item once."""
    return min(n_gold, quota // (gold_every + 1))


def gold_problem(quota: int, gold_every: int, n_gold: int, screenout_after: int | None) -> str | None:
    """Why a study's settings make its gold items or its screen-out rule a dead letter (None when they apply):
    gold items that no participant can be shown, or a screen-out rule that needs more gold items than one
    participant sees (with `screenout_after` gold items answered; None: no screen-out rule)."""
    per = gold_per_participant(quota, gold_every, n_gold)
    shown = (f"with --quota {quota} and one gold item in every {gold_every + 1} items (the project's gold "
             f"interval is {gold_every}), a participant sees {quota} // {gold_every + 1} = "
             f"{quota // (gold_every + 1)} gold item(s), and the project has {n_gold}")
    if screenout_after is not None:
        if n_gold == 0:
            return ("--screenout-code: the project has no gold items, so nobody can ever be screened out (the "
                    "rule never applies); import gold items first, or drop the screen-out rule")
        if per < screenout_after:
            fixes = [f"--quota {screenout_after * (gold_every + 1)} or more"] if n_gold >= screenout_after else []
            fixes += [f"--screenout-after-gold {per}"] if per else []
            fixes += [] if n_gold >= screenout_after else [f"at least {screenout_after} gold items"]
            return (f"--screenout-after-gold {screenout_after} can never be reached: {shown}, so nobody can ever "
                    f"be screened out; use {' or '.join(fixes)}")
    elif n_gold and per == 0:
        return (f"the project's {n_gold} gold item(s) would never be shown: {shown}; use --quota "
                f"{gold_every + 1} or more, or a project with a smaller gold interval")
    return None


def gold_plan(seed: int, participant_id: int, quota: int, gold_every: int, gold_ids: Sequence[int]) -> dict[int, int]:
    """One participant's gold schedule, {position in their quota (0-based): gold item id}: the gold items they
    see (`gold_per_participant`), drawn at random from `gold_ids`, one at a random position in each block of
    `gold_every` + 1 items. Drawn from the study's recorded seed and the participant, so it is the same every
    time it is computed and different for each participant."""
    rng = random.Random(f"{seed}:{participant_id}")
    k = gold_per_participant(quota, gold_every, len(gold_ids))
    chosen = rng.sample(sorted(gold_ids), k)
    return {block * (gold_every + 1) + rng.randrange(gold_every + 1): item for block, item in enumerate(chosen)}


def study_url(base_url: str, secret: str, params: Sequence[str] = PROLIFIC_PARAMS) -> str:
    """The study URL to give the platform: the link with placeholders for the three ids in Prolific's
    `{{%NAME%}}` form (another platform has its own placeholder syntax: replace them there)."""
    query = "&".join(f"{name}={{{{%{name}%}}}}" for name in params)
    return f"{as_url('--base-url', base_url).rstrip('/')}/s/{secret}?{query}"


def _study(s: Session, study_id: int, lock: bool = False) -> Study:
    q = select(Study).where(Study.id == study_id)
    study = s.scalar(q.with_for_update() if lock else q)
    if study is None:
        raise service.NotFound(f"no study {study_id}")
    return study


def items_left(s: Session, project_id: int) -> int:
    """Regular items of the project that can still take an annotator (fewer than N assignments): none left
    means a newcomer would get no work, so the study link admits nobody."""
    n = select(orm.Project.n_per_item).where(orm.Project.id == project_id).scalar_subquery()
    return s.scalar(select(func.count()).select_from(Item).where(
        Item.project_id == project_id, Item.is_gold.is_(False), Item.n_assigned < n)) or 0


def _holding(s: Session, study: Study) -> int:
    """Places taken: participants finished, or active within the time limit."""
    cutoff = utcnow() - timedelta(minutes=study.time_limit_min)
    return s.scalar(select(func.count()).select_from(Participant).where(
        Participant.study_id == study.id, (Participant.status == "finished")
        | ((Participant.status == "active") & (Participant.started_at > cutoff)))) or 0


def state(study: Study, left: int, holding: int) -> str:
    """What the study link does now: "open", "closed", "full" (every place taken) or "items exhausted"."""
    if not study.is_open:
        return "closed"
    if left == 0:
        return "items exhausted"
    return "full" if holding >= study.max_participants else "open"


def list_studies(db: Database, study_id: int | None = None) -> list[dict[str, Any]]:
    """Every study (or the one `study_id`) with its settings, its state (`state`), the regular items left,
    how many participants stand where and whether its link can be shown again (`link_kept`)."""
    with db.session() as s:
        counts: dict[int, dict[str, int]] = {}
        for sid, status, n in s.execute(select(Participant.study_id, Participant.status, func.count())
                                        .group_by(Participant.study_id, Participant.status)):
            counts.setdefault(sid, {})[status] = n
        out = []
        query = select(Study, orm.Project.name).join(orm.Project, orm.Project.id == Study.project_id)
        if study_id is not None:
            query = query.where(Study.id == study_id)
        for study, pname in s.execute(query.order_by(Study.id)):
            left = items_left(s, study.project_id)
            out.append({**describe(study), "project": pname, "items_left": left,
                        "state": state(study, left, _holding(s, study)),
                        "participants": {st: counts.get(study.id, {}).get(st, 0) for st in STATUSES}})
        if study_id is not None and not out:
            raise service.NotFound(f"no study {study_id}")
        return out


def describe(study: Study) -> dict[str, Any]:
    return {"id": study.id, "open": study.is_open, "quota": study.quota,
            "max_participants": study.max_participants, "time_limit_min": study.time_limit_min,
            "completion_url": study.completion_url, "completion_code": study.completion_code,
            "screenout_code": study.screenout_code, "screenout_gold_below": study.screenout_gold_below,
            "screenout_after_gold": study.screenout_after_gold,
            "params": [study.param_id, study.param_study, study.param_session], "consent": study.consent,
            "link_kept": study.link_secret is not None}


def link(db: Database, study_id: int, base_url: str) -> str:
    """The study URL to give the platform, again (ConfigError for a study made before links were kept)."""
    with db.session() as s:
        study = _study(s, study_id)
        if study.link_secret is None:
            raise ConfigError(f"study {study_id} was made before study links were kept, so its link cannot be "
                              "shown again: close it and create a new one")
        return study_url(base_url, study.link_secret, (study.param_id, study.param_study, study.param_session))


def participants(db: Database, study_id: int) -> list[dict[str, Any]]:
    """Each participant of a study, in order of entry: platform id, `status` (a participant past the time limit
    reads "timed_out" even before anyone released them), `items` done (gold included, as the quota counts),
    `gold_items` and `gold_score` (mean score; None without gold), `minutes` from entry to leaving (or to now
    while active), `median_seconds` per item by the server's timing, and the `code` they were given (None
    while they have none)."""
    with db.session() as s:
        study = _study(s, study_id)
        task = tasks.task_type(service.find_project(s, study.project_id).task_type)
        parts = s.scalars(select(Participant).where(Participant.study_id == study_id)
                          .order_by(Participant.id)).all()
        by_user: dict[int, list[tuple[bool, Any, Any, int | None]]] = {p.user_id: [] for p in parts}
        q = (select(orm.Label.user_id, Item.is_gold, Item.gold, orm.Label.value, orm.Label.server_ms)
             .join(Item, Item.id == orm.Label.item_id)
             .where(orm.Label.project_id == study.project_id, orm.Label.user_id.in_(list(by_user))))
        for uid, is_gold, gold, value, ms in s.execute(q):
            by_user[uid].append((is_gold, gold, value, ms))
        now = utcnow()
        out = []
        for part in parts:
            labels = by_user[part.user_id]
            scores = [task.gold_score(gold, value) for is_gold, gold, value, _ in labels if is_gold]
            times = [ms for *_, ms in labels if ms is not None]
            status = "timed_out" if _expired(study, part, now) else part.status
            end = part.finished_at or part.released_at
            code = {"finished": study.completion_code, "screened_out": study.screenout_code}.get(status)
            out.append({"external_id": part.external_id, "status": status, "items": len(labels),
                        "gold_items": len(scores), "gold_score": sum(scores) / len(scores) if scores else None,
                        "minutes": round(((_aware(end) if end else now) - _aware(part.started_at))
                                         .total_seconds() / 60, 1),
                        "median_seconds": round(statistics.median(times) / 1000, 1) if times else None,
                        "code": code, "started_at": _aware(part.started_at).isoformat()})
        return out


def close_study(db: Database, study_id: int) -> dict[str, Any]:
    """Close a study: its link lets nobody in any more; participants already in keep working."""
    with db.session() as s:
        study = _study(s, study_id, lock=True)
        study.is_open = False
        return describe(study)


def _release_open(s: Session, user_id: int) -> int:
    """Put a participant's unfinished assignments back in the queue; returns how many."""
    items = s.scalars(delete(Assignment).where(Assignment.user_id == user_id, Assignment.done.is_(False))
                      .returning(Assignment.item_id)).all()
    for item_id in items:  # gold items are not counted (every annotator gets them)
        s.execute(update(Item).where(Item.id == item_id, Item.is_gold.is_(False))
                  .values(n_assigned=Item.n_assigned - 1))
    return len(items)


def _leave(s: Session, part: Participant, status: str) -> int:
    """Take `part` out of the study with `status`, releasing their unfinished items; returns how many."""
    now = utcnow()
    part.status = status
    if status in ("timed_out", "returned", "no_items"):
        part.released_at = now
    else:
        part.finished_at = now
    return _release_open(s, part.user_id)


def _expired(study: Study, part: Participant, now: datetime) -> bool:
    return part.status == "active" and _aware(part.started_at) + timedelta(minutes=study.time_limit_min) <= now


def release_timed_out(s: Session, study: Study, returned: Sequence[str] = ()) -> dict[str, int]:
    """Release the participants past the time limit, and those in `returned` (platform ids the admin reports as
    returned): their unfinished items go back to the queue, their place to someone else."""
    now = utcnow()
    out = {"timed_out": 0, "returned": 0, "released": 0}
    for ext in returned:
        part = s.scalar(select(Participant).where(Participant.study_id == study.id, Participant.external_id == ext))
        if part is None:
            raise service.NotFound(f"no participant {ext!r} in study {study.id}")
        if part.status in ("active", "timed_out"):
            out["released"] += _leave(s, part, "returned")
            out["returned"] += 1
    cutoff = now - timedelta(minutes=study.time_limit_min)
    for part in s.scalars(select(Participant).where(Participant.study_id == study.id, Participant.status == "active",
                                                    Participant.started_at <= cutoff)).all():
        out["released"] += _leave(s, part, "timed_out")
        out["timed_out"] += 1
    return out


def release(db: Database, study_id: int, returned: Sequence[str] = ()) -> dict[str, Any]:
    """`release_timed_out` now, for one study (the service also does it whenever someone enters)."""
    with db.session() as s:
        study = _study(s, study_id, lock=True)
        return {"id": study.id, **release_timed_out(s, study, returned)}


def reissue(db: Database, external_id: str, study_id: int | None = None) -> tuple[Participant, str, str]:
    """A personal login link for a participant who lost their cookie (a new browser, cleared cookies): returns
    (participant, account name, token); the previous link and sessions stop working. `study_id` when the id is
    in several studies."""
    with db.session() as s:
        q = select(Participant).where(Participant.external_id == external_id)
        if study_id is not None:
            q = q.where(Participant.study_id == study_id)
        found = s.scalars(q).all()
        if not found:
            raise service.NotFound(f"no participant {external_id!r}" + (f" in study {study_id}" if study_id else ""))
        if len(found) > 1:
            raise ConfigError(f"participant {external_id!r} is in studies "
                              f"{', '.join(str(p.study_id) for p in found)}: name one with --study")
        part = found[0]
        user = s.get(orm.User, part.user_id)
        assert user is not None
        name = user.name
    return part, name, service.rotate_link(db, name)


# --- the participant's side ----------------------------------------------------------------------------


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
    if _holding(s, study) >= study.max_participants:
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
        study = _study(s, study.id, lock=True)  # one entry at a time per study: the cap holds
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
        return _study(s, part.study_id).project_id


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
        _leave(s, part, status)
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
    if _expired(study, part, utcnow()):
        _leave(s, part, "timed_out")
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
    return (_aware(part.started_at) + timedelta(minutes=study.time_limit_min)).strftime("%Y-%m-%d %H:%M UTC")


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
