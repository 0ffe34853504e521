"""Simulated participants for tests and demos: each follows the study link over HTTP as a crowd worker's browser
does (consent page, task pages, submit, the completion redirect), against the real annotation server.

Their answers come from a hidden truth every participant shares (a seeded hash of what the page shows, so no
item id is needed: participants' pages show none), followed at each participant's `accuracy` (otherwise another
label, drawn from their own seed); `seconds` is the time per item they report (a speeder reports little).
A participant with accuracy 0 fails gold items the truth answers. A participant who stops before the end gives
the place back (`crowd`, `release_left`: the platform's "returned"), so simulated people never hold crowd places
until the study's time limit. Everything a simulated participant does is made up: figures computed on it are
illustrative only.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
ACTION = re.compile(r'<form method="post" action="(/(?:t|a)/[^"]+)"')
ROW = re.compile(r'<span class="rowlabel pre">(.*?)</span>', re.DOTALL)
FIELD = re.compile(r'type="radio" name="([jrs])_([^"]+)"')
ANSWER = re.compile(r'<div class="pre answer-text" id="answer-(\d)">(.*?)</div>', re.DOTALL)
PROMPT = re.compile(r'<div class="pre question">(.*?)</div>', re.DOTALL)
JUDGMENTS = ("accepted", "uncertain", "rejected")


@dataclass
class Behaviour:
    """One participant: how often they give the hidden truth, and the seconds per item they report."""

    accuracy: float = 0.9
    seconds: float = 20.0


def _unit(*parts: str) -> float:
    """A number in [0, 1) fixed by `parts` (the hidden truth's coin)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def truth(kind: str, attribute: str, context: str, seed: int = 0) -> str:
    """The hidden truth for one row of a page: a judgment (attributes), yes/no (relevance) or 1..5 for answer 2
    against answer 1 (ab_rating, decided on the pair of texts whatever their order: see `answers`)."""
    u = _unit(str(seed), kind, attribute, context)
    if kind == "j":
        return "accepted" if u < 0.7 else "rejected" if u < 0.9 else "uncertain"
    if kind == "r":
        return "yes" if u < 0.45 else "no"
    return str(1 + min(4, int(u * 5)))


def page_answers(page: str, rng: random.Random, behaviour: Behaviour, seed: int) -> dict[str, str]:
    """The form fields a participant submits for the task page `page`."""
    rows = [html.unescape(t).strip() for t in ROW.findall(page)]
    fields = list(dict.fromkeys(FIELD.findall(page)))
    prompt = html.unescape(m.group(1)) if (m := PROMPT.search(page)) else ""
    texts = {int(n): html.unescape(t) for n, t in ANSWER.findall(page)}
    out: dict[str, str] = {}
    for (kind, key), attribute in zip(fields, rows):
        if kind == "s":  # the truth rates the larger text over the smaller: the same whatever order was shown
            first, second = texts.get(1, ""), texts.get(2, "")
            low, high = sorted((first, second))
            right, options = truth(kind, attribute, prompt + "\x1f" + low + "\x1f" + high, seed), list("12345")
        elif kind == "r":
            right, options = truth(kind, attribute, prompt, seed), ["yes", "no"]
        else:
            right, options = truth(kind, attribute, "", seed), list(JUDGMENTS)
        if rng.random() >= behaviour.accuracy:
            right = rng.choice([o for o in options if o != right])
        if kind == "s" and second != high:  # shown the other way round: the scale flips
            right = str(6 - int(right))
        out[f"{kind}_{key}"] = right
    out["elapsed_ms"] = str(int(behaviour.seconds * 1000))
    return out


@dataclass
class Outcome:
    participant: str
    items: int
    status: str  # finished | no_items | refused | stopped
    code: str | None = None


def participate(link: str, participant: str, behaviour: Behaviour | None = None, seed: int = 0,
                max_items: int = 10_000, stop_after: int | None = None, base_url: str | None = None) -> Outcome:
    """One simulated crowd worker through the study link: consent, items until the study sends them away
    (or `stop_after` items: they leave mid-way), then the completion redirect and its code. `base_url`: where
    the server really is, when the link names another address."""
    import httpx

    behaviour = behaviour or Behaviour()
    rng = random.Random(f"{seed}:{participant}")
    parts = urlsplit(link)
    base = (base_url or f"{parts.scheme}://{parts.netloc}").rstrip("/")
    query = urlencode({"PROLIFIC_PID": participant, "STUDY_ID": "SIM", "SESSION_ID": f"sess-{participant}"})
    entry = f"{parts.path}?{query}"
    with httpx.Client(base_url=base, headers={"Origin": base}, timeout=30.0, follow_redirects=True) as client:
        page = client.get(entry)
        nonce = NONCE.search(page.text)
        if page.status_code != 200 or nonce is None:
            return Outcome(participant, 0, "refused")
        got = client.post(entry, data={"nonce": nonce.group(1), "consent": "yes"})
        return _work(client, got, rng, behaviour, seed, participant, max_items, stop_after)


def annotate_as(base_url: str, login_link: str, project_id: int, name: str, behaviour: Behaviour | None = None,
                seed: int = 0, max_items: int = 10_000) -> Outcome:
    """One simulated own annotator: their login link (confirmed as the browser does), then every item."""
    import httpx

    behaviour = behaviour or Behaviour()
    rng = random.Random(f"{seed}:{name}")
    with httpx.Client(base_url=base_url, headers={"Origin": base_url}, timeout=30.0,
                      follow_redirects=True) as client:
        path = urlsplit(login_link).path
        nonce = NONCE.search(client.get(path).text)
        if nonce is None:
            return Outcome(name, 0, "refused")
        client.post(path, data={"nonce": nonce.group(1)})
        return _work(client, client.get(f"/p/{project_id}"), rng, behaviour, seed, name, max_items, None)


def _work(client: Any, page: Any, rng: random.Random, behaviour: Behaviour, seed: int, who: str, max_items: int,
          stop_after: int | None) -> Outcome:
    done = 0
    while done < max_items:
        if 'id="study-complete"' in page.text:
            final = client.get("/s/complete", follow_redirects=False)
            target = final.headers.get("location", "")
            code = target.rsplit("cc=", 1)[-1] if "cc=" in target else None
            return Outcome(who, done, "finished", code)
        action, csrf = ACTION.search(page.text), CSRF.search(page.text)
        if page.status_code != 200 or action is None or csrf is None:
            return Outcome(who, done, "no_items")
        if stop_after is not None and done >= stop_after:
            return Outcome(who, done, "stopped")
        page = client.post(action.group(1), data={"csrf": csrf.group(1), **page_answers(page.text, rng, behaviour,
                                                                                          seed)})
        done += 1
    return Outcome(who, done, "stopped")


@contextmanager
def serving(db: Any, port: int = 0) -> Iterator[str]:
    """The annotation server on 127.0.0.1 (a free port unless `port`) in a thread, for simulated people; yields
    its base URL."""
    import socket

    import uvicorn

    from tailorbench.annotation.web import create_app

    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(create_app(db), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the annotation server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def crowd(db: Any, study_id: int, link: str, people: Sequence[tuple[str, Behaviour]], seed: int = 0,
          base_url: str | None = None, stop_after: int | None = None) -> list[Outcome]:
    """Simulated participants through a crowd study's link one after another, until the link admits nobody
    more. One who stops before the end (`stop_after`, an error, an interrupt) returns the study as a worker does
    on the platform, and is released as the researcher does for a returned participant (`studies.release`): their
    unfinished items go back to the queue and their place to someone else, instead of being held until the
    study's time limit."""
    out: list[Outcome] = []
    for name, behaviour in people:
        try:
            got = participate(link, name, behaviour, seed=seed, stop_after=stop_after, base_url=base_url)
        except BaseException:
            release_left(db, study_id, [name])
            raise
        if got.status == "refused":
            break
        if got.status == "stopped":
            release_left(db, study_id, [name])
        out.append(got)
    return out


def release_left(db: Any, study_id: int, names: Sequence[str] | None = None, prefix: str = "") -> list[str]:
    """Release the crowd study's active participants named in `names` (or, when None, every active one whose
    platform id starts with `prefix`: simulated people a killed process left holding their places). Returns
    the ids released."""
    from tailorbench.annotation import studies

    active = [p["external_id"] for p in studies.participants(db, study_id) if p["status"] in ("active", "timed_out")]
    chosen = [p for p in active if (p in names if names is not None else p.startswith(prefix))]
    if chosen:
        studies.release(db, study_id, returned=chosen)
    return chosen
