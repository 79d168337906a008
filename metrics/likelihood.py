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
from metrics.core import MetricInputError, PairScore, report_progress

CAUSAL_PROMPT_VERSION = "v1"  # the default; "v2" reads the code first in context full
CAUSAL_PROMPTS = ("v1", "v2")
CAUSAL_BRIDGE = "\nIn other words:\n"
CAUSAL_FULL_HEADER = "Reference comment: {source}\n\n"


MAX_PADDING = 0.1  # a batch's padded tokens over its real ones, at most
SHARED_CACHE_TOKENS = 16384  # a shared prefix's cache copies in one batch (~46 KB a token on SmolLM2)


@dataclass(frozen=True)
class _Input:
    ids: tuple[int, ...]
    scored: tuple[int, ...]  # positions whose token log-probabilities are averaged
    details: dict


def _common(a: tuple, b: tuple) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_groups(inputs: list, min_shared: int) -> tuple[list, list]:
    """([(shared tokens, inputs)], inputs alone): inputs whose first tokens are the same, grouped
    so that the tokens run once instead of once per input are the most (a shared prefix stops
    before the position of an input's first scored token, whose logits must be computed).
    In sorted order the inputs sharing a prefix are neighbours; a run of neighbours shares the
    least of their common prefixes, and a run is kept whole or split where that least is, which
    ever saves more (recursively)."""
    order = sorted(inputs, key=lambda x: x.ids)
    cap = [x.scored[0] - 1 for x in order]
    common = [min(_common(a.ids, b.ids), cap[i], cap[i + 1])
              for i, (a, b) in enumerate(zip(order, order[1:]))]

    def best(lo: int, hi: int) -> tuple[int, list]:  # order[lo:hi], common[lo:hi-1] all >= min
        if hi - lo < 2:
            return 0, []
        least = min(common[lo:hi - 1])
        whole = (least * (hi - lo - 1), [(least, order[lo:hi])])
        cuts = [lo] + [i + 1 for i in range(lo, hi - 1) if common[i] == least] + [hi]
        if len(cuts) == 2 + (hi - lo - 1):  # all equal: nothing to split
            return whole
        saved, groups = 0, []
        for a, b in zip(cuts, cuts[1:]):
            part = best(a, b)
            saved += part[0]
            groups += part[1]
        return max(whole, (saved, groups), key=lambda t: t[0])

    groups, start = [], 0
    for i in range(len(order)):
        if i == len(order) - 1 or common[i] < min_shared:
            groups += best(start, i + 1)[1]
            start = i + 1
    grouped = {id(x) for _, members in groups for x in members}
    return groups, [x for x in order if id(x) not in grouped]


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

    def _batches(self, items: list, most: Optional[int] = None):
        """Indices of ``items`` ((item, length) pairs) in length-sorted batches of at most
        ``batch_size`` (or ``most``) inputs and ``max_batch_tokens`` padded tokens, closed before
        padding would exceed ``max_padding`` of its real tokens."""
        order = sorted(range(len(items)), key=lambda i: items[i][1])
        batch, real = [], 0
        for i in order:
            length = items[i][1]  # sorted: the longest of the batch so far
            if batch and (len(batch) >= min(self.batch_size, most or self.batch_size)
                          or length * (len(batch) + 1) > self.max_batch_tokens
                          or length * (len(batch) + 1) > (1 + MAX_PADDING) * (real + length)):
                yield batch
                batch, real = [], 0
            batch.append(i)
            real += length
        if batch:
            yield batch

    def pair_scores(self, predictions: Sequence[Segment], references: Sequence[Segment],
                    context: ContextVariant | str = ContextVariant.NONE,
                    lang: str | Sequence[str] = "en", **options) -> list[PairScore]:
        """P = forward (ref -> pred), R = reverse (pred -> ref), F = (P + R) / 2. ``lang``: one
        language for all pairs, or one per pair; ``options``: the metric's (lmscore: prompt)."""
        variant = ContextVariant.parse(context)
        n = len(predictions)
        directions = list(zip(references, predictions)) + list(zip(predictions, references))
        langs = [lang] * n if isinstance(lang, str) else list(lang)
        values = self.mean_log_likelihoods(directions, variant, langs + langs, **options)
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
                             variant: ContextVariant, lang: str | Sequence[str]) -> list:
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
        done = 0
        with torch.inference_mode():
            for batch in self._batches([(it, it[1]) for it in items]):
                report_progress(done, len(items))  # a progress bar moves per batch
                done += len(batch)
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
    min_shared_prefix = 16  # tokens: a shorter shared prefix is run again in every input

    def __init__(self, model, tokenizer, **kwargs):
        import inspect

        super().__init__(model, tokenizer, **kwargs)
        params = inspect.signature(model.forward).parameters
        self._keeps_logits = "logits_to_keep" in params  # the LM head on chosen positions only
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    def _input(self, src: Segment, tgt: Segment, variant: ContextVariant, lang: str,
               prompt: str = CAUSAL_PROMPT_VERSION) -> _Input:
        source = src.comment.strip()
        if not source:
            raise MetricInputError("empty source comment")
        details: dict = {}
        if variant is ContextVariant.FULL and prompt == "v2":
            return self._code_first(source, tgt, details)
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

    def _code_first(self, source: str, tgt: Segment, details: dict) -> _Input:
        """Prompt v2, context full: the file up to the comment, the source comment in its place,
        then on the next line (same indentation) the target comment. The code is tokenised on
        its own, so it is the same tokens in both directions and for every source: a target's
        inputs share it (see `prefix_groups`). Too long: the code is cut on the left."""
        tok = self.tokenizer
        code = tgt.text[:tgt.start]
        line = code[code.rfind("\n") + 1:]
        indent = line if not line.strip() else ""
        code_ids, middle, comment = (tuple(tok(t, add_special_tokens=False)["input_ids"])
                                     for t in (code, source + "\n" + indent, tgt.comment))
        if len(tgt.text) > tgt.end:
            details["code_after_comment_ignored_chars"] = len(tgt.text) - tgt.end
        specials = special_tokens(tok)
        room = (self.max_tokens - len(specials.prefix) - len(specials.suffix) - len(middle)
                - len(comment))
        if room < 0:
            raise MetricInputError(f"the two comments alone exceed {self.max_tokens} tokens")
        if len(code_ids) > room:
            details["context_cut_left"] = {"tokens": len(code_ids) - room}
            code_ids = code_ids[len(code_ids) - room:]
        ids = specials.prefix + code_ids + middle + comment
        return _Input(ids, tuple(range(len(ids) - len(comment), len(ids))), details)

    def mean_log_likelihoods(self, pairs, variant, lang, prompt: str = CAUSAL_PROMPT_VERSION):
        """Exact: each distinct input once; a prefix shared by several inputs (a target's
        reference, header and file in the forward direction) run once and its key/value cache
        reused; length-sorted batches under a token budget; the LM head only on the positions
        that are scored."""
        langs = [lang] * len(pairs) if isinstance(lang, str) else list(lang)
        distinct, inputs, results = {}, {}, [None] * len(pairs)
        for k, ((src, tgt), lg) in enumerate(zip(pairs, langs)):
            try:
                x = self._input(src, tgt, variant, lg, prompt)
            except MetricInputError as exc:
                results[k] = exc
                continue
            x = distinct.setdefault((x.ids, x.scored, repr(x.details)), x)
            inputs.setdefault(id(x), []).append(k)
        self._progress = [0, len(distinct)]  # inputs run so far, of all: moved per batch
        with self._torch.inference_mode():
            groups, alone = prefix_groups(list(distinct.values()), self.min_shared_prefix)
            for shared, members in groups:
                self._run_shared(shared, members, inputs, results)
            for batch in self._batches([(x, len(x.ids)) for x in alone]):
                self._run(self._forward([alone[i] for i in batch]), [alone[i] for i in batch],
                          inputs, results)
        return results

    def _forward(self, chosen: list, shared: int = 0, cache=None):
        """(kept logits, first kept position): right-padded ``chosen`` after ``shared`` tokens
        already in ``cache``; logits only from the first position any of them scores."""
        torch = self._torch
        longest = max(len(x.ids) for x in chosen) - shared
        ids = torch.full((len(chosen), longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(chosen), shared + longest), dtype=torch.long)
        mask[:, :shared] = 1
        for b, x in enumerate(chosen):
            ids[b, :len(x.ids) - shared] = torch.tensor(x.ids[shared:])
            mask[b, shared:len(x.ids)] = 1
        first = min(x.scored[0] for x in chosen) - 1 - shared
        kwargs = {}
        if self._keeps_logits:
            kwargs["logits_to_keep"] = torch.arange(first, longest, device=self.device)
        else:
            first = 0
        if cache is not None:
            kwargs[self._cache_kw] = cache
        out = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                         use_cache=cache is not None, **kwargs)
        return out.logits, first + shared

    def _run(self, forward, chosen, inputs, results) -> None:
        """Mean log-probability of each input's scored tokens from its kept logits."""
        torch = self._torch
        logits, first = forward
        progress = getattr(self, "_progress", None)
        if progress is not None:
            progress[0] += len(chosen)
            report_progress(*progress)
        for b, x in enumerate(chosen):
            rows = torch.tensor([p - 1 - first for p in x.scored], device=logits.device)
            logprobs = torch.log_softmax(logits[b, rows].float(), dim=-1).cpu()
            tok = torch.tensor([x.ids[p] for p in x.scored])
            value = (float(logprobs[torch.arange(len(tok)), tok].mean()),
                     {"target": x.details} if x.details else {})
            for k in inputs[id(x)]:
                results[k] = value

    def _run_shared(self, shared: int, members: list, inputs, results) -> None:
        """Run the first ``shared`` tokens once, then the members' rest on copies of its cache
        (batches under the token budget, the shared tokens counted once per member)."""
        import copy

        torch = self._torch
        prefix = torch.tensor([members[0].ids[:shared]], device=self.device)
        out = self.model(input_ids=prefix, use_cache=True,
                         **({"logits_to_keep": 1} if self._keeps_logits else {}))
        cache = out.get("cache")
        cache = out.get("past_key_values") if cache is None else cache
        most = max(1, SHARED_CACHE_TOKENS // shared)  # copies of the cache in one batch
        for batch in self._batches([(x, len(x.ids) - shared) for x in members], most):
            chosen = [members[i] for i in batch]
            copied = copy.deepcopy(cache)
            if len(chosen) > 1:
                copied.batch_repeat_interleave(len(chosen))
            self._run(self._forward(chosen, shared, copied), chosen, inputs, results)

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: Optional[str] = None, **kwargs):
        from models import load_causal_lm

        model, tokenizer = load_causal_lm(name_or_path, device=device)
        return cls(model, tokenizer, model_name=str(name_or_path), **kwargs)
