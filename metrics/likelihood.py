"""Likelihood metrics: BARTScore with any seq2seq model, and its causal-LM cousin.

``bartscore`` (Yuan et al., neulab): the mean log-likelihood per target token of the target given
the source, with any ``AutoModelForSeq2SeqLM`` (BART, mBART, T5, mT5, ByT5...). Stored per pair:
P = forward (reference -> prediction), R = reverse (prediction -> reference), F = their average
(the paper's "F" variant is this arithmetic mean). With context ``none`` every target token counts,
special tokens included, as in neulab's implementation; with ``minimal``/``full`` the source and
target both carry the context (the comment in place) and only the target comment's tokens count.

``lmscore`` is NOT BARTScore: a *prompted likelihood* with a causal LM (any
``AutoModelForCausalLM``, e.g. the offline SmolLM2): the model reads
``"{source}\\nIn other words:\\n"`` and then the target, and the score is the mean log-probability
of the target comment's tokens only. Minimal context puts the language prefix first; full context
reads ``"Reference comment: {source}\\n\\n"`` then the file up to and including the target comment
(a causal LM cannot see code after the comment, so that part is left out and recorded). Same
forward/reverse/average layout as bartscore.

Both are log-probabilities: <= 0, higher is better.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from metrics.context import (
    MINIMAL_PREFIX,
    ContextVariant,
    EncodedSegment,
    Segment,
    encode_segment,
    model_max_tokens,
    special_tokens,
)
from metrics.core import MetricInputError, PairScore

CAUSAL_PROMPT_VERSION = "v1"
CAUSAL_BRIDGE = "\nIn other words:\n"
CAUSAL_FULL_HEADER = "Reference comment: {source}\n\n"


@dataclass(frozen=True)
class _Input:
    ids: tuple[int, ...]
    scored: tuple[int, ...]  # positions whose token log-probabilities are averaged
    details: dict


class _LikelihoodScorer:
    def __init__(self, model, tokenizer, *, model_name: str = "", device: Optional[str] = None,
                 max_batch_tokens: int = 2048, batch_size: int = 16):
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name or getattr(model.config, "_name_or_path", "")
        self.device = device or str(next(model.parameters()).device)
        self.max_batch_tokens = max_batch_tokens
        self.batch_size = batch_size
        self.max_tokens = model_max_tokens(tokenizer, model.config)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)
        self._torch = torch

    def _batches(self, items: list):
        order = sorted(range(len(items)), key=lambda i: items[i][1])
        batch, longest = [], 0
        for i in order:
            length = items[i][1]
            if batch and (len(batch) >= self.batch_size
                          or max(longest, length) * (len(batch) + 1) > self.max_batch_tokens):
                yield batch
                batch, longest = [], 0
            batch.append(i)
            longest = max(longest, length)
        if batch:
            yield batch

    def pair_scores(self, predictions: Sequence[Segment], references: Sequence[Segment],
                    context: ContextVariant | str = ContextVariant.NONE,
                    lang: str = "en") -> list[PairScore]:
        """P = forward (ref -> pred), R = reverse (pred -> ref), F = (P + R) / 2."""
        variant = ContextVariant.parse(context)
        n = len(predictions)
        directions = list(zip(references, predictions)) + list(zip(predictions, references))
        values = self.mean_log_likelihoods(directions, variant, lang)
        out = []
        for fwd, rev in zip(values[:n], values[n:]):
            errors = [f"{w}: {v}" for w, v in (("forward", fwd), ("reverse", rev))
                      if isinstance(v, Exception)]
            if errors:
                out.append(PairScore.failed("; ".join(errors)))
                continue
            (p, p_details), (r, r_details) = fwd, rev
            details = {k: v for k, v in (("forward", p_details), ("reverse", r_details)) if v}
            out.append(PairScore(p, r, (p + r) / 2, details))
        return out

    def mean_log_likelihoods(self, pairs: Sequence[tuple[Segment, Segment]],
                             variant: ContextVariant, lang: str) -> list:
        raise NotImplementedError


class Seq2SeqScorer(_LikelihoodScorer):
    """BARTScore: log p(target | source) with an encoder-decoder model."""

    metric = "bartscore"

    def _encode(self, segment: Segment, variant: ContextVariant) -> EncodedSegment:
        return encode_segment(self.tokenizer, segment, self.max_tokens)

    def mean_log_likelihoods(self, pairs, variant, lang):
        torch = self._torch
        items, results = [], [None] * len(pairs)
        for k, (src, tgt) in enumerate(pairs):
            try:
                s, t = self._encode(src, variant), self._encode(tgt, variant)
            except MetricInputError as exc:
                results[k] = exc
                continue
            scored = tuple(range(len(t.input_ids))) if variant is ContextVariant.NONE else t.scored
            items.append((k, len(s.input_ids) + len(t.input_ids), s, t, scored))
        with torch.inference_mode():
            for batch in self._batches([(it, it[1]) for it in items]):
                chosen = [items[i] for i in batch]
                src_len = max(len(c[2].input_ids) for c in chosen)
                tgt_len = max(len(c[3].input_ids) for c in chosen)
                src = torch.full((len(chosen), src_len), self.pad_id, dtype=torch.long)
                mask = torch.zeros_like(src)
                labels = torch.full((len(chosen), tgt_len), -100, dtype=torch.long)
                for b, (_, _, s, t, _) in enumerate(chosen):
                    src[b, :len(s.input_ids)] = torch.tensor(s.input_ids)
                    mask[b, :len(s.input_ids)] = 1
                    labels[b, :len(t.input_ids)] = torch.tensor(t.input_ids)
                decoder_input = self._shift_right(labels)
                logits = self.model(input_ids=src.to(self.device),
                                    attention_mask=mask.to(self.device),
                                    decoder_input_ids=decoder_input.to(self.device)).logits
                logprobs = torch.log_softmax(logits.float(), dim=-1).cpu()
                for b, (k, _, s, t, scored) in enumerate(chosen):
                    pos = torch.tensor(scored)
                    tok = torch.tensor([t.input_ids[p] for p in scored])
                    value = float(logprobs[b, pos, tok].mean())
                    results[k] = (value, {**({"source": s.details} if s.details else {}),
                                          **({"target": t.details} if t.details else {})})
        return results

    def _shift_right(self, labels):
        """Decoder inputs from labels, as the model does when given ``labels``."""
        torch = self._torch
        config = self.model.config
        start = getattr(config, "decoder_start_token_id", None)
        if start is None:
            start = getattr(getattr(config, "decoder", None), "bos_token_id", None)
        if start is None:
            raise ValueError(f"{type(self.model).__name__} config has no decoder_start_token_id")
        shifted = torch.full_like(labels, self.pad_id)
        shifted[:, 1:] = labels[:, :-1]
        shifted[:, 0] = start
        return shifted.masked_fill(shifted == -100, self.pad_id)

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: Optional[str] = None, **kwargs):
        from models import load_seq2seq

        model, tokenizer = load_seq2seq(name_or_path, device=device)
        return cls(model, tokenizer, model_name=str(name_or_path), **kwargs)


class CausalLMScorer(_LikelihoodScorer):
    """lmscore: prompted likelihood of the target comment with a causal LM."""

    metric = "lmscore"

    def _input(self, src: Segment, tgt: Segment, variant: ContextVariant, lang: str) -> _Input:
        source = src.comment.strip()
        if not source:
            raise MetricInputError("empty source comment")
        details: dict = {}
        if variant is ContextVariant.FULL:
            header = CAUSAL_FULL_HEADER.format(source=source)
            body = Segment(tgt.text[:tgt.end], tgt.start, tgt.end)
            if len(tgt.text) > tgt.end:
                details["code_after_comment_ignored_chars"] = len(tgt.text) - tgt.end
        else:
            prefix = MINIMAL_PREFIX.get(lang, MINIMAL_PREFIX["en"]) \
                if variant is ContextVariant.MINIMAL else ""
            header = prefix + source + CAUSAL_BRIDGE
            comment = tgt.comment
            body = Segment(comment, 0, len(comment))
        specials = special_tokens(self.tokenizer)
        head_ids = tuple(self.tokenizer(header, add_special_tokens=False)["input_ids"])
        budget = self.max_tokens - len(specials.prefix) - len(specials.suffix) - len(head_ids)
        if budget < 1:
            raise MetricInputError(f"the source comment alone exceeds {self.max_tokens} tokens")
        enc = encode_segment(self.tokenizer, body, budget, add_special=False)
        offset = len(specials.prefix) + len(head_ids)
        ids = specials.prefix + head_ids + enc.input_ids
        details.update(enc.details)
        return _Input(ids, tuple(offset + p for p in enc.scored), details)

    def mean_log_likelihoods(self, pairs, variant, lang):
        torch = self._torch
        items, results = [], [None] * len(pairs)
        for k, (src, tgt) in enumerate(pairs):
            try:
                items.append((k, self._input(src, tgt, variant, lang)))
            except MetricInputError as exc:
                results[k] = exc
        with torch.inference_mode():
            for batch in self._batches([(it, len(it[1].ids)) for it in items]):
                chosen = [items[i] for i in batch]
                longest = max(len(x.ids) for _, x in chosen)
                ids = torch.full((len(chosen), longest), self.pad_id, dtype=torch.long)
                mask = torch.zeros_like(ids)
                for b, (_, x) in enumerate(chosen):
                    ids[b, :len(x.ids)] = torch.tensor(x.ids)
                    mask[b, :len(x.ids)] = 1
                logits = self.model(input_ids=ids.to(self.device),
                                    attention_mask=mask.to(self.device)).logits
                for b, (k, x) in enumerate(chosen):
                    pos = torch.tensor(x.scored)
                    rows = torch.log_softmax(logits[b, pos - 1].float(), dim=-1).cpu()
                    tok = torch.tensor([x.ids[p] for p in x.scored])
                    value = float(rows[torch.arange(len(tok)), tok].mean())
                    results[k] = (value, {"target": x.details} if x.details else {})
        return results

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: Optional[str] = None, **kwargs):
        from models import load_causal_lm

        model, tokenizer = load_causal_lm(name_or_path, device=device)
        return cls(model, tokenizer, model_name=str(name_or_path), **kwargs)
