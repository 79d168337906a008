"""A judge model in this process: a Hugging Face causal LM behind the same `call` as
`judges.client.OpenAIBackend`, for offline use (`judges.run --backend local`). A prompt longer
than the model's context (its positions) is refused before generating, as an endpoint's is."""
from __future__ import annotations

import threading
import time

from judges.client import ChatResult, SamplingParams, one_line, too_long


class LocalBackend:
    """A Hugging Face causal LM in this process: chat template, greedy decoding. One call at a
    time (a lock), since a model's generate is not meant to be shared between threads."""
    name = "local"
    supports_structured = False
    endpoint = "in-process"

    def __init__(self, model: str, params: SamplingParams):
        self.model, self.params = model, params
        self._model = self._tokenizer = None  # loaded on the first call: a resumed run that
        self._lock = threading.Lock()         # has nothing left to do never loads it
        self.calls = 0

    def _load(self) -> None:
        from models import load_causal_lm

        if self._model is None:
            self._model, self._tokenizer = load_causal_lm(self.model)

    @property
    def context(self) -> int | None:
        """The model's context (its positions), once loaded."""
        return getattr(self._model.config, "max_position_embeddings", None) if self._model else None

    def _encode(self, messages: list[dict], **options):
        """The prompt's tokens as the model is given them: its chat template, the generation
        prompt added, no other special tokens (the template has them)."""
        prompt = self._tokenizer.apply_chat_template(messages, tokenize=False,
                                                     add_generation_prompt=True)
        return self._tokenizer(prompt, add_special_tokens=False, **options)

    def prompt_tokens(self, messages: list[dict]) -> int | None:
        """The prompt's tokens under the model's chat template."""
        with self._lock:
            self._load()
            return len(self._encode(messages)["input_ids"])

    def call(self, messages: list[dict], response_format: dict | None) -> ChatResult:
        import torch

        started = time.monotonic()
        with self._lock:
            self.calls += 1
            self._load()  # a model that cannot be loaded stops the run, it is no per-call error
            tok = self._tokenizer
            try:
                inputs = self._encode(messages, return_tensors="pt").to(self._model.device)
                if self.context and inputs["input_ids"].shape[1] >= self.context:
                    return too_long(int(inputs["input_ids"].shape[1]), self.context)
                torch.manual_seed(self.params.seed)
                with torch.no_grad():
                    output = self._model.generate(
                        **inputs, do_sample=False, max_new_tokens=self.params.max_tokens,
                        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
            except Exception as exc:  # noqa: BLE001 - any failure is this call's api_error
                return ChatResult(error=f"local generation failed: {one_line(exc)}", attempts=1,
                                  latency_s=time.monotonic() - started)
        notes = []
        prompt_len = int(inputs["input_ids"].shape[1])
        context = self.context
        if context and prompt_len + self.params.max_tokens > context:  # fits, the answer may not
            notes.append({"kind": "answer_may_exceed_context", "prompt_tokens": prompt_len,
                          "max_tokens": self.params.max_tokens, "model_context": context})
        new_tokens = output[0, prompt_len:].tolist()
        eos = tok.eos_token_id
        eos_ids = set(eos) if isinstance(eos, (list, tuple)) else {eos}
        stopped = bool(new_tokens) and new_tokens[-1] in eos_ids
        finish = "stop" if stopped or len(new_tokens) < self.params.max_tokens else "length"
        text = tok.decode(new_tokens, skip_special_tokens=True)
        return ChatResult(content=text, finish_reason=finish, attempts=1, notes=notes,
                          prompt_tokens=prompt_len, completion_tokens=len(new_tokens),
                          latency_s=time.monotonic() - started)
