"""Token cost accounting from a small user-editable price table (judges/prices.yaml)."""
from __future__ import annotations

from pathlib import Path

from nlce.cli import InputError
from nlce.option_files import load_option_yaml

DEFAULT_PRICES = Path(__file__).with_name("prices.yaml")
BATCH_DISCOUNT = 0.5  # OpenAI's Batch API: half the price of the same tokens sent live
BATCH_PRICES = ("batch_input_per_mtok", "batch_output_per_mtok")  # optional, per model


def load_prices(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """model id -> {"input_per_mtok": .., "output_per_mtok": ..}; a malformed file is an error
    naming the file and the model."""
    path = Path(path) if path else DEFAULT_PRICES
    data = load_option_yaml(path, "price table")
    if data is None:
        raise InputError(f"price table {path} is empty: it needs `models:` with each model's "
                         f"input_per_mtok and output_per_mtok ({DEFAULT_PRICES.name} shows the form)")
    models = (data.get("models") or {}) if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise InputError(f"price table {path}: expected a mapping with `models:`, a mapping of "
                         "model id to prices")
    prices = {}
    for model, entry in models.items():
        try:
            prices[str(model)] = {"input_per_mtok": float(entry["input_per_mtok"]),
                                  "output_per_mtok": float(entry["output_per_mtok"])}
            prices[str(model)].update({k: float(entry[k]) for k in BATCH_PRICES if k in entry})
        except (TypeError, KeyError, ValueError):
            raise InputError(f"{path}: model {model!r} needs numeric input_per_mtok and "
                             "output_per_mtok (and batch_*_per_mtok, if given)") from None
    return prices


def cost_usd(prices: dict, model: str, backend: str, prompt_tokens: int,
             completion_tokens: int, batch: bool = False) -> float | None:
    """The cost of these tokens, or None when the model's price is unknown; `batch`: at the
    Batch API's price (the table's batch_*_per_mtok, else BATCH_DISCOUNT of the live price)."""
    if backend == "local":
        return 0.0
    entry = prices.get(model)
    if entry is None:
        return None
    rate_in, rate_out = entry["input_per_mtok"], entry["output_per_mtok"]
    if batch:
        rate_in = entry.get("batch_input_per_mtok", rate_in * BATCH_DISCOUNT)
        rate_out = entry.get("batch_output_per_mtok", rate_out * BATCH_DISCOUNT)
    return (prompt_tokens * rate_in + completion_tokens * rate_out) / 1_000_000
