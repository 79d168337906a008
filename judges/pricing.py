"""Token cost accounting from a small user-editable price table (judges/prices.yaml)."""
from __future__ import annotations

from pathlib import Path

import yaml

from nlce.cli import InputError

DEFAULT_PRICES = Path(__file__).with_name("prices.yaml")


def load_prices(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """model id -> {"input_per_mtok": .., "output_per_mtok": ..}; a malformed file is an error
    naming the file and the model."""
    path = Path(path) if path else DEFAULT_PRICES
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read price table {path}: {exc}") from None
    models = data.get("models") or {}
    if not isinstance(models, dict):
        raise InputError(f"{path}: 'models' must be a mapping of model id to prices")
    prices = {}
    for model, entry in models.items():
        try:
            prices[str(model)] = {"input_per_mtok": float(entry["input_per_mtok"]),
                                  "output_per_mtok": float(entry["output_per_mtok"])}
        except (TypeError, KeyError, ValueError):
            raise InputError(f"{path}: model {model!r} needs numeric input_per_mtok and "
                             "output_per_mtok") from None
    return prices


def cost_usd(prices: dict, model: str, backend: str, prompt_tokens: int,
             completion_tokens: int) -> float | None:
    """The cost of these tokens, or None when the model's price is unknown."""
    if backend == "local":
        return 0.0
    entry = prices.get(model)
    if entry is None:
        return None
    return (prompt_tokens * entry["input_per_mtok"]
            + completion_tokens * entry["output_per_mtok"]) / 1_000_000
