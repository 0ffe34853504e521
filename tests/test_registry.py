"""The generic registry: decorator, lazy built-ins, entry-point plugins (a real .dist-info on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tailorbench.errors import ConfigError
from tailorbench.models.backends import BACKENDS, backend_options, make_chat_model, parse_model_spec
from tailorbench.registry import GROUPS, Registry


def test_register_get_and_names() -> None:
    reg: Registry[int] = Registry("widget", "tailorbench.test_widgets")
    reg.add("One", 1)
    assert reg.get("one") == 1 and reg.get(" ONE ") == 1 and "one" in reg and "two" not in reg
    with pytest.raises(ConfigError, match=r"unknown widget 'two'; known: one"):
        reg.get("two")
    with pytest.raises(ConfigError, match="registered twice"):
        reg.add("one", 2)
    reg.add("one", 2, replace=True)
    assert reg.get("one") == 2 and GROUPS["tailorbench.test_widgets"] is reg


def _plugin(tmp_path: Path, group: str, lines: list[str], module: str, source: str) -> None:
    info = tmp_path / "demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "\n".join(lines) + "\n")
    (tmp_path / f"{module}.py").write_text(source)


def test_entry_point_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    group = "tailorbench.test_plugins"
    reg: Registry[object] = Registry("gadget", group, lazy={"builtin": "json"})
    _plugin(tmp_path, group, ["direct = demo_gadgets:GADGET", "byimport = demo_gadgets", "broken = demo_gadgets:nope",
                              "silent = demo_gadgets"],
            "demo_gadgets", "GADGET = 'direct gadget'\nimport tailorbench.registry as r\n"
                            "r.GROUPS['tailorbench.test_plugins'].add('byimport', 'registered on import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg.refresh()
    assert reg.names() == ["broken", "builtin", "byimport", "direct", "silent"]
    assert reg.get("direct") == "direct gadget" and reg.source("direct") == "plugin:demo-plugin"
    assert reg.get("byimport") == "registered on import"
    with pytest.raises(ConfigError, match=r"gadget plugin 'broken' \(demo_gadgets:nope\) failed to load"):
        reg.get("broken")
    with pytest.raises(ConfigError, match="registered nothing"):
        reg.get("silent")
    sys.modules.pop("demo_gadgets", None)


def test_backends_are_registered_lazily_and_take_their_own_options() -> None:
    assert {"openai", "hf"} <= set(BACKENDS.names())
    spec = parse_model_spec("openai:m@http://127.0.0.1:9/v1/")
    assert (spec.backend, spec.model, spec.base_url) == ("openai", "m", "http://127.0.0.1:9/v1")
    assert parse_model_spec("HF:org/name").model == "org/name"
    assert "api_key_env" in backend_options("openai") and "device" in backend_options("hf")
    with pytest.raises(ConfigError, match=r"unknown model backend 'vllm2'.*known: .*hf.*openai"):
        parse_model_spec("vllm2:x")
    with pytest.raises(ConfigError, match="do not apply to the openai backend"):
        make_chat_model("openai:m@http://127.0.0.1:9/v1", {"device": "cpu"})
