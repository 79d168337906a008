"""BERTScore, written for this workload: any Hugging Face encoder, any layer, context variants.

Same definition as Zhang et al. / the ``bert-score`` package: token embeddings of layer L
(the output of the first L layers), cosine similarity, greedy matching; P averages each
prediction token's best match in the reference, R each reference token's best match in the
prediction, F = 2PR/(P+R); optional idf weights and baseline rescaling
``(x - b) / (1 - b)``.

With context ``none`` the numbers equal the package's for the same model and layer
(tests/metrics/test_bertscore.py checks it): the text is stripped, wrapped in the tokenizer's
special tokens, and the special tokens take part in matching with weight 0, as there. With
``minimal`` / ``full`` context the whole input goes through the encoder, and only the comment's
own tokens are matched and weighted (metrics.context).

Speed (bench/bertscore.py): each distinct (text, span) is encoded once per call however many
pairs share it, inputs are sorted by token length and batched under a token budget (almost no
padding; no attention mask at all when a batch has one length), layers above L are never run,
inference mode, and half precision on GPU (``dtype``). CPUs run float32 by default;
``dtype="bfloat16"`` is an opt-in, about 1.7x faster on CPUs with bfloat16 units, that moves F
by up to ~1.5e-3 (bench/bertscore.py --bf16 prints both). The encoder runs on a ``backend``
(metrics.encoders): ``openvino`` (the CPU float32 default) or ``onnx`` (ONNX Runtime), both on
one ONNX export and within ~1e-6 of torch, or ``torch``; bench/bertscore.py times them against
the package.
"""
from __future__ import annotations

import copy
import logging
import math
import random
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from metrics.context import (
    ContextVariant,
    EncodedSegment,
    Segment,
    build_segment,
    encode_segment,
    model_max_tokens,
)
from metrics.core import ConfigError, MetricInputError, PairScore, report_progress

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Baseline:
    """Rescaling baseline b for P, R and F (the score of unrelated pairs), and where it came from."""

    precision: float
    recall: float
    f: float
    source: str = ""

    def rescale(self, score: PairScore) -> PairScore:
        if score.error:
            return score
        p = (score.precision - self.precision) / (1 - self.precision)
        r = (score.recall - self.recall) / (1 - self.recall)
        f = (score.f - self.f) / (1 - self.f)
        details = dict(score.details, raw=[score.precision, score.recall, score.f])
        return PairScore(p, r, f, details)


@dataclass
class _Embedded:
    vectors: "object"  # (n_scored, d) unit vectors, float32, CPU
    specials: "object"  # (n_special, d) unit vectors (matched, never weighted)
    token_ids: tuple[int, ...]  # ids of the scored tokens (idf lookup)
    details: dict = field(default_factory=dict)


def resolve_dtype(device: str, dtype: Optional[str] = None) -> str:
    """The precision to encode in: float16 on a GPU and float32 elsewhere unless asked;
    bfloat16 anywhere; float16 only on a GPU."""
    on_gpu = device.startswith("cuda")
    dtype = dtype or ("float16" if on_gpu else "float32")
    if dtype not in ("float32", "float16", "bfloat16"):
        raise ValueError(f"dtype must be float32, float16 or bfloat16, not {dtype!r}")
    if dtype == "float16" and not on_gpu:
        raise ValueError(f"dtype float16 is for GPUs; on {device} use float32 "
                         f"(or bfloat16, faster and less exact)")
    return dtype


_LAYER_LISTS = ("encoder.layer", "layers", "transformer.layer", "encoder.layers", "layer")


def _layer_path(model) -> Optional[list[str]]:
    """Attribute path to the encoder's list of layers (BERT/XLM-R/ELECTRA/DeBERTa: encoder.layer,
    ModernBERT: layers, DistilBERT: transformer.layer), or None if unknown."""
    import torch

    for path in _LAYER_LISTS:
        node = model
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                break
        if isinstance(node, torch.nn.ModuleList):
            return path.split(".")
    return None


