"""Comment extraction: real lexers, exact spans, tricky files in every supported language."""
from __future__ import annotations

import pytest

from corpus.comments import (
    UnknownLanguageError,
    comment_body,
    comment_closer,
    comment_opener,
    extract_comments,
)
from corpus.languages import PROGRAMMING_LANGUAGES, language_for_path


def texts(source: str, language: str) -> list[tuple[str, str]]:
    found = extract_comments(source, language)
    for c in found:
        assert source[c.start:c.end] == c.text  # spans always round-trip
    return [(c.kind, c.text) for c in found]


def test_python_docstrings_markers_in_strings_and_runs():
    source = (
        "#!/usr/bin/env python\n"
        '"""Module: het begin."""\n'
        "import os\n"
        'URL = "http://x.nl/#anker"  # trailing\n'
        "# eerste regel\n"
        "# tweede regel\n"
        "\n"
        "# los\n"
        "class Lijst(Base[int], metaclass=Meta):\n"
        "    '''Klasse doc.'''\n"
        "    def f(self, d={'a': 1}, g=lambda x: x) -> Dict[str, int]:\n"
        '        r"""Functie doc met \\n escape."""\n'
        '        s = """geen docstring"""\n'
        '        t = "# ook geen commentaar"\n'
        "        return s\n"
        "    async def g(self): 'één regel doc'\n"
    )
    assert texts(source, "python") == [
        ("docstring", '"""Module: het begin."""'),
        ("line", "# trailing"),
        ("line", "# eerste regel\n# tweede regel"),
        ("line", "# los"),
        ("docstring", "'''Klasse doc.'''"),
        ("docstring", 'r"""Functie doc met \\n escape."""'),
        ("docstring", "'één regel doc'"),
    ]


def test_python_string_after_code_is_not_a_docstring():
    source = 'def f():\n    x = 1\n    """not a docstring"""\n'
    assert texts(source, "python") == []
    assert texts('x = 1\n"""late"""\n', "python") == []


def test_java_javadoc_block_and_strings():
    source = (
        "package nl.voorbeeld;\n"
        "/**\n * Javadoc van de klasse.\n * @author Jan\n */\n"
        "public class A {\n"
        '    String s = "// geen /* ook geen */";\n'
        "    char c = '\"'; // na een char\n"
        "    /* blok */ int x;\n"
        "    /**/ int y;\n"
        "}\n"
    )
    assert texts(source, "java") == [
        ("docblock", "/**\n * Javadoc van de klasse.\n * @author Jan\n */"),
        ("line", "// na een char"),
        ("block", "/* blok */"),
        ("block", "/**/"),
    ]


def test_javascript_regex_template_literal_and_jsdoc():
    source = (
        "const re = /\\/\\/ geen commentaar/g; // echt\n"
        "const t = `/* ook geen ${a /* wel? */} */`;\n"
        "/** JSDoc\n * @param {number} a */\n"
        "function f(a) { return '//'; }\n"
    )
    found = texts(source, "javascript")
    assert ("line", "// echt") in found
    assert ("docblock", "/** JSDoc\n * @param {number} a */") in found
    assert all("geen" not in text for _, text in found)


def test_typescript():
    source = 'const s: string = "// nee";\n// ja\n// ook ja\nlet x = 1; /* blok */\n'
    assert texts(source, "typescript") == [("line", "// ja\n// ook ja"), ("block", "/* blok */")]


def test_c_preprocessor_is_not_a_comment_and_line_runs_need_same_column():
    source = (
        "#include <stdio.h>\n"
        "#define PAD \"// nee\"\n"
        "  // a\n"
        "  // b\n"
        "      // c (andere kolom)\n"
        "int x; /* blok\n   over regels */\n"
    )
    assert texts(source, "c") == [
        ("line", "// a\n  // b"),
        ("line", "// c (andere kolom)"),
        ("block", "/* blok\n   over regels */"),
    ]


def test_cpp_raw_string():
    source = 'auto s = R"(// nee /* nee */)"; // ja\n'
    assert texts(source, "cpp") == [("line", "// ja")]


