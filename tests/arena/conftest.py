"""Fixtures of the arena's core tests: an arena folder with the illustrative model (arena/demo_model.py) and its
own call cache, its database on SQLite and on the real PostgreSQL (a fresh schema of this worker's database per
test, as tests/annotation/conftest.py makes them), and the app in a TestClient."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.annotation.conftest import db_url

__all__ = ["db_url"]


@pytest.fixture
def arena_db(db_url: str) -> str:
    """The URL of an empty database: a SQLite file, or a fresh PostgreSQL schema dropped afterwards (the
    annotation tests' `db_url`, parametrized over both)."""
    return db_url


def arena_config(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    """The illustrative arena's config with its call cache under `tmp_path`, then `changes` (top-level keys
    replaced; `contestant_options={name: {...}}` merged into those contestants' options)."""
    from tailorbench.arena.demo import example_config

    doc = example_config()
    doc["models"]["options"]["cache_path"] = str(tmp_path / "calls.sqlite")
    extra = changes.pop("contestant_options", {})
    for c in doc["contestants"]:
        c.setdefault("options", {}).update(extra.get(c["name"], {}))
    doc.update(changes)
    return doc


@pytest.fixture
def make_arena(tmp_path: Path) -> Callable[..., Path]:
    """`make_arena(**changes)`: an arena folder (arena.yaml written) under tmp_path; returns it."""
    count = iter(range(1000))

    def make(**changes: Any) -> Path:
        d = tmp_path / f"arena{next(count)}"
        d.mkdir()
        (d / "arena.yaml").write_text(yaml.safe_dump(arena_config(tmp_path, **changes), sort_keys=False),
                                      encoding="utf-8")
        return d

    return make


class Participant:
    """A TestClient that goes through the pages as a browser does."""

    def __init__(self, client: Any) -> None:
        import re

        self.client = client
        self.csrf_re = re.compile(r'name="csrf" value="([^"]+)"')
        self.csrf = ""

    def enter(self, profile: dict[str, str] | None = None, external: str | None = None) -> Any:
        import re

        page = self.client.get("/" + (f"?PROLIFIC_PID={external}" if external else ""))
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
        assert nonce is not None, page.text
        page = self.client.post("/consent", data={"nonce": nonce.group(1), "consent": "yes",
                                                  "external": external or ""})
        self.csrf = self.csrf_re.search(page.text).group(1)  # type: ignore[union-attr]
        fields = {f"f_{k}": v for k, v in (profile or {"age": "25-34", "interests": "bouldering"}).items()}
        return self.client.post("/profile", data={"csrf": self.csrf, **fields})

    def ask(self, question: str = "How should I spend a free Saturday?") -> str:
        page = self.client.post("/ask", data={"csrf": self.csrf, "question": question})
        assert page.status_code == 200, page.text
        assert page.url.path.startswith("/b/"), page.url
        return str(page.url.path).rsplit("/", 1)[-1]

    def stream(self, ref: str, pane: str) -> tuple[str, str]:
        """One pane's event stream read to its end: (text, done | failed)."""
        import json

        parts, state, name = [], "", None
        with self.client.stream("GET", f"/b/{ref}/s/{pane}") as response:
            for line in response.iter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:") and name:
                    data = json.loads(line[5:].strip())
                    if name == "delta":
                        parts.append(data)
                    else:
                        state = name + ("" if name == "done" else f":{data}")
                        break
        return "".join(parts), state

    def vote(self, ref: str, choice: str = "1", confidence: str = "2") -> Any:
        return self.client.post(f"/b/{ref}/vote", data={"csrf": self.csrf, "choice": choice,
                                                         "confidence": confidence}, follow_redirects=False)


@pytest.fixture
def open_arena(arena_db: str) -> Iterator[Callable[..., Any]]:
    """`open_arena(folder)`: (config, store, TestClient-maker) over `arena_db`; stores disposed afterwards."""
    from fastapi.testclient import TestClient

    from tailorbench.arena.config import load_config
    from tailorbench.arena.store import ArenaStore
    from tailorbench.arena.web import create_app

    stores: list[Any] = []

    def make(folder: Path) -> tuple[Any, Any, Callable[[], Any]]:
        config = load_config(folder)
        store = ArenaStore(arena_db)
        stores.append(store)
        app = create_app(config, store, folder)

        def client() -> Any:
            return TestClient(app, base_url="http://testserver")

        return config, store, client

    yield make
    for s in stores:
        s.dispose()
