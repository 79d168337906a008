"""FIM layouts per family, the prime, and cutting the predicted comment out of raw output."""
from __future__ import annotations

import json

import pytest

from corpus.cutting import cut_comment
from corpus.fim import (
    FimFamily,
    UnknownFamilyError,
    build_fim_prompt,
    families,
    family_for_model,
    get_family,
    load_families_file,
    prime_end,
)
from corpus.tokens import HFTokenCounter, VocabTokenCounter

CODE = "int f() {\n    /** Berekent de som van {a} en b. */\n    return a + b;\n}\n"
START = CODE.index("/**")
END = CODE.index("*/") + 2


@pytest.mark.parametrize("family, expected", [
    ("starcoder2", "<fim_prefix>{P}<fim_suffix>{S}<fim_middle>"),
    ("codellama", "<PRE> {P} <SUF>{S} <MID>"),
    ("codegemma", "<|fim_prefix|>{P}<|fim_suffix|>{S}<|fim_middle|>"),
    ("codeqwen1.5", "<fim_prefix>{P}<fim_suffix>{S}<fim_middle>"),
    ("granite-code", "<fim_prefix>{P}<fim_suffix>{S}<fim_middle>"),
    ("qwen2.5-coder", "<|fim_prefix|>{P}<|fim_suffix|>{S}<|fim_middle|>"),
    ("plain", "{P}"),
])
def test_fim_layouts(family, expected):
    fim = build_fim_prompt(CODE, START, END, get_family(family), closer="*/")
    prefix = CODE[:START] + "/** Berekent de som"
    suffix = CODE[END:]
    assert fim.prime == "/** Berekent de som"
    assert fim.prefix == prefix and fim.suffix == suffix
    assert fim.prompt == expected.replace("{P}", prefix).replace("{S}", suffix)
    assert "{a}" not in fim.prompt or family != "plain"  # braces in code survive rendering


@pytest.mark.parametrize("family, stops", [
    ("starcoder2", {"<|endoftext|>", "<file_sep>"}),
    ("codellama", {"<EOT>", "</s>"}),
    ("codegemma", {"<|file_separator|>", "<eos>"}),
    ("codeqwen1.5", {"<|endoftext|>"}),
    ("granite-code", {"<|endoftext|>"}),
])
def test_stop_sentinels(family, stops):
    assert stops <= set(get_family(family).stops)


@pytest.mark.parametrize("model, family", [
    ("bigcode/starcoder2-7b", "starcoder2"),
    ("codellama/CodeLlama-7b-hf", "codellama"),
    ("meta-llama/CodeLlama-7b-hf", "codellama"),
    ("google/codegemma-7b", "codegemma"),
    ("Qwen/CodeQwen1.5-7B", "codeqwen1.5"),
    ("ibm-granite/granite-8b-code-base-4k", "granite-code"),
    ("Qwen/Qwen2.5-Coder-7B", "qwen2.5-coder"),
    ("HuggingFaceTB/SmolLM2-135M-Instruct", "plain"),
    ("/models/starcoder2-3b", "starcoder2"),
])
def test_family_for_model(model, family):
    assert family_for_model(model).name == family


def test_unknown_model_and_family_are_clear():
    with pytest.raises(UnknownFamilyError, match="--family"):
        family_for_model("acme/mystery-7b")
    with pytest.raises(UnknownFamilyError, match="known:"):
        get_family("nope")
    with pytest.raises(ValueError, match="suffix"):
        FimFamily("bad", "<p>{prefix}<m>")


def test_user_family_from_json(tmp_path):
    path = tmp_path / "families.json"
    path.write_text(json.dumps([{"name": "deepseek-coder-test",
                                 "template": "<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}"
                                             "<｜fim▁end｜>",
                                 "stops": ["<｜end▁of▁sentence｜>"],
                                 "patterns": ["deepseek-coder"]}]), encoding="utf-8")
    (family,) = load_families_file(path)
    assert family_for_model("deepseek-ai/deepseek-coder-6.7b-base") is family
    assert family.render("A", "B") == "<｜fim▁begin｜>A<｜fim▁hole｜>B<｜fim▁end｜>"
    assert "deepseek-coder-test" in families()
    broken = tmp_path / "broken.json"
    broken.write_text('[{"template": "{prefix}"}]', encoding="utf-8")
    with pytest.raises(ValueError, match="family #0"):
        load_families_file(broken)


