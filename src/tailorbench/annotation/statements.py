"""Prebuilt statements for the per-request paths that go through SQLAlchemy (session lookup, assignment, task
page, and `service.submit` for the Python API); the web app's submissions use plain SQL instead (submit_sql.py).

Built once with bind parameters and run on the session's connection: building a SELECT per call and running it
through the ORM costs several times the SQL itself (measured: 164 µs vs 23 µs for the session lookup on SQLite).
"""

from __future__ import annotations

from sqlalchemy import bindparam, exists, func, insert, select, text, update

from tailorbench.annotation.models import Assignment, Item, Label, Member, Project, User, WebSession

IDENTIFY = (
    select(User.id, User.name, User.role, WebSession.csrf, WebSession.expires_at)
    .join(User, User.id == WebSession.user_id)
    .where(WebSession.id_hash == bindparam("h"), User.active.is_(True))
)
OPEN_ASSIGNMENT = (
    select(Assignment.id, Assignment.layout)
    .where(Assignment.user_id == bindparam("u"), Assignment.project_id == bindparam("p"), Assignment.done.is_(False))
    .order_by(Assignment.id)
    .limit(1)
)
MEMBER_PROJECT = (
    select(Project.task_type, Project.n_per_item, Project.gold_every)
    .join(Member, Member.project_id == Project.id)
    .where(Project.id == bindparam("p"), Member.user_id == bindparam("u"))
)
MY_COUNTS = (
    select(Assignment.is_gold, Assignment.done, func.count())
    .where(Assignment.user_id == bindparam("u"), Assignment.project_id == bindparam("p"))
    .group_by(Assignment.is_gold, Assignment.done)
)
_NOT_MINE = ~exists().where(Assignment.item_id == Item.id, Assignment.user_id == bindparam("u"))
GOLD_ITEM = (
    select(Item.id, Item.is_gold, Item.ext_id, Item.payload)
    .where(Item.project_id == bindparam("p"), Item.is_gold.is_(True), _NOT_MINE)
    .order_by(Item.seq)
    .limit(1)
)
REGULAR_ITEM = (
    select(Item.id, Item.is_gold, Item.ext_id, Item.payload)
    .where(Item.project_id == bindparam("p"), Item.is_gold.is_(False), Item.n_assigned < bindparam("n"), _NOT_MINE)
    .order_by(Item.n_assigned, Item.seq)
    .limit(1)
)
# PostgreSQL, regular items only (a gold item goes to everyone: its row is neither locked nor counted): the
# job-queue pattern (see service.next_assignment); FOR NO KEY UPDATE, which does not block other transactions'
# foreign key checks on the item (see submit_sql.py). WAIT: the same pick waiting for the rows others hold, for
# when the skipping one found nothing (the last free slots may be in another annotator's open transaction).
REGULAR_ITEM_LOCKED = REGULAR_ITEM.with_for_update(skip_locked=True, of=Item, key_share=True)
REGULAR_ITEM_WAIT = REGULAR_ITEM.with_for_update(of=Item, key_share=True)
NEW_ASSIGNMENT = insert(Assignment).returning(Assignment.id)
#: a regular item's assignments so far, what N caps (gold items are not counted)
COUNT_ASSIGNED = update(Item).where(Item.id == bindparam("i")).values(n_assigned=Item.n_assigned + 1)

ASSIGNMENT_ROW = (
    select(Assignment.user_id, Assignment.project_id, Assignment.item_id, Assignment.layout, Assignment.done,
           Assignment.created_at, Item.payload, Item.ext_id, Project.task_type, Project.name, Project.instructions,
           Project.n_per_item, Project.gold_every)
    .join(Item, Item.id == Assignment.item_id)
    .join(Project, Project.id == Assignment.project_id)
    .where(Assignment.id == bindparam("a"))
)
ASSIGNMENT_ROW_LOCKED = ASSIGNMENT_ROW.with_for_update(of=Assignment)
DONE_COUNT = select(func.count()).select_from(Assignment).where(
    Assignment.user_id == bindparam("u"), Assignment.project_id == bindparam("p"), Assignment.done.is_(True))
NEW_LABEL = insert(Label)
CLOSE_ASSIGNMENT = update(Assignment).where(Assignment.id == bindparam("a")).values(done=True)

#: PostgreSQL: an assignment need not survive a database crash (it would simply be made again), so its commit
#: does not wait for the WAL flush; a label's commit does, and flushes the assignment's WAL before it anyway.
NO_SYNC_COMMIT = text("SET LOCAL synchronous_commit = off")
