"""Token counts for the corpus filters and the generation budget.

The study counted tokens with each target model's own tokenizer. `make_counters(ids)` gives, for
each id, the best counter at hand:
- `HFTokenCounter(id_or_folder)`: the model's own tokenizer when it is installed (a local folder
  or the Hugging Face cache), or else resolved through `models.resolve_model` (the hub, a
  packaged model) when the family has no packaged vocabulary;
- `VocabTokenCounter(path)`: the model family's real tokenizer from a packaged vocabulary
  (`models.vocabs`: StarCoder/Granite, CodeLlama, Qwen2.5-Coder, Gemma), counted by
  llama-cpp-python without weights; a `.gguf` path is taken as such a vocabulary;
- `ApproxTokenCounter()`: otherwise (no id given, or none of the above), an approximation of an
  English/code-centred BPE tokenizer, `approx-bpe:v2`: a run of ASCII letters/digits counts one
  token per started 4 characters, a run of Latin letters with diacritics one per started 3, a run
  in another alphabet (Greek, Cyrillic ...) one per character, CJK characters 3 tokens per 2,
  every other visible character one, and a whitespace run holding a newline or two or more spaces
  one (a single space is free). It leans towards over-counting, which errs on the safe side of a
  context window. Measured against SmolLM2's tokenizer (a 49k BPE like StarCoder's) on
  Pygments' own sources: files x1.30 (median; 5-95%: 1.03-1.39), comments x1.38 (1.06-1.69).
  Models with large multilingual vocabularies (CodeGemma, CodeQwen) need far fewer tokens for
  Greek or Chinese than it counts. It is a stand-in, and reports say so.
  Over-counting whole files dropped files a real tokenizer keeps (zh file recall 100% -> 86%),
  so the context-window check uses `window_count`: the same pieces with each digit one token
  (Gemma, Qwen and Llama split numbers into digits) and a CJK character one, times
  `WINDOW_SCALE` = 2/3, calibrated on
  real files of the five languages (en, nl, zh, el, pl) against the Gemma family's tokenizer
  (CodeGemma's 4,096 tokens are the study's window) so that it counts no more than the real
  tokenizer on 98% of the files in every language (bench/token_counts.py, bench/README.md).

`generation_budget(lengths, sigmas=3)` is mean + sigmas * standard deviation (population),
rounded up: the study's expected comment length and its max-new-tokens.
"""
from __future__ import annotations

import math
import os
import re
import unicodedata
from typing import Protocol, Sequence

_CJK = "\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_APPROX_PIECE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+|\s+|[^\s]")


_CJK_RUN = re.compile(rf"[{_CJK}]+")


def _is_latin(ch: str) -> bool:
    return "LATIN" in unicodedata.name(ch, "")


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    name = "approx-bpe:v2"
    is_approximation = True
    WINDOW_SCALE = 2 / 3  # calibrated: see the module doc

    def count(self, text: str) -> int:
        return self._pieces(text, window=False)

    def window_count(self, text: str) -> int:
        """A whole file's tokens for the context-window check: at most a real tokenizer's
        count for nearly every file (leaning under, so no file a real tokenizer keeps is
        dropped), where `count` leans over (so no comment it keeps is too short)."""
        return math.floor(self.WINDOW_SCALE * self._pieces(text, window=True))

    @staticmethod
    def _pieces(text: str, window: bool) -> int:
        total = 0
        for piece in _APPROX_PIECE.findall(text):
            if piece.isspace():
                total += 1 if ("\n" in piece or len(piece) > 1) else 0
            elif _CJK_RUN.fullmatch(piece):
                total += len(piece) if window else math.ceil(len(piece) * 3 / 2)
            elif piece[0].isalnum() or len(piece) > 1:
                digits = sum(ch.isdigit() for ch in piece) if window else 0
                if piece.isascii():
                    total += digits + math.ceil((len(piece) - digits) / 4)
                elif all(ch.isascii() or _is_latin(ch) for ch in piece):
                    total += digits + math.ceil((len(piece) - digits) / 3)
                else:
                    total += len(piece)
            else:
                total += 1
        return total


class HFTokenCounter:
    """A model's own tokenizer (no special tokens added)."""

    is_approximation = False

    def __init__(self, id_or_folder: str, tokenizer=None, folder: os.PathLike | None = None):
        """`folder`: where the tokenizer is, when already found (else the model is resolved,
        which needs its weights)."""
        if tokenizer is None:
            from transformers import AutoTokenizer

            from models import resolve_model

            tokenizer = AutoTokenizer.from_pretrained(
                os.fspath(folder or resolve_model(id_or_folder)))
        tokenizer.model_max_length = 10**9  # counting only: no "sequence too long" warnings
        self.tokenizer = tokenizer
        self.name = f"hf:{id_or_folder}"

    def count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def spans(self, text: str) -> list[tuple[int, int]] | None:
        """Each token's [start, end) characters in `text` (None: a slow tokenizer, which
        gives no offsets)."""
        try:
            encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        except NotImplementedError:
            return None
        return [(start, end) for start, end in encoded["offset_mapping"]]