@pytest.mark.parametrize("comment, closer, prime", [
    ("// Berekent de som van twee getallen", "", "// Berekent de som"),
    ("/**\n     * Berekent de som van a */", "*/", "/**\n     * Berekent de som"),
    ('"""Leest het bestand in."""', '"""', '"""Leest het bestand'),
    ("# 计算两个整数的和", "", "# 计算两"),
    ("// Een\n// twee drie vier", "", "// Een\n// twee drie"),
    ("/* Te kort */", "*/", "/* Te kort "),
    ("// @param waarde de invoer", "", "// @param waarde de"),
])
def test_prime_is_the_first_three_words(comment, closer, prime):
    assert comment[:prime_end(comment, closer=closer)] == prime


def test_prime_in_model_tokens(smollm2):
    _, tokenizer = smollm2
    counter = HFTokenCounter("HuggingFaceTB/SmolLM2-135M-Instruct", tokenizer=tokenizer)
    comment = "// Berekent de som van twee getallen"
    end = prime_end(comment, 3, tokenizer=counter)
    assert comment.startswith(comment[:end]) and end < len(comment)
    offsets = tokenizer(comment[:end], add_special_tokens=False,
                        return_offsets_mapping=True)["offset_mapping"]
    assert sum(any(ch.isalnum() for ch in comment[a:b]) for a, b in offsets) == 3


@pytest.mark.parametrize("comment, closer, middle", [
    ("// πλήθος αλόγων", "", False),  # two words: a 3-word prime is the whole comment
    ("// συναρτήσεις μέλη.", "", False),  # what is left holds no word
    ("/* Te kort */", "*/", False),
    ("// 计算两个整数的和", "", True),  # each CJK character is a word
    ("// αύξουσα ταξινόμηση του πίνακα", "", True),
])
def test_a_prime_by_words_must_leave_a_word_to_generate(comment, closer, middle):
    content = "int x;\n" + comment + "\nint y;\n"
    fim = build_fim_prompt(content, 7, 7 + len(comment), get_family("starcoder2"), closer=closer)
    assert fim.leaves_middle is middle
    assert comment.startswith(fim.prime) and fim.prefix == content[:7] + fim.prime


def _vocab(vocabs, name):
    return VocabTokenCounter(next(p for p in vocabs if p.name == f"ggml-vocab-{name}.gguf"))


@pytest.mark.parametrize("vocab, comment, closer, prime, middle", [
    # Gemma cuts Greek words in pieces: its 3rd token ends inside the 2nd word
    ("gemma-4", "// πλήθος αλόγων", "", "// πλήθος α", False),
    ("starcoder", "// πλήθος αλόγων", "", "// πλή", True),  # one token per Greek letter
    ("gemma-4", "// 计算两个整数的和", "", "// 计算两个整数", True),
    # SentencePiece writes a space before the text; the marker token is not counted
    ("llama-spm", "/** Berekent de som van a */", "*/", "/** Berekent", True),
    ("llama-spm", "// Geeft terug", "", "// Geeft terug", False),
])
def test_prime_in_the_models_own_tokens(vocabs, vocab, comment, closer, prime, middle):
    counter = _vocab(vocabs, vocab)
    content = "int x;\n" + comment + "\n"
    fim = build_fim_prompt(content, 7, 7 + len(comment), get_family("codegemma"), closer=closer,
                           tokenizer=counter)
    assert fim.prime == prime and fim.leaves_middle is middle


@pytest.mark.parametrize("vocab", ["gemma-4", "starcoder", "llama-spm", "qwen2"])
def test_vocabulary_token_spans_cover_the_text_in_order(vocabs, vocab):
    counter = _vocab(vocabs, vocab)
    for text in ["// " + "#" * 44 + "\n// global functions",  # a piece over 32 bytes
                 "  // 计算两个整数的和", "/** Ελληνικά é 😀 naïve */"]:
        spans = counter.spans(text)
        assert spans is not None and len(spans) == counter.count(text)
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        for (start, end), (next_start, next_end) in zip(spans, spans[1:]):
            # in order, no gap; a character split into bytes is spanned by each of its pieces
            assert start <= next_start <= end <= next_end