def truncate_to_layer(model, layer: Optional[int]):
    """(a view of ``model`` that runs only its first ``layer`` layers, the model's layer count),
    as bert-score does. Weights are shared and the original module is left untouched (the hub
    caches one model per process). ``None`` keeps all layers."""
    import torch

    if hasattr(model, "encoder") and hasattr(model, "decoder"):
        model = model.get_encoder() if hasattr(model, "get_encoder") else model.encoder
    path = _layer_path(model)
    if path is None:
        raise ConfigError(f"cannot find the layer list of {type(model).__name__}")
    node = model
    for part in path:
        node = getattr(node, part)
    n_layers = len(node)
    if layer is None:
        return model, n_layers
    if not 0 <= layer <= n_layers:
        raise ConfigError(f"layer {layer} is out of range: {type(model).__name__} has layers "
                          f"1..{n_layers} (0 = embeddings)")

    def clone(module):  # shallow copy with its own child table
        twin = copy.copy(module)
        twin._modules = dict(module._modules)
        return twin

    root = clone(model)
    parent = root
    for part in path[:-1]:
        child = clone(parent._modules[part])
        parent._modules[part] = child
        parent = child
    parent._modules[path[-1]] = torch.nn.ModuleList(list(node)[:layer])
    if hasattr(root, "config") and hasattr(root.config, "num_hidden_layers"):
        root.config = copy.copy(root.config)
        root.config.num_hidden_layers = layer
    return root, n_layers


def _is_prefix_space_bpe(tokenizer) -> bool:
    """bert-score encodes RoBERTa/GPT-2 style tokenizers with add_prefix_space=True."""
    names = [cls.__name__ for cls in type(tokenizer).__mro__]
    return any(n.startswith(("RobertaTokenizer", "GPT2Tokenizer")) for n in names)


