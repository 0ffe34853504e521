"""The typed results of the verbs with people in them: `tb.annotate.*` (projects, annotators, crowd studies) and
`tb.study.*` (a whole human study from one config, humanstudy/)."""

from __future__ import annotations

from typing import Any

from tailorbench.api.output_base import Output

# -- tb.annotate.*: the objects the annotation verbs print ----------------------------------------------------


class ProjectCreated(Output):
    """`tailor annotate project create`."""

    project: str
    id: int
    task_type: str
    n_per_item: int


class ProjectProgress(Output):
    """`tailor annotate progress` (and each row of `project list`): labels needed and done, per annotator;
    `flagged` and `agreement` when asked for."""

    project: str
    task_type: str
    n_per_item: int
    items: int
    gold_items: int
    labels_needed: int
    labels_done: int
    items_complete: int
    percent_done: float
    annotators: list[dict[str, Any]] = []
    flagged: list[dict[str, Any]] | None = None
    agreement: dict[str, Any] | None = None
    #: per annotator: median time per item, kappa against the others' majority, agreement with gold (quality.py)
    quality: dict[str, dict[str, Any]] | None = None


class ItemsImported(Output):
    """`tailor annotate import`: items and gold items stored (all or nothing)."""

    project: str
    format: str
    items: int
    gold_items: int


class Annotator(Output):
    """`tailor annotate annotator add|link|list|deactivate|activate`: `login_link` is shown once, when it is made;
    it logs in once, until `link_expires_at` (`link_used_at`: when it did). `released`: the unfinished
    assignments a deactivation gave back to the queue."""

    name: str
    id: int | None = None
    role: str | None = None
    active: bool | None = None
    projects: list[str] = []
    login_link: str | None = None
    link_expires_at: str | None = None
    link_used_at: str | None = None
    released: int | None = None


class Membership(Output):
    """`tailor annotate annotator join`."""

    name: str
    project: str


class Released(Output):
    """`tailor annotate release`: unfinished assignments put back in the queue."""

    project: str
    released: int


class AnnotationExport(Output):
    """`tailor annotate export`: the files written (long-format ratings; a tiered benchmark for pairwise)."""

    files: Any = None
    exported_at: str | None = None


class LabelsImported(Output):
    """`tailor annotate import-labels`: an annotation tool's export read into the long format (`out`), with what
    was not a rating counted by reason (`not_rated`) and every unmappable row (`unmappable`: path, line, reason)."""

    tool: str
    out: str | None = None
    ratings: int = 0
    not_rated: dict[str, int] = {}
    unmappable: list[dict[str, Any]] = []


class CrowdStudy(Output):
    """`tailor annotate crowd create|list|close`: a project opened to a crowd platform (Prolific by default).
    `link`: the study URL to give the platform, with its placeholders (when the study is made, and from
    `crowd link`); `participants` counts them by status (active, finished, screened_out, timed_out, returned,
    no_items); `state`: what the link does now (open, closed, full, items exhausted); `items_left`: regular
    items that can still take an annotator."""

    id: int
    project: str | None = None
    open: bool | None = None
    quota: int | None = None
    max_participants: int | None = None
    time_limit_min: int | None = None
    completion_url: str | None = None
    completion_code: str | None = None
    screenout_code: str | None = None
    screenout_gold_below: float | None = None
    screenout_after_gold: int | None = None
    params: list[str] = []
    consent: str | None = None
    participants: dict[str, int] = {}
    link: str | None = None
    state: str | None = None
    items_left: int | None = None
    #: whether `crowd link` can show the link again (False for studies made before links were kept)
    link_kept: bool | None = None


class StudyParticipant(Output):
    """`tailor annotate crowd participants STUDY`: one participant, by platform id: `status` (active, finished,
    screened_out, timed_out, returned, no_items), `items` done (gold included), `gold_items` and `gold_score`,
    `minutes` in the study, `median_seconds` per item (the server's timing) and the `code` they were given."""

    external_id: str
    status: str
    items: int
    gold_items: int
    gold_score: float | None = None
    minutes: float
    median_seconds: float | None = None
    code: str | None = None
    started_at: str


class StudyLink(Output):
    """`tailor annotate crowd link STUDY`: the study URL to give the platform, again."""

    id: int
    link: str


class StudyReleased(Output):
    """`tailor annotate crowd release`: participants taken out (past the time limit, or reported as returned)
    and their unfinished assignments put back in the queue."""

    id: int
    timed_out: int
    returned: int
    released: int


class ParticipantLink(Output):
    """`tailor annotate crowd reissue`: a participant's personal login link (shown once), for a lost cookie."""

    external_id: str
    study: int
    name: str
    status: str
    login_link: str


# -- tb.study.*: a whole human study from one config (humanstudy/) ------------------------------------------------


class HumanStudyInit(Output):
    """`tailor study init DIR`: the study directory with its study.yaml and the example's input files."""

    dir: str
    config: str
    files: list[str] = []


class HumanStudyPlan(Output):
    """`tailor study plan DIR`: every step (status, inputs, outputs, model calls, tokens, cost), the stale steps
    (done before with another config or input), the totals and the crowd cost per stage."""

    study: str
    steps: list[dict[str, Any]] = []
    stale: list[str] = []
    model_calls: int = 0
    model_calls_known: bool = True
    estimated_cost_usd: float | None = None
    crowd_cost: dict[str, Any] = {}


class HumanStudyRun(Output):
    """`tailor study run DIR`: the steps this run did, where it waits for people (stage, labels done / wanted,
    missing, the link) and whether the study is finished."""

    study: str
    dir: str
    ran: list[str] = []
    waiting: dict[str, Any] | None = None
    done: list[str] = []
    finished: bool = False


class HumanStudyStatus(Output):
    """`tailor study status DIR`: per stage the current step, labels done / wanted, each annotator's quality and
    the crowd study's open places."""

    study: str
    dir: str
    stages: dict[str, Any] = {}
    finished: bool = False


class HumanStudyReport(Output):
    """`tailor study report DIR`: the study report (study.json's figures per stage) and where it was written."""

    study: str
    out: str
    stages: dict[str, Any] = {}
