"""Generation backends: local Hugging Face `transformers`, or an OpenAI-compatible endpoint.

Both answer `complete(prompts, max_new_tokens, stops)` with one `Completion` per prompt (or a
`ItemError` for a prompt that failed on its own) and decode greedily. A backend that cannot be
reached at all raises `EndpointUnreachable`: the run stops cleanly instead of failing every item.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # stop | length


class ItemError(Exception):
    """One prompt failed (too long, rejected by the server); the run goes on."""


class EndpointUnreachable(RuntimeError):
    """The backend cannot be reached; nothing more can be generated in this run."""


class HFBackend:
    """Greedy decoding with a local causal LM, batched with left padding, CPU or GPU."""

    name = "hf"

    def __init__(self, model_id: str, *, device: str | None = None, model=None, tokenizer=None):
        if model is None or tokenizer is None:
            from models import load_causal_lm

            model, tokenizer = load_causal_lm(model_id, device)
        self.model, self.tokenizer = model, tokenizer
        self.model_id = model_id
        self.device = str(next(model.parameters()).device)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        config = model.config
        self.max_positions = getattr(config, "max_position_embeddings", None) or 10**9

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def stop_token_ids(self, stops: Sequence[str]) -> list[int]:
        """EOS plus every stop sentinel that is a single token of this vocabulary."""
        ids = []
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, (list, tuple)) else [eos]
        ids.extend(i for i in eos if i is not None)
        if self.tokenizer.eos_token_id is not None:
            ids.append(self.tokenizer.eos_token_id)
        vocab = self.tokenizer.get_vocab()
        for stop in stops:
            for form in (stop, "\u2581" + stop):  # CodeLlama's sentinels are "▁<EOT>" etc.
                if form in vocab:
                    ids.append(vocab[form])
        return sorted(set(ids))

    def complete(self, prompts: Sequence[str], max_new_tokens: int, stops: Sequence[str]
                 ) -> list[Completion | ItemError]:
        import torch

        results: list[Completion | ItemError | None] = [None] * len(prompts)
        encoded = [self.tokenizer(p)["input_ids"] for p in prompts]
        runnable = []
        for i, ids in enumerate(encoded):
            if len(ids) + max_new_tokens > self.max_positions:
                results[i] = ItemError(f"input of {len(ids)} tokens + {max_new_tokens} new "
                                       f"exceeds the model's {self.max_positions} positions")
            else:
                runnable.append(i)
        if runnable:
            stop_ids = self.stop_token_ids(stops)
            batch = self.tokenizer([prompts[i] for i in runnable], return_tensors="pt",
                                   padding=True).to(self.device)
            with torch.inference_mode():
                output = self.model.generate(
                    **batch, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                    eos_token_id=stop_ids, pad_token_id=self.tokenizer.pad_token_id,
                    temperature=None, top_p=None, top_k=None)
            new_tokens = output[:, batch["input_ids"].shape[1]:].tolist()
            stop_set = set(stop_ids)
            for row, i in zip(new_tokens, runnable):
                end = next((k for k, t in enumerate(row) if t in stop_set), None)
                kept = row if end is None else row[:end]
                text = self.tokenizer.decode(kept, skip_special_tokens=False)
                results[i] = Completion(text, "length" if end is None else "stop")
        return results  # type: ignore[return-value]

    def describe(self) -> dict:
        return {"device": self.device, "decoding": "greedy"}


class OpenAIBackend:
    """The `/v1/completions` endpoint of vLLM, TGI, llama.cpp server ... via the openai client."""

    name = "openai"

    def __init__(self, model: str, *, base_url: str, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 2):
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        # local servers accept any key; the client insists on one
        self.client = OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                             timeout=timeout, max_retries=max_retries)

    def count_tokens(self, text: str) -> int | None:
        return None

    def _call(self, prompts: Sequence[str], max_new_tokens: int, stops: Sequence[str]):
        import openai

        try:
            return self.client.completions.create(
                model=self.model, prompt=list(prompts), max_tokens=max_new_tokens,
                temperature=0.0, stop=list(stops) or None)
        except (openai.APIConnectionError, openai.APITimeoutError) as error:
            raise EndpointUnreachable(f"cannot reach {self.base_url}: {error}") from None
        except openai.AuthenticationError as error:
            raise EndpointUnreachable(f"{self.base_url} refused the API key: {error}") from None

    def complete(self, prompts: Sequence[str], max_new_tokens: int, stops: Sequence[str]
                 ) -> list[Completion | ItemError]:
        import openai

        try:
            response = self._call(prompts, max_new_tokens, stops)
        except openai.APIStatusError as error:
            if len(prompts) == 1:
                return [ItemError(f"server answered {error.status_code}: {error.message}")]
            # one bad prompt fails the whole request: find it by asking one at a time
            return [r for p in prompts for r in self.complete([p], max_new_tokens, stops)]
        results: list[Completion | ItemError] = [
            ItemError("the server returned no choice for this prompt")] * len(prompts)
        for position, choice in enumerate(response.choices or []):
            index = choice.index if choice.index is not None else position
            if 0 <= index < len(prompts) and isinstance(choice.text, str):
                results[index] = Completion(choice.text, choice.finish_reason or "stop")
        return results

    def describe(self) -> dict:
        return {"base_url": self.base_url, "decoding": "temperature 0"}