def test_csharp_verbatim_string_and_xml_doc():
    source = ('var s = @"C:\\pad\\// nee";\n'
              "/// <summary>Doc van de methode.</summary>\n"
              "/// <returns>niets</returns>\n"
              "void F() {}\n")
    assert texts(source, "csharp") == [
        ("line", "/// <summary>Doc van de methode.</summary>\n/// <returns>niets</returns>")]


def test_go_raw_string():
    source = "s := `// nee\n/* nee */`\n// Som telt op.\nfunc Som() {}\n"
    assert texts(source, "go") == [("line", "// Som telt op.")]


def test_php_hash_slash_and_phpdoc_outside_html():
    source = ('<html><!-- html commentaar --></html>\n<?php\n'
              '$s = "# nee // nee";\n# hekje\n// slash\n/** PHPDoc blok */\nfunction f() {}\n?>\n')
    assert texts(source, "php") == [
        ("line", "# hekje"), ("line", "// slash"), ("docblock", "/** PHPDoc blok */")]


def test_crlf_spans_round_trip_and_keep_crlf_inside():
    source = "int a;\r\n// een\r\n// twee\r\n/* blok\r\n   regel */\r\nint b; // staart\r\n"
    found = extract_comments(source, "c")
    assert [c.text for c in found] == ["// een\r\n// twee", "/* blok\r\n   regel */",
                                       "// staart"]
    assert [c.line for c in found] == [2, 4, 6]
    for c in found:
        assert source[c.start:c.end] == c.text
        assert not c.text.endswith("\r")


def test_crlf_python_docstring():
    source = 'def f():\r\n    """Doc\r\n    regel."""\r\n    return 1\r\n'
    (c,) = extract_comments(source, "python")
    assert c.kind == "docstring" and c.text == '"""Doc\r\n    regel."""'


def test_non_bmp_characters_count_as_one_offset():
    source = 's = "😀😀"  # emoji 🐍 in commentaar\n# 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 tekst\n'
    found = extract_comments(source, "python")
    assert [c.text for c in found] == ["# emoji 🐍 in commentaar", "# 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 tekst"]
    assert found[0].start == source.index("#")  # a str index, not a UTF-16 or byte offset


@pytest.mark.parametrize("language", sorted(PROGRAMMING_LANGUAGES))
def test_every_language_lexes_a_line_comment(language):
    marker = "#" if language == "python" else "//"
    prefix = "<?php\n" if language == "php" else ""
    source = f"{prefix}{marker} hallo wereld\n"
    (c,) = extract_comments(source, language)
    assert c.text == f"{marker} hallo wereld"


def test_unknown_language_is_a_clear_error():
    with pytest.raises(UnknownLanguageError, match="cobol"):
        extract_comments("* hallo", "cobol")
    assert language_for_path("x.cbl") is None
    assert language_for_path("a/B.JAVA") == "java"


def test_markers_and_bodies():
    assert comment_opener('r"""x"""', "docstring") == 'r"""'
    assert comment_closer('r"""x"""', "docstring") == '"""'
    assert comment_opener("/** x */", "docblock") == "/**"
    assert comment_opener("/// x", "line") == "///"
    assert comment_body("/**\n * Een zin.\n * Twee.\n */", "docblock") == "Een zin.\nTwee."
    assert comment_body("// een\n  // twee", "line") == "een\ntwee"
    assert comment_body("'''Doc.'''", "docstring") == "Doc."


def test_c_directive_with_continuation_lines():
    source = ('#define M(a) \\\n    g(a, "// nee") // in macro\n'
              "int x; // na macro\n#if 0 /* blok in if */\n#endif\n")
    assert texts(source, "c") == [("line", "// in macro"), ("line", "// na macro"),
                                  ("block", "/* blok in if */")]


@pytest.mark.parametrize("language", ["c", "cpp", "java", "go", "csharp", "javascript"])
def test_line_comment_at_end_of_file_without_newline(language):
    source = "int x = 1; // laatste regel"
    (c,) = extract_comments(source, language)
    assert c.text == "// laatste regel" and c.end == len(source)


def test_rust_doc_comments_and_split_block_tokens():
    source = ('/// Doc van de functie\n/// tweede regel\nfn main() {\n'
              '    let s = "// nee"; /* blok\n  over twee */\n}\n')
    assert texts(source, "rust") == [("line", "/// Doc van de functie\n/// tweede regel"),
                                     ("block", "/* blok\n  over twee */")]