def test_a_token_prime_is_read_back_by_the_release_import(vocabs):
    """db's release import finds a target from its FIM input's prefix (the file up to the
    comment plus the prime): a prime cut inside a word still pins the right occurrence."""
    from db.formats.spans import locate_comment

    comment = "// αύξουσα ταξινόμηση του πίνακα"
    content = f"void a() {{\n    {comment}\n}}\nvoid b() {{\n    {comment}\n}}\n"
    second = content.rindex(comment)
    counter = _vocab(vocabs, "gemma-4")
    fim = build_fim_prompt(content, second, second + len(comment), get_family("codegemma"),
                           tokenizer=counter)
    assert not fim.prime.endswith(("αύξουσα", "ταξινόμηση"))  # cut inside a word
    assert locate_comment(content, comment, [fim.prompt]) == (second, second + len(comment))


CUTS = [
    # (kind, prime, raw, stops, expected comment, reason)
    ("docblock", "/** Berekent de som", " van a en b.\n */\n    return a + b;", (),
     "/** Berekent de som van a en b.\n */", "closed"),
    ("block", "/* Berekent de som", " van a */ int x; /* ander */", (),
     "/* Berekent de som van a */", "closed"),
    ("docstring", '"""Leest het bestand', ' in."""\n    return 1\n', (),
     '"""Leest het bestand in."""', "closed"),
    ("docstring", '"""Leest het bestand', ' in.\n\n    Args:\n        pad: het pad."""\n', (),
     '"""Leest het bestand in.\n\n    Args:\n        pad: het pad."""', "closed"),
    ("line", "// Berekent de som", " van a en b.\n    return a + b;\n", (),
     "// Berekent de som van a en b.", "code_resumed"),
    ("line", "// Berekent de som", " van a\n    // en b.\n\n// los\n", (),
     "// Berekent de som van a\n    // en b.", "code_resumed"),
    ("line", "# Leest het", " bestand in<|endoftext|># meer", ("<|endoftext|>",),
     "# Leest het bestand in", "sentinel"),
    ("line", "// Som", " van a\r\n// en b\r\nint x;", (), "// Som van a\r\n// en b",
     "code_resumed"),
    ("docblock", "/** Berekent de som", " van a en b", (), "/** Berekent de som van a en b",
     "end_of_output"),
    ("docblock", "/** Berekent", " de som <EOT> */", ("<EOT>",), "/** Berekent de som",
     "sentinel"),
    ("block", "/* Berekent", " de som */<|file_separator|>", ("<|file_separator|>",),
     "/* Berekent de som */", "closed"),
    ("line", "// 计算两", "个整数的和 😀\n", (), "// 计算两个整数的和 😀", "end_of_output"),
    ("line", "// Berekent de som", "", (), "// Berekent de som", "end_of_output"),
]


@pytest.mark.parametrize("kind, prime, raw, stops, expected, reason", CUTS)
def test_cut_comment(kind, prime, raw, stops, expected, reason):
    from corpus.comments import comment_closer, comment_opener

    opener = comment_opener(prime, kind)
    closer = comment_closer(prime + '"""', kind) if kind == "docstring" else (
        "*/" if kind != "line" else "")
    result = cut_comment(raw, prime=prime, kind=kind, opener=opener, closer=closer, stops=stops)
    assert (result.comment, result.reason) == (expected, reason)


def test_docstring_opener_is_not_its_closer():
    result = cut_comment("a\n    b", prime='"""', kind="docstring", opener='"""', closer='"""')
    assert (result.comment, result.reason) == ('"""a\n    b', "end_of_output")
    result = cut_comment(' x"""', prime='"""Doc', kind="docstring", opener='"""', closer='"""')
    assert result.comment == '"""Doc x"""'


def test_plan_item_on_crlf_and_non_bmp_content():
    from corpus.generate import TargetRow, plan_item

    content = 's = "😀"\r\n# Berekent 𝔰𝔬𝔪 van\r\n# twee getallen\r\nx = 1\r\n'
    start = content.index("# Berekent")
    end = content.index("getallen") + len("getallen")
    item = plan_item(TargetRow(7, content, start, end, "line"), get_family("starcoder2"))
    assert item.fim.prime == "# Berekent 𝔰𝔬𝔪 van"
    assert item.fim.prompt == ("<fim_prefix>" + content[:start] + "# Berekent 𝔰𝔬𝔪 van"
                               + "<fim_suffix>\r\nx = 1\r\n<fim_middle>")
    assert (item.opener, item.closer) == ("#", "")
    cut = cut_comment("\r\n# twee getallen\r\nx = 1\r\n", prime=item.fim.prime, kind="line",
                      opener=item.opener, closer=item.closer, stops=get_family("starcoder2").stops)
    assert cut.comment == content[start:end]