class BertScorer:
    """BERTScore with one encoder at one layer. Build once, score many batches."""

    def __init__(self, model, tokenizer, layer: Optional[int] = None, *, model_name: str = "",
                 device: Optional[str] = None, dtype: Optional[str] = None, batch_size: int = 256,
                 max_batch_tokens: Optional[int] = None, cache_mb: float = 256,
                 backend: Optional[str] = None):
        import torch

        self.model_name = model_name or getattr(model.config, "_name_or_path", "")
        self.tokenizer = tokenizer
        self.encoder, self.n_layers = truncate_to_layer(model, layer)
        self.layer = self.n_layers if layer is None else layer
        self.device = device or str(next(model.parameters()).device)
        self.dtype = resolve_dtype(self.device, dtype)
        self.backend, self.engine = self._start_backend(backend)  # what _forward calls
        self.batch_size = batch_size
        # ~2k tokens a batch on CPU keeps the matrices in cache: 15% faster than 6k (measured
        # with bench/bertscore.py's workload); a GPU wants bigger batches
        self.max_batch_tokens = max_batch_tokens or (
            8192 if self.device.startswith("cuda") else 2048)
        self.max_tokens = model_max_tokens(tokenizer, model.config)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.prefix_space = _is_prefix_space_bpe(tokenizer)
        self._torch = torch
        # what the encoder has run on so far: texts, their tokens, tokens with batch padding
        self.work: Counter = Counter(texts=0, tokens=0, padded_tokens=0)
        # embeddings kept between calls, least recently used first; references (a target's is
        # matched again by every configuration over the same targets) are evicted last
        self._cache: "OrderedDict[Segment, _Embedded]" = OrderedDict()
        self._kept: "OrderedDict[Segment, _Embedded]" = OrderedDict()
        self._cache_used = 0
        self.cache_bytes = int(cache_mb * 2**20)

    @classmethod
    def from_pretrained(cls, name_or_path: str, layer: Optional[int] = None,
                        device: Optional[str] = None, **kwargs) -> "BertScorer":
        from models import load_encoder

        model, tokenizer = load_encoder(name_or_path, device=device)
        return cls(model, tokenizer, layer, model_name=str(name_or_path), **kwargs)

    def _start_backend(self, backend: Optional[str]):
        """(backend name, the callable that encodes): openvino or onnx (metrics.encoders) where
        asked or picked by default, torch when asked, or when the export or session fails."""
        from metrics.encoders import onnx_encoder, resolve_backend

        backend = resolve_backend(self.device, self.dtype, backend)
        if backend in ("onnx", "openvino"):
            name = self.model_name or type(self.encoder).__name__
            try:
                return backend, onnx_encoder(self.encoder, name, self.layer, backend)
            except Exception as exc:  # any export/runtime failure: torch still scores exactly
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                _log.warning("BERTScore: the %s backend for %s layer %s failed (%s: %s); "
                             "encoding with torch instead",
                             {"onnx": "ONNX", "openvino": "OpenVINO"}[backend], name, self.layer,
                             type(exc).__name__, reason[:200])
        return "torch", self.encoder

    # ------------------------------------------------------------------ encoding

    def _encode(self, segment: Segment) -> EncodedSegment:
        if self.prefix_space and segment.start == 0:
            segment = Segment(" " + segment.text, segment.start + 1, segment.end + 1)
        return encode_segment(self.tokenizer, segment, self.max_tokens)

    def embed(self, segments: Sequence[Segment], match_special: bool = True,
              keep: Iterable[Segment] = ()) -> list:
        """One _Embedded (or the MetricInputError) per segment. Each distinct segment is encoded
        once per call, and kept in an LRU cache (``cache_mb``) so that later calls (other noise
        kinds, other prediction sets against the same references) reuse it; the segments in
        ``keep`` (the references) are evicted only when nothing else is left to evict."""
        keep = set(keep)
        torch = self._torch
        unique: dict[Segment, object] = {}
        found: dict[Segment, object] = {}
        for seg in segments:
            if seg in unique or seg in found:
                continue
            cached = self._cached(seg, seg in keep)
            if cached is not None:
                found[seg] = cached
                continue
            try:
                unique[seg] = self._encode(seg)
            except MetricInputError as exc:
                found[seg] = exc
        todo = sorted(unique, key=lambda s: len(unique[s].input_ids))
        batches, batch = [], []
        for seg in todo:
            length = len(unique[seg].input_ids)  # sorted: this is the batch's longest so far
            if batch and (len(batch) >= self.batch_size
                          or length * (len(batch) + 1) > self.max_batch_tokens):
                batches.append(batch)
                batch = []
            batch.append(seg)
        if batch:
            batches.append(batch)
        autocast = (torch.autocast(self.device.split(":")[0], dtype=getattr(torch, self.dtype))
                    if self.dtype != "float32" else _nullcontext())
        done = 0
        with torch.inference_mode(), autocast:
            for batch in batches:
                report_progress(done, len(todo))  # a progress bar moves per batch
                done += len(batch)
                encoded = [unique[s] for s in batch]
                hidden = self._forward(encoded)
                self.work["texts"] += len(batch)
                self.work["tokens"] += sum(len(e.input_ids) for e in encoded)
                self.work["padded_tokens"] += hidden.shape[0] * hidden.shape[1]
                hidden = torch.nn.functional.normalize(hidden.float(), dim=-1).cpu()
                for i, (seg, enc) in enumerate(zip(batch, encoded)):
                    emb = _Embedded(hidden[i, list(enc.scored)].clone(),
                                    hidden[i, list(enc.special)].clone(),
                                    tuple(enc.input_ids[j] for j in enc.scored), enc.details)
                    found[seg] = emb
                    self._remember(seg, emb, seg in keep)
        out = []
        for seg in segments:
            emb = found[seg]
            if not match_special and isinstance(emb, _Embedded):
                emb = _Embedded(emb.vectors, emb.specials[:0], emb.token_ids, emb.details)
            out.append(emb)
        return out

    def clear_cache(self, references: bool = True) -> None:
        """Forget the cached embeddings (``references=False``: all but the references')."""
        for table in (self._cache, self._kept) if references else (self._cache,):
            self._cache_used -= sum(_size(s, e) for s, e in table.items())
            table.clear()

    def _cached(self, seg: Segment, reference: bool) -> Optional["_Embedded"]:
        for table in (self._kept, self._cache):
            if seg in table:
                emb = table.pop(seg)
                (self._kept if reference or table is self._kept else self._cache)[seg] = emb
                return emb
        return None

    def _remember(self, seg: Segment, emb: "_Embedded", reference: bool = False) -> None:
        size = _size(seg, emb)
        if size > self.cache_bytes:
            return
        (self._kept if reference else self._cache)[seg] = emb
        self._cache_used += size
        while self._cache_used > self.cache_bytes:
            old_seg, old = (self._cache or self._kept).popitem(last=False)
            self._cache_used -= _size(old_seg, old)

    def _forward(self, encoded: list[EncodedSegment]):
        torch = self._torch
        longest = max(len(e.input_ids) for e in encoded)
        ids = torch.full((len(encoded), longest), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(encoded), longest), dtype=torch.long)
        for i, e in enumerate(encoded):
            ids[i, :len(e.input_ids)] = torch.tensor(e.input_ids)
            mask[i, :len(e.input_ids)] = 1
        padded = bool((mask == 0).any())
        kwargs = {"attention_mask": mask.to(self.device)} if padded else {}
        out = self.engine(input_ids=ids.to(self.device), **kwargs)
        return out[0] if isinstance(out, tuple) else out.last_hidden_state

    # ------------------------------------------------------------------ scoring

    def score_segments(self, predictions: Sequence[Segment], references: Sequence[Segment],
                       *, idf: Optional[dict] = None, baseline: Optional[Baseline] = None,
                       match_special: bool = True) -> list[PairScore]:
        """P/R/F for each (prediction, reference) pair of segments."""
        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
        embedded = self.embed(list(predictions) + list(references), match_special,
                              keep=references)
        n = len(predictions)
        scores = self.match(embedded[:n], embedded[n:], idf)
        return [baseline.rescale(s) for s in scores] if baseline else scores

    def match(self, hyps: Sequence, refs: Sequence, idf: Optional[dict] = None,
              chunk: int = 512) -> list[PairScore]:
        """Greedy matching of embedded pairs, vectorised over chunks of pairs."""
        torch = self._torch
        out: list[Optional[PairScore]] = [None] * len(hyps)
        good = []
        for i, (hyp, ref) in enumerate(zip(hyps, refs)):
            bad = [f"{w}: {e}" for w, e in (("prediction", hyp), ("reference", ref))
                   if isinstance(e, Exception)]
            if bad:
                out[i] = PairScore.failed("; ".join(bad))
            else:
                good.append(i)
        for c in range(0, len(good), chunk):
            idx = good[c:c + chunk]
            h_vec, h_w = self._pack([hyps[i] for i in idx], idf)
            r_vec, r_w = self._pack([refs[i] for i in idx], idf)
            valid = (h_w >= 0)[:, :, None] & (r_w >= 0)[:, None, :]  # -1 marks padding
            sim = torch.bmm(h_vec, r_vec.transpose(1, 2)).masked_fill(~valid, float("-inf"))
            h_w, r_w = h_w.clamp(min=0), r_w.clamp(min=0)
            best_p = torch.nan_to_num(sim.max(dim=2).values, neginf=0.0)
            best_r = torch.nan_to_num(sim.max(dim=1).values, neginf=0.0)
            p = (best_p * h_w).sum(1) / h_w.sum(1)
            r = (best_r * r_w).sum(1) / r_w.sum(1)
            f = torch.where(p + r != 0, 2 * p * r / (p + r), torch.zeros_like(p))
            for k, i in enumerate(idx):
                if not (h_w[k].sum() > 0 and r_w[k].sum() > 0):
                    out[i] = PairScore.failed("all tokens have idf weight 0")
                    continue
                details = {side: e.details for side, e in (("prediction", hyps[i]),
                                                           ("reference", refs[i])) if e.details}
                out[i] = PairScore(float(p[k]), float(r[k]), float(f[k]), details)
        return out  # type: ignore[return-value]

    def _pack(self, embedded: Sequence, idf: Optional[dict]):
        """Padded (B, T, d) vectors (scored tokens, then specials) and (B, T) weights: idf or 1
        for scored tokens, 0 for specials, -1 for padding."""
        torch = self._torch
        rows = [torch.cat([e.vectors, e.specials]) for e in embedded]
        longest = max(len(r) for r in rows)
        dim = rows[0].shape[1]
        vec = torch.zeros((len(rows), longest, dim))
        weight = torch.full((len(rows), longest), -1.0)
        for b, (e, r) in enumerate(zip(embedded, rows)):
            vec[b, :len(r)] = r
            weight[b, :len(e.vectors)] = self._weights(e.token_ids, idf)
            weight[b, len(e.vectors):len(r)] = 0.0
        return vec, weight

    def _weights(self, token_ids, idf: Optional[dict]):
        torch = self._torch
        if idf is None:
            return torch.ones(len(token_ids))
        default = idf.get(None, 0.0)
        return torch.tensor([idf.get(t, default) for t in token_ids], dtype=torch.float32)

    # ------------------------------------------------------------------ helpers

    def score(self, predictions: Sequence[str], references: Sequence[str],
              context: ContextVariant | str = ContextVariant.NONE, lang: str = "en",
              **kwargs) -> list[PairScore]:
        """Convenience for plain strings with context none/minimal (full needs file + span)."""
        variant = ContextVariant.parse(context)
        preds, refs = [], []
        errors = {}
        for i, (p, r) in enumerate(zip(predictions, references)):
            try:
                pair = (build_segment(p, variant, lang), build_segment(r, variant, lang))
            except MetricInputError as exc:
                errors[i] = str(exc)
                pair = (None, None)
            preds.append(pair[0])
            refs.append(pair[1])
        ok = [i for i in range(len(preds)) if i not in errors]
        scored = self.score_segments([preds[i] for i in ok], [refs[i] for i in ok],
                                     match_special=variant is ContextVariant.NONE, **kwargs)
        out: list[PairScore] = [PairScore.failed(errors[i]) if i in errors else None
                                for i in range(len(preds))]
        for i, s in zip(ok, scored):
            out[i] = s
        return out

    def idf(self, references: Iterable[str]) -> dict:
        """bert-score's idf: log((M+1)/(df+1)) over the references' token ids (one document per
        reference given, duplicates counted), 0 for special tokens, log(M+1) for unseen ids."""
        refs = list(references)
        df: Counter = Counter()
        for text in refs:
            seg = build_segment(text, ContextVariant.NONE) if text.strip() else None
            if seg is not None:
                df.update(set(self._encode(seg).input_ids))
        m = len(refs)
        weights = {tid: math.log((m + 1) / (c + 1)) for tid, c in df.items()}
        for tid in self.tokenizer.all_special_ids:
            weights[tid] = 0.0
        weights[None] = math.log(m + 1)
        return weights

    def signature_parts(self) -> dict:
        return {"model": self.model_name, "layer": self.layer, "dtype": self.dtype,
                "backend": self.backend, "tok": type(self.tokenizer).__name__}


