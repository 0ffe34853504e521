"""Prices per million tokens, so every run can say what it cost.

The built-in table is a convenience snapshot (USD per 1M tokens, input / output) and will age: pass your own
with `--judge-option prices=FILE.json` (`{"model": [input, output], ...}` or `{"model": {"input": x,
"output": y}}`) or `$TAILORBENCH_PRICES`. A model missing from the table has cost `null` (unknown), never 0.
Lookup tries the exact name, then the longest table key that prefixes it (`gpt-4o-2024-08-06` -> `gpt-4o`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tailorbench.errors import ConfigError

#: USD per 1M tokens (input, output); snapshot, override with a prices file
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
}
#: what a provider's batch API charges, as a share of the synchronous price (OpenAI Batch API, Anthropic
#: Message Batches: half)
BATCH_DISCOUNT = 0.5


class PriceTable:
    def __init__(self, prices: dict[str, tuple[float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self._found: dict[str, tuple[float, float] | None] = {}

    @classmethod
    def load(cls, source: str | Path | dict[str, Any] | None = None) -> PriceTable:
        """Defaults, updated by a JSON file or mapping (`source`, else `$TAILORBENCH_PRICES`)."""
        table = cls()
        if source is None:
            source = os.environ.get("TAILORBENCH_PRICES") or None
        if source is None:
            return table
        if isinstance(source, dict):
            data: Any = source
        else:
            path = Path(source).expanduser()
            from tailorbench.errors import DataError
            from tailorbench.files import load_json

            try:
                data = load_json(path, None, "a price table (a JSON object)")
            except DataError as exc:
                raise ConfigError(f"cannot read the price table {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError("a price table maps model names to [input, output] USD per 1M tokens")
        for model, value in data.items():
            try:
                if isinstance(value, dict):
                    pair = (float(value["input"]), float(value["output"]))
                else:
                    pair = (float(value[0]), float(value[1]))
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise ConfigError(f"price of {model!r}: expected [input, output] per 1M tokens, got {value!r}") from exc
            table.prices[str(model)] = pair
        table._found.clear()
        return table

    def lookup(self, model: str) -> tuple[float, float] | None:
        if model in self._found:
            return self._found[model]
        if model in self.prices:
            return self.prices[model]
        best = max((k for k in self.prices if model.startswith(k + "-")), key=len, default=None)
        found = self._found[model] = self.prices[best] if best else None
        return found

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.lookup(model)
        if price is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
