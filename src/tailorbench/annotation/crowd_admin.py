"""The admin's side of a crowd study (`studies.py`): creating it (the gold schedule checked against its quota),
its link, listing studies and their participants, closing it, releasing participants who ran out of time or
returned, and reissuing a participant's login."""

from __future__ import annotations

import random
import secrets
import statistics
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from tailorbench.annotation import models as orm
from tailorbench.annotation import service, tasks
from tailorbench.annotation.crowd_common import (
    CODE_PATTERN,
    MAX_CONSENT,
    PARAM_NAME,
    PROLIFIC_COMPLETION_URL,
    PROLIFIC_PARAMS,
    STATUSES,
    as_utc,
    secret_hash,
)
from tailorbench.annotation.db import Database
from tailorbench.annotation.models import Assignment, Item, Participant, Study, utcnow
from tailorbench.errors import ConfigError
from tailorbench.options import as_url


def _check_code(option: str, code: str) -> str:
    code = code.strip()
    if not CODE_PATTERN.fullmatch(code):
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
    if len(params) != 3 or len(set(params)) != 3 or not all(PARAM_NAME.fullmatch(p) for p in params):
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


def get_study(s: Session, study_id: int, lock: bool = False) -> Study:
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


def holding_count(s: Session, study: Study) -> int:
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
                        "state": state(study, left, holding_count(s, study)),
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
        study = get_study(s, study_id)
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
        study = get_study(s, study_id)
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
            status = "timed_out" if is_expired(study, part, now) else part.status
            end = part.finished_at or part.released_at
            code = {"finished": study.completion_code, "screened_out": study.screenout_code}.get(status)
            out.append({"external_id": part.external_id, "status": status, "items": len(labels),
                        "gold_items": len(scores), "gold_score": sum(scores) / len(scores) if scores else None,
                        "minutes": round(((as_utc(end) if end else now) - as_utc(part.started_at))
                                         .total_seconds() / 60, 1),
                        "median_seconds": round(statistics.median(times) / 1000, 1) if times else None,
                        "code": code, "started_at": as_utc(part.started_at).isoformat()})
        return out


def close_study(db: Database, study_id: int) -> dict[str, Any]:
    """Close a study: its link lets nobody in any more; participants already in keep working."""
    with db.session() as s:
        study = get_study(s, study_id, lock=True)
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


def leave_study(s: Session, part: Participant, status: str) -> int:
    """Take `part` out of the study with `status`, releasing their unfinished items; returns how many."""
    now = utcnow()
    part.status = status
    if status in ("timed_out", "returned", "no_items"):
        part.released_at = now
    else:
        part.finished_at = now
    return _release_open(s, part.user_id)


def is_expired(study: Study, part: Participant, now: datetime) -> bool:
    return part.status == "active" and as_utc(part.started_at) + timedelta(minutes=study.time_limit_min) <= now


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
            out["released"] += leave_study(s, part, "returned")
            out["returned"] += 1
    cutoff = now - timedelta(minutes=study.time_limit_min)
    for part in s.scalars(select(Participant).where(Participant.study_id == study.id, Participant.status == "active",
                                                    Participant.started_at <= cutoff)).all():
        out["released"] += leave_study(s, part, "timed_out")
        out["timed_out"] += 1
    return out


def release(db: Database, study_id: int, returned: Sequence[str] = ()) -> dict[str, Any]:
    """`release_timed_out` now, for one study (the service also does it whenever someone enters)."""
    with db.session() as s:
        study = get_study(s, study_id, lock=True)
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
