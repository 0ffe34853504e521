"""The server prepares its contestants' models before the first battle (arena/battles.py `Generator.warm`): the
backend's SDK imported and its client made in a thread, not on the event loop during the first answers, which
perf/arena_load.py found stalling every stream of a freshly started server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def test_contestant_clients_are_made_at_start(make_arena: Callable[..., Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from tailorbench.arena.config import load_config
    from tailorbench.arena.store import ArenaStore
    from tailorbench.arena.web import create_app

    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    url = "http://127.0.0.1:9/v1"  # never called: the test asks for no answer
    arena = make_arena(contestants=[{"name": "one", "model": f"openai:m1@{url}", "profile": True},
                                    {"name": "two", "model": f"openai:m2@{url}"}])
    store = ArenaStore(f"sqlite:///{tmp_path / 'arena.sqlite'}")
    try:
        app = create_app(load_config(arena), store, arena)
        generator = app.state.site.generator
        assert generator.models == {}
        with TestClient(app):
            assert sorted(generator.models) == ["one", "two"]
            assert all(m.api._client is not None for m in generator.models.values())
    finally:
        store.dispose()


def test_a_model_that_cannot_be_prepared_does_not_stop_the_server(make_arena: Callable[..., Path], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """No key: the client cannot be made; the server starts anyway (the answer fails, counted, when asked)."""
    from fastapi.testclient import TestClient

    from tailorbench.arena.config import load_config
    from tailorbench.arena.store import ArenaStore
    from tailorbench.arena.web import create_app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    arena = make_arena(contestants=[{"name": "one", "model": "openai:m1", "profile": True},
                                    {"name": "two", "model": "openai:m2"}])
    store = ArenaStore(f"sqlite:///{tmp_path / 'arena.sqlite'}")
    try:
        with TestClient(create_app(load_config(arena), store, arena)) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
    finally:
        store.dispose()