def _size(seg: Segment, emb: _Embedded) -> int:
    return (emb.vectors.numel() + emb.specials.numel()) * 4 + len(seg.text)


def corpus_baseline(scorer: BertScorer, references: Sequence[Segment], *, seed: int = 0,
                    max_pairs: int = 2000, idf: Optional[dict] = None,
                    match_special: bool = True, source: str = "corpus") -> Baseline:
    """A rescaling baseline for a model/language that has none: the mean P/R/F of pairs of
    unrelated references (each paired with another, distinct, reference drawn with ``seed``),
    in the spirit of bert-score's baselines from random Common Crawl sentence pairs."""
    distinct = list(dict.fromkeys(references))
    if len(distinct) < 2:
        raise ConfigError("a baseline needs at least two distinct references")
    rng = random.Random(seed)
    order = list(range(len(distinct)))
    rng.shuffle(order)
    order = order[:max_pairs]
    partners = order[1:] + order[:1]  # a cyclic shift: never a text with itself
    scores = scorer.score_segments([distinct[i] for i in order], [distinct[j] for j in partners],
                                   idf=idf, match_special=match_special)
    good = [s for s in scores if not s.error]
    if not good:
        raise ConfigError("no baseline pair could be scored")
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return Baseline(mean([s.precision for s in good]), mean([s.recall for s in good]),
                    mean([s.f for s in good]), f"{source}:n={len(good)},seed={seed}")


def packaged_baseline(model_id: str, lang: str, layer: int) -> Optional[Baseline]:
    """bert-score's shipped baseline for (lang, model id, layer), if it has one."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("bert_score")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = (Path(list(spec.submodule_search_locations)[0]) / "rescale_baseline" / lang
            / f"{model_id}.tsv")
    if not path.is_file():
        return None
    rows = path.read_text(encoding="utf-8").strip().splitlines()
    values = rows[1 + layer].split(",")  # header "LAYER,P,R,F"; row i = layer i
    return Baseline(float(values[1]), float(values[2]), float(values[3]),
                    f"bert-score:{lang}/{model_id}")


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
