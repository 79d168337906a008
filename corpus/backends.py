"""Generation backends: local Hugging Face `transformers`, or an OpenAI-compatible endpoint.

Both answer `complete(prompts, max_new_tokens, stops, finished=None)` with one `Completion` per
prompt (or a `ItemError` for a prompt that failed on its own) and decode greedily. `finished`, one
predicate per prompt over the output so far (`corpus.cutting.cut_is_final`), stops a prompt's
generation as soon as the cut rule fires instead of running to the token budget: the Hugging Face
backend through a stopping criterion checked after every token, the OpenAI-compatible backend by
streaming and closing the stream once every prompt has finished. `Completion.tokens` says how
many tokens were generated (streamed chunks on the OpenAI backend: one token each on vLLM, TGI
and llama.cpp). A backend that cannot be reached at all raises `EndpointUnreachable`: the run
stops cleanly instead of failing every item.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from nlce.cli import UserError

Finished = Callable[[str], bool]  # output so far -> has the cut rule fired for good?


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # stop | length | cut (the cut rule fired)
    tokens: int | None = None  # tokens generated for this prompt


class ItemError(Exception):
    """One prompt failed (too long, rejected by the server); the run goes on."""


class EndpointUnreachable(UserError, RuntimeError):
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

    def complete(self, prompts: Sequence[str], max_new_tokens: int, stops: Sequence[str],
                 finished: Sequence[Finished] | None = None) -> list[Completion | ItemError]:
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
            prompt_length = batch["input_ids"].shape[1]
            criteria = []
            cut_rule = None
            if finished is not None:
                cut_rule = _CutRuleStop(self.tokenizer, prompt_length,
                                        [finished[i] for i in runnable], stop_ids)
                criteria.append(cut_rule)
            with torch.inference_mode():
                output = self.model.generate(
                    **batch, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                    eos_token_id=stop_ids, pad_token_id=self.tokenizer.pad_token_id,
                    temperature=None, top_p=None, top_k=None,
                    stopping_criteria=_criteria_list(criteria))
            new_tokens = output[:, prompt_length:].tolist()
            stop_set = set(stop_ids)
            for position, (row, i) in enumerate(zip(new_tokens, runnable)):
                end = next((k for k, t in enumerate(row) if t in stop_set), None)
                cut_at = cut_rule.done_at[position] if cut_rule is not None else None
                if cut_at is not None and (end is None or cut_at <= end):
                    kept, reason, generated = row[:cut_at], "cut", cut_at
                elif end is not None:
                    kept, reason, generated = row[:end], "stop", end + 1
                else:
                    kept, reason, generated = row, "length", len(row)
                text = self.tokenizer.decode(kept, skip_special_tokens=False)
                results[i] = Completion(text, reason, generated)
        return results  # type: ignore[return-value]

    def describe(self) -> dict:
        return {"device": self.device, "decoding": "greedy"}


def _criteria_list(criteria):
    from transformers import StoppingCriteriaList

    return StoppingCriteriaList(criteria)


class _CutRuleStop:
    """A transformers stopping criterion: a row is done once its decoded new tokens satisfy its
    `finished` predicate; `done_at[row]` is how many new tokens it had then."""

    def __init__(self, tokenizer, prompt_length: int, finished: Sequence[Finished],
                 stop_ids: Sequence[int]):
        self.tokenizer, self.prompt_length = tokenizer, prompt_length
        self.finished, self.stop_ids = list(finished), set(stop_ids)
        self.done_at: list[int | None] = [None] * len(self.finished)
        self.ended = [False] * len(self.finished)  # by a stop token: nothing more to check

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        flags = []
        for row, ids in enumerate(input_ids):
            if self.done_at[row] is None and not self.ended[row]:
                new = ids[self.prompt_length:].tolist()
                if new and new[-1] in self.stop_ids:
                    self.ended[row] = True
                elif self.finished[row](self.tokenizer.decode(new, skip_special_tokens=False)):
                    self.done_at[row] = len(new)
            flags.append(self.done_at[row] is not None or self.ended[row])
        return torch.tensor(flags, dtype=torch.bool, device=input_ids.device)


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

    def _call(self, prompts: Sequence[str], max_new_tokens: int, stops: Sequence[str],
              stream: bool = False):
        import openai

        try:
            return self.client.completions.create(
                model=self.model, prompt=list(prompts), max_tokens=max_new_tokens,
                temperature=0.0, stop=list(stops) or None, stream=stream)
        except (openai.APIConnectionError, openai.APITimeoutError) as error:
            raise EndpointUnreachable(f"cannot reach {self.base_url}: {error}") from None
        except openai.AuthenticationError as error:
            raise EndpointUnreachable(f"{self.base_url} refused the API key: {error}") from None

    def complete(self, prompts: Sequence[str], max_new_tokens: int, stops: Sequence[str],
                 finished: Sequence[Finished] | None = None) -> list[Completion | ItemError]:
        import openai

        try:
            response = self._call(prompts, max_new_tokens, stops, stream=finished is not None)
            if finished is not None:
                return self._read_stream(response, len(prompts), finished)
        except openai.APIStatusError as error:
            if len(prompts) == 1:
                return [ItemError(f"server answered {error.status_code}: {error.message}")]
            # one bad prompt fails the whole request: find it by asking one at a time
            return [r for p, f in zip(prompts, finished or [None] * len(prompts))
                    for r in self.complete([p], max_new_tokens, stops,
                                           None if f is None else [f])]
        results: list[Completion | ItemError] = [
            ItemError("the server returned no choice for this prompt")] * len(prompts)
        for position, choice in enumerate(response.choices or []):
            index = choice.index if choice.index is not None else position
            if 0 <= index < len(prompts) and isinstance(choice.text, str):
                results[index] = Completion(choice.text, choice.finish_reason or "stop")
        return results

    def _read_stream(self, stream, n: int, finished: Sequence[Finished]
                     ) -> list[Completion | ItemError]:
        """Collect streamed choices; close the stream once every prompt's cut rule fired."""
        import httpx
        import openai

        texts, chunks = [""] * n, [0] * n
        reasons: list[str | None] = [None] * n
        try:
            for event in stream:
                for position, choice in enumerate(event.choices or []):
                    index = choice.index if choice.index is not None else position
                    if not 0 <= index < n or reasons[index] is not None:
                        continue
                    if choice.text:
                        texts[index] += choice.text
                        chunks[index] += 1
                        if finished[index](texts[index]):
                            reasons[index] = "cut"
                            continue
                    if choice.finish_reason:
                        reasons[index] = choice.finish_reason
                if all(r is not None for r in reasons):
                    break
        except (openai.APIConnectionError, openai.APITimeoutError, httpx.TransportError) as error:
            raise EndpointUnreachable(f"lost {self.base_url} while streaming: {error}") from None
        finally:
            stream.close()
        return [Completion(t, r or "stop", c) for t, r, c in zip(texts, reasons, chunks)]

    def describe(self) -> dict:
        return {"base_url": self.base_url, "decoding": "temperature 0"}
