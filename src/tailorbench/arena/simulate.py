"""Simulated arena participants for tests and the demo: each goes through the arena's pages over HTTP as a
browser does (consent, profile, ask, both answers' event streams, vote, the completion page), against the real
server, so every check the server makes applies to them.

Their profiles come from the bundled personas (the demo benchmark's, datasets/demo/demo.jsonl) mapped onto the
default questionnaire; their own questions are that persona's questions. They vote by a stated rule:

- `profile` (most of them): prefer the answer that mentions more of their own profile answers; equal counts go to
  the answer sharing more words with the question; still equal is a tie; then, with probability `noise`
  (seeded per participant and battle), a vote drawn at random instead;
- `left`: always the left answer (a position-biased voter: voter quality finds them by their left share);
- `contrary`: the other answer than the `profile` rule picks, without noise (a voter who does not read: they fail
  the gold battles, whose better answer takes up the question's words).

Everything a simulated participant does is made up: figures computed on it are illustrative only.
"""

from __future__ import annotations

import html
import json
import random
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
QUESTION = re.compile(r'<div class="question pre" id="question-text">(.*?)</div>', re.DOTALL)
PID = re.compile(r'<code id="pid">([^<]+)</code>')
CODE = re.compile(r'<strong id="completion-code">([^<]+)</strong>')
WORD = re.compile(r"[a-z]{4,}")
PERSONAS = Path(__file__).resolve().parents[1] / "datasets" / "demo" / "demo.jsonl"


@dataclass
class Persona:
    """A simulated participant: their profile answers (field key -> answer), questions and voting rule."""

    name: str
    answers: dict[str, str]
    questions: list[str]
    rule: str = "profile"  # profile | left | contrary
    noise: float = 0.1


@dataclass
class Outcome:
    participant: str
    pid: str | None
    votes: int
    failed: int
    status: str  # finished | refused | stopped
    code: str | None = None
    rule: str = "profile"
    log: list[dict[str, Any]] = field(default_factory=list)


def _band(age: Any) -> str | None:
    try:
        years = int(str(age).split()[0])
    except (ValueError, IndexError):
        return None
    for upper, band in ((25, "18-24"), (35, "25-34"), (45, "35-44"), (55, "45-54"), (65, "55-64")):
        if years < upper:
            return band
    return "65+"


def persona_answers(profile: dict[str, Any], seed: str) -> dict[str, str]:
    """A bundled persona's profile as answers to the default questionnaire (arena/config.py)."""
    demo = profile.get("Demographics") or {}
    person = profile.get("Personality") or {}
    pref = profile.get("Preference") or {}
    gender = str(demo.get("Gender", "")).lower()
    out = {"age": _band(demo.get("Age")), "gender": {"female": "Woman", "male": "Man"}.get(gender),
           "location": demo.get("Nationality"), "occupation": demo.get("Career_Information"),
           "social": {"I": "alone or with one or two people", "E": "in company"}.get(
               str(person.get("Extraversion_or_Introversion", ""))[:1].upper()),
           "planning": {"J": "plan ahead", "P": "keep options open"}.get(
               str(person.get("Judging_or_Perceiving", ""))[:1].upper()),
           "interests": ", ".join(str(v) for v in person.get("Values_and_Interests") or []) or None,
           "answer_style": random.Random(seed).choice(["short and direct", "detailed", "step by step"]),
           "other": pref.get("Social") if isinstance(pref.get("Social"), str) else None}
    return {k: str(v)[:120] for k, v in out.items() if v}