class VocabTokenCounter:
    """A model family's real tokenizer from a vocabulary-only GGUF file (`models.vocabs`),
    counted by llama-cpp-python (no special tokens added)."""

    is_approximation = False

    def __init__(self, path: str | os.PathLike, name: str | None = None):
        try:
            from llama_cpp import Llama
        except ImportError:
            from models import ModelUnavailableError

            raise ModelUnavailableError(f"{path}: counting with a GGUF vocabulary needs "
                                        f"llama-cpp-python (pip install llama-cpp-python)"
                                        ) from None
        import contextlib
        import io

        # llama-cpp-python prints a context warning to sys.stderr even when not verbose
        # ("llama_context: n_ctx_seq (512) > n_ctx_train (0)"): a counter has no context
        with contextlib.redirect_stderr(io.StringIO()):
            self.vocab = Llama(model_path=os.fspath(path), vocab_only=True, verbose=False)
        self._vocab_pointer = None
        self.name = name or f"gguf:{os.path.basename(os.fspath(path))}"

    def count(self, text: str) -> int:
        return len(self.vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def spans(self, text: str) -> list[tuple[int, int]] | None:
        """Each token's [start, end) characters in `text`, from the bytes of its piece (a piece
        holding part of a character spans that whole character, as the Hugging Face
        tokenizers' offsets do); None when the pieces do not spell `text` back."""
        data = text.encode("utf-8")
        ids = self.vocab.tokenize(data, add_bos=False, special=False)
        pieces = [self._piece(token) for token in ids]
        joined = b"".join(pieces)
        shift = 0
        if joined != data:  # SentencePiece (Llama) writes a space before the text
            if joined != b" " + data:
                return None
            shift = 1
        char_at = []  # the character each byte belongs to
        for index, ch in enumerate(text):
            char_at.extend([index] * len(ch.encode("utf-8")))
        spans, at = [], -shift
        for piece in pieces:
            start, end = max(at, 0), at + len(piece)
            at = end
            if end <= start:
                spans.append((len(text) if start >= len(data) else char_at[start],) * 2)
                continue
            spans.append((char_at[start], char_at[end - 1] + 1))
        return spans

    def _piece(self, token: int) -> bytes:
        """A token's bytes (`Llama.detokenize` cuts pieces longer than 32 bytes, such as a run
        of 32 `#`, to nothing)."""
        import ctypes

        import llama_cpp

        if self._vocab_pointer is None:
            self._vocab_pointer = llama_cpp.llama_model_get_vocab(self.vocab.model)
        size = 64
        while True:
            buffer = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_token_to_piece(self._vocab_pointer, token, buffer, size, 0, False)
            if n >= 0:
                return buffer.raw[:n]
            size = -n  # too small: n is minus the size needed


def local_counter(model_id: str) -> TokenCounter | None:
    """The model's tokenizer from what is on this machine, without weights or network: a
    `.gguf` vocabulary given as such, the tokenizer installed (a local folder, the Hugging Face
    cache, a built packaged model), else its family's packaged vocabulary; None when none is."""
    from models import ModelUnavailableError, family_vocab, installed_tokenizer

    if model_id.endswith(".gguf") and os.path.isfile(model_id):
        return VocabTokenCounter(model_id)
    installed = installed_tokenizer(model_id)
    if installed is not None:  # loaded from there: resolving the model would want its weights
        return HFTokenCounter(model_id, folder=installed)
    vocab = family_vocab(model_id)
    if vocab is not None:
        try:
            return VocabTokenCounter(vocab, name=f"gguf:{vocab.stem} (family of {model_id})")
        except ModelUnavailableError:
            pass  # llama-cpp-python is not installed
    return None


def counter_for(model_id: str) -> TokenCounter:
    """The best counter for a target model: `local_counter`, else its tokenizer from the hub or
    a packaged model; `ApproxTokenCounter` (a calibrated estimate, which reports say is one)
    when none of these is at hand."""
    from models import ModelUnavailableError

    local = local_counter(model_id)
    if local is not None:
        return local
    try:
        return HFTokenCounter(model_id)
    except ModelUnavailableError:
        return ApproxTokenCounter()


def make_counters(tokenizers: Sequence[str] | None) -> list[TokenCounter]:
    """Counters for the given model ids/folders/vocabularies (`counter_for`), or the
    approximation when none is given."""
    if not tokenizers:
        return [ApproxTokenCounter()]
    return list({c.name: c for c in map(counter_for, tokenizers)}.values())


def gives_spans(counter: TokenCounter | None) -> bool:
    """Does this counter give token offsets (`spans`), so a prime can be counted in its
    tokens? (A slow Hugging Face tokenizer, or a vocabulary whose pieces do not spell the
    text back, does not; neither does the estimate.)"""
    spans = getattr(counter, "spans", None)
    return spans is not None and spans("a b") is not None


def window_count(counter: TokenCounter, text: str) -> int:
    """A whole file's tokens for the context-window check (`ApproxTokenCounter.window_count` for
    the estimate, the real count for a real tokenizer)."""
    return counter.window_count(text) if hasattr(counter, "window_count") else counter.count(text)


def generation_budget(lengths: Sequence[int], sigmas: float = 3.0) -> int:
    """ceil(mean + sigmas * population std) of comment lengths in tokens; 0 for no comments."""
    if not lengths:
        return 0
    n = len(lengths)
    mean = sum(lengths) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in lengths) / n)
    return math.ceil(mean + sigmas * std)