def bundled_personas() -> list[Persona]:
    """One simulated participant per bundled persona, with that persona's questions, in file order."""
    from tailorbench.files import load_bytes

    people: dict[str, Persona] = {}
    for line in load_bytes(PERSONAS, "the demo benchmark").decode("utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        user = str(row["user_id"])
        if user not in people:
            people[user] = Persona(user, persona_answers(row["persona"], user), [])
        people[user].questions.append(str(row["question"]))
    return list(people.values())


def cast(n: int, left: int = 1, contrary: int = 1) -> list[Persona]:
    """`n` simulated participants from the bundled personas (cycled, numbered when reused): the first `left`
    vote left always, the next `contrary` against the rule, the rest by their profile."""
    base = bundled_personas()
    out = []
    for i in range(n):
        p = base[i % len(base)]
        rule = "left" if i < left else "contrary" if i < left + contrary else "profile"
        out.append(Persona(f"{p.name}-{i + 1}", dict(p.answers), list(p.questions), rule))
    return out


def _mentions(text: str, persona: Persona) -> int:
    low = text.lower()
    return sum(1 for v in persona.answers.values() if v.lower() in low)


def _overlap(text: str, question: str) -> int:
    return len(set(WORD.findall(text.lower())) & set(WORD.findall(question.lower())))


def choose(persona: Persona, question: str, left: str, right: str, rng: random.Random) -> tuple[str, str]:
    """(choice 1-4, confidence 1-3) by the persona's rule."""
    if persona.rule == "left":
        return "1", "3"
    if persona.rule != "contrary" and rng.random() < persona.noise:
        return rng.choice("1234"), rng.choice("123")
    score = [(_mentions(t, persona), _overlap(t, question)) for t in (left, right)]
    if score[0] == score[1]:
        return "3", "1"
    gap = abs(score[0][0] - score[1][0])
    first = score[0] > score[1]
    if persona.rule == "contrary":
        first = not first
    return ("1" if first else "2"), ("3" if gap >= 2 else "2" if gap == 1 else "1")


def read_stream(client: Any, url: str) -> tuple[str, str]:
    """One answer's event stream read to its end: (text, `done` | `failed`)."""
    parts, state = [], "failed"
    with client.stream("GET", url, timeout=120.0) as response:
        name = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and name is not None:
                data = json.loads(line[5:].strip())
                if name == "delta":
                    parts.append(data)
                elif name in ("done", "failed"):
                    state = name
                    break
    return "".join(parts), state


def _battle(client: Any, page: Any, persona: Persona, rng: random.Random) -> tuple[str, Any]:
    """Read both answers of the battle page `page` (at once, as the browser does), then vote: (`voted` or
    `failed`, the next page)."""
    ref = str(page.url).rstrip("/").rsplit("/", 1)[-1]
    question = html.unescape(m.group(1)) if (m := QUESTION.search(page.text)) else ""
    csrf = CSRF.search(page.text)
    got: dict[str, tuple[str, str]] = {}

    def read(pane: str) -> None:
        got[pane] = read_stream(client, f"/b/{ref}/s/{pane}")

    threads = [threading.Thread(target=read, args=(p,)) for p in ("1", "2")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if any(got.get(p, ("", "failed"))[1] != "done" for p in ("1", "2")):
        return "failed", client.get("/ask")
    choice, confidence = choose(persona, question, got["1"][0], got["2"][0], rng)
    data = {"csrf": csrf.group(1) if csrf else "", "choice": choice, "confidence": confidence}
    return "voted", client.post(f"/b/{ref}/vote", data=data)


def participate(base_url: str, persona: Persona, seed: int = 0, prolific: bool = False,
                max_battles: int = 1000) -> Outcome:
    """One simulated participant from the consent page to the completion page."""
    import httpx

    rng = random.Random(f"{seed}:{persona.name}")
    out = Outcome(persona.name, None, 0, 0, "refused", rule=persona.rule)
    query = f"?PROLIFIC_PID={persona.name}" if prolific else ""
    with httpx.Client(base_url=base_url, headers={"Origin": base_url}, timeout=60.0, follow_redirects=True) as c:
        page = c.get(f"/{query}")
        nonce = NONCE.search(page.text)
        if page.status_code != 200 or nonce is None:
            return out
        page = c.post("/consent", data={"nonce": nonce.group(1), "consent": "yes",
                                        "external": persona.name if prolific else ""})
        csrf = CSRF.search(page.text)
        if csrf is None:
            return out
        page = c.post("/profile", data={"csrf": csrf.group(1),
                                        **{f"f_{k}": v for k, v in persona.answers.items()}})
        asked = 0
        while asked < max_battles:
            path = page.url.path
            if path == "/done" or 'data-cap="1"' in page.text:
                page = c.get("/done")
                out.status = "finished"
                out.pid = m.group(1) if (m := PID.search(page.text)) else None
                out.code = m.group(1) if (m := CODE.search(page.text)) else None
                return out
            if path.startswith("/b/"):
                result, page = _battle(c, page, persona, rng)
                out.votes += result == "voted"
                out.failed += result == "failed"
                continue
            csrf = CSRF.search(page.text)
            if page.status_code != 200 or csrf is None:
                out.status = "stopped"
                return out
            question = persona.questions[asked % len(persona.questions)] if persona.questions else ""
            own = 'id="question"' in page.text and question and rng.random() < 0.7
            data = {"csrf": csrf.group(1), **({"question": question} if own else {"pool": "1"})}
            page = c.post("/ask", data=data)
            asked += 1
    out.status = "stopped"
    return out


def crowd(base_url: str, people: Sequence[Persona], seed: int = 0, prolific: bool = False,
          at_once: int = 4) -> list[Outcome]:
    """Simulated participants, `at_once` of them at a time (threads), each to the end; in cast order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, at_once)) as pool:
        return list(pool.map(lambda p: participate(base_url, p, seed, prolific), people))


@contextmanager
def serving(app: Any, port: int = 0) -> Iterator[str]:
    """The arena server on 127.0.0.1 (a free port unless `port`) in a thread; yields its base URL."""
    import socket

    import uvicorn

    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the arena server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
