"""Issue 13: what real repositories lose. One small file per bug: encodings, Han text touching
identifiers, short CJK headers, code-switched comments, split `///` runs, `#if 0`, tag lines,
target order, exit codes and the per-comment report."""
from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from corpus.comments import extract_comments
from corpus.encoding import SourceReadError, decode_source
from corpus.extract import main as extract_main
from corpus.extract import run_extract
from corpus.langid import clean_for_langid, judge_language
from corpus.select import SelectionConfig, SourceText, select_targets
from testing.cli import as_command

CHINESE_JAVA = """package com.voorbeeld.common;

/**
 * 缓存操作工具类
 *
 * @author ruoyi
 */
public class CacheUtils {
    public static Object get(String key) {
        // 获取SYS_CACHE缓存中的对象，如果不存在就从数据库重新加载并放入缓存
        return null;
    }
}
"""


@pytest.mark.parametrize("encoding", ["gbk", "gb18030", "big5", "utf-16", "utf-16-le"])
def test_legacy_and_utf16_files_round_trip_with_exact_spans(tmp_path, db_url, encoding):
    text = CHINESE_JAVA if encoding != "big5" else CHINESE_JAVA.replace("缓存", "快取") \
        .replace("获取", "取得").replace("对象", "物件").replace("数据库", "資料庫") \
        .replace("重新加载并放入", "重新載入並放入").replace("操作工具类", "操作工具類") \
        .replace("如果不存在就从", "如果不存在就從")
    raw = text.encode(encoding)
    (tmp_path / "CacheUtils.java").write_bytes(raw)
    result = run_extract([tmp_path], natural_language="zh", dataset="zh", db_url=db_url,
                         console=False)
    assert result.written_files == 1 and not result.report.problems

    from db import get_engine
    from db.models import SourceFile, Target

    with Session(get_engine(db_url)) as session:
        stored = session.exec(select(SourceFile)).one()
        assert stored.content == text  # Unicode, not bytes in disguise
        assert stored.content.encode(stored.source_encoding) == raw
        target = session.exec(select(Target)).one()
        assert stored.content[target.span_start:target.span_end] == target.original_comment
        assert "SYS_CACHE" in target.original_comment  # the body comment, not the header


def test_latin1_dutch_file_is_decoded_with_the_language_hint():
    text = "// Geeft het café terug, één keer per aanvraag\nint x;\n"
    decoded, encoding, _ = decode_source(text.encode("latin-1"), "nl")
    assert decoded == text and encoding == "cp1252"
    greek = "// Αρχικοποίηση του πίνακα με μηδενικά\nint x;\n"
    assert decode_source(greek.encode("cp1253"), "el") == (greek, "cp1253", 0)


def test_binary_and_unknown_encoding_are_clear():
    with pytest.raises(SourceReadError, match="binary"):
        decode_source(b"\x7fELF\x00\x01\x02\x00\x00\x00\x05", "nl")
    with pytest.raises(ValueError, match="unknown encoding 'nope'"):
        decode_source(b"x", "nl", "nope")
    assert decode_source("één".encode("cp1252"), "nl", "cp1252") == ("één", "cp1252", 0)


def test_han_text_touching_an_identifier_is_kept(detector):
    comment = "// 获取SYS_CACHE缓存"
    assert clean_for_langid(comment) == "获取 缓存"
    verdict = judge_language(comment, "zh", detector)
    assert verdict.status == "match" and verdict.rule == "script"


@pytest.mark.parametrize("comment", ["/** Shiro通用常量 @author ruoyi */", "/** sql操作工具类 */",
                                     "// 用户ID列表"])
def test_short_cjk_headers_are_chinese_by_script(detector, comment):
    verdict = judge_language(comment, "zh", detector)
    assert (verdict.status, verdict.detected, verdict.rule) == ("match", "zh", "script")


def test_greek_with_english_terms_is_greek(detector):
    verdict = judge_language("// αρχικοποίηση του static member της κλάσης MyClass", "el",
                             detector)
    assert (verdict.status, verdict.detected) == ("match", "el")


# Issue 41: names in a comment are not its language (RuoYi's jQuery validation messages_zh.js)
NAMES_IN_ENGLISH = ("/*\n * Translated default messages for the jQuery validation plugin.\n"
                    " * Locale: ZH (Chinese, 中文 (Zhōngwén), 汉语, 漢語)\n */")


def test_an_english_comment_naming_chinese_is_not_chinese(detector):
    verdict = judge_language(NAMES_IN_ENGLISH, "zh", detector)
    assert verdict.status == "mismatch" and verdict.rule != "script"


@pytest.mark.parametrize("comment", [
    "// 导出文件类型 （json、xml、png、csv、txt、sql、doc、excel、xlsx、powerpoint、pdf）",
    "/**\n * 记录访问日志 [username][jsessionid][ip][accept][UserAgent][url][params][Referer]\n */",
])
def test_chinese_listing_english_names_stays_chinese(detector, comment):
    verdict = judge_language(comment, "zh", detector)
    assert (verdict.status, verdict.detected, verdict.rule) == ("match", "zh", "script")


def test_code_switched_dutch_and_polish_count_for_their_language(detector):
    dutch = judge_language("/// Constructor voor dependency injection", "nl", detector)
    assert (dutch.status, dutch.rule) == ("match", "code_switched")
    polish = judge_language("// Handler dla eventów z message queue", "pl", detector)
    assert polish.status == "match"
    english = judge_language("// Opens the file and returns all lines of it", "nl", detector)
    assert english.status == "mismatch" and english.detected == "en"


DUTCH_CS = """namespace Winkel
{
    public class KlantService
    {
        /// <summary>
        /// Constructor voor dependency injection van de repository en de logger
        /// </summary>
        public KlantService() { }

        // Loads every customer from the database and caches the result here
        public void Laad() { }

        public void Bewaar()
        {
            // Controleert eerst of de klant al bestaat voordat we hem opslaan
            Opslaan();
        }
    }
}
"""


def test_one_english_comment_does_not_drop_a_dutch_file_and_each_comment_says_why(detector):
    selected, report = select_targets([SourceText("KlantService.cs", DUTCH_CS, "csharp")], "nl",
                                      SelectionConfig(), detector=detector)
    assert report.removed["mixed_language"] == 0 and len(selected) == 1
    by_line = {d["line"]: d for d in report.decisions}
    assert by_line[10]["decision"] == "dropped" and by_line[10]["reason"] == "language_mismatch"
    assert by_line[10]["language"].startswith("en")
    # the explanatory body comment is the target, the member doc passes but is not chosen
    assert by_line[15]["decision"] == "target"
    assert by_line[5]["decision"] == "passed" and by_line[5]["reason"] == "not_chosen"
    assert selected[0].targets[0].line == 15


def test_a_mostly_english_file_is_still_mixed(detector):
    source = DUTCH_CS.replace("// Controleert eerst of de klant al bestaat voordat we hem "
                              "opslaan", "// Checks first whether the customer already exists "
                                         "before saving")
    source = source.replace("Constructor voor dependency injection van de repository en de "
                            "logger", "Constructor for dependency injection of the repository")
    _, report = select_targets([SourceText("K.cs", source, "csharp")], "nl", SelectionConfig(),
                               detector=detector)
    assert report.removed["mixed_language"] == 1


def test_doc_runs_with_mixed_tabs_and_markers_stay_one_comment():
    source = ("\t/// <summary>\n"
              "    ///<summary>Haalt de klant op uit de database.</summary>\n"
              "\t/// <param name=\"id\">het nummer</param>\n"
              "void F() {}\n")
    found = extract_comments(source, "csharp")
    assert len(found) == 1 and found[0].text.endswith("</param>")


def test_trailing_comment_continues_on_the_next_lines_at_its_column():
    source = ("x = 1;   // de eerste helft van de uitleg\n"
              "         // en de tweede helft\n"
              "y = 2;   // los\n"
              "z = 3;   // ook los\n")
    found = [c.text for c in extract_comments(source, "c")]
    assert found == ["// de eerste helft van de uitleg\n         // en de tweede helft",
                     "// los", "// ook los"]


def test_disabled_preprocessor_regions_are_not_comments():
    source = ("#if 0\n"
              "  // oude code die niet meer gebruikt wordt\n"
              "  #if DEBUG\n  /* genest */\n  #endif\n"
              "  int oud = 1; /* weg */\n"
              "#else\n"
              "  // actieve uitleg over de nieuwe code\n"
              "#endif\n"
              "#if false\n// alleen in C# uit\n#endif\n")
    assert [c.text for c in extract_comments(source, "cpp")] == [
        "// actieve uitleg over de nieuwe code", "// alleen in C# uit"]
    csharp = "#if false\n// uitgeschakeld\n#else\n// actief\n#endif\n"
    assert [c.text for c in extract_comments(csharp, "csharp")] == ["// actief"]


def test_tag_lines_do_not_count_towards_the_token_floor(detector):
    source = "/**\n * 工具类\n *\n * @author ruoyi\n * @date 2023-01-01 12:00:00\n */\nclass A {}\n"
    _, report = select_targets([SourceText("A.java", source, "java")], "zh", SelectionConfig(),
                               detector=detector)
    assert report.removed["too_short"] == 1 and report.targets_out == 0


def test_exit_codes_missing_path_empty_folder_nothing_kept(tmp_path, db_url, capsys):
    base = ["--lang", "nl", "--dataset", "x", "--db", db_url]
    extract = as_command(extract_main, "python -m corpus.extract")
    assert extract([str(tmp_path / "bestaat-niet")] + base) == 2
    assert "bestaat-niet: no such file or folder" in capsys.readouterr().err
    (tmp_path / "leeg").mkdir()
    assert extract([str(tmp_path / "leeg")] + base) == 2
    assert "no source files under" in capsys.readouterr().err
    (tmp_path / "kort").mkdir()
    (tmp_path / "kort" / "a.py").write_text("# kort\nx = 1\n", encoding="utf-8")
    report = tmp_path / "r.json"
    assert extract([str(tmp_path / "kort"), "--report-json", str(report), "--explain"]
                   + base) == 1
    captured = capsys.readouterr()
    assert "nothing kept" in captured.err and "too_short" in captured.out
    comments = json.loads(report.read_text(encoding="utf-8"))["comments"]
    assert comments == [{"file": str(tmp_path / "kort" / "a.py"), "line": 1, "kind": "line",
                         "decision": "dropped", "reason": "too_short", "language": "",
                         "detail": "", "excerpt": "# kort"}]


@pytest.mark.parametrize("body, code", [
    ("std::cout << a << std::endl; // δεν επιτρέπεται η πρόσβαση\nstd::cout << b;", True),
    ("class stapel {\npublic:\n    bord* huidige;\n    stapel* vorige;\n};", True),
    ("for (int i = 0; i < n; i++) {", True),
    ("γιατί δεν λειτουργεί;", False),  # the Greek question mark is a semicolon
    ("Berekent de som (van a en b);", False),
    ("Struktury grupują zmienne pod jedną nazwą.\nPrzykładowo, dla osoby:\nint wiek = 20;\n"
     "float wzrost = 1.82;\nKorzystanie z takich danych bywa niewygodne.", False),
])
def test_commented_out_code(body, code):
    from corpus.filters import is_commented_code

    assert is_commented_code(body) is code


def test_greek_to_do_note_in_capitals_is_a_todo():
    from corpus.filters import is_todo

    assert is_todo("ΝΑ ΔΙΑΦΡΑΦΕΙ Η ΠΡΟΗΓΟΥΜΕΝΗ ΓΡΑΜΜΗ ΚΑΙ ΝΑ ΣΥΜΠΛΗΡΩΘΕΙ Ο ΚΩΔΙΚΑΣ")


def test_target_order_skips_file_and_class_headers(detector):
    source = ("    // Infoblok: opgave 1, gemaakt door Jan en Piet voor het vak programmeren\n"
              "#include <stdio.h>\n"
              "/** De klasse bord houdt de stand van het spel bij voor beide spelers */\n"
              "struct bord {\n"
              "    /** Geeft aan welke speler op dit moment aan de beurt is in het spel */\n"
              "    int speler;\n"
              "};\n"
              "int main() {\n"
              "    return 0; // Geeft nul terug zodat de shell weet dat alles goed ging\n"
              "}\n")
    selected, report = select_targets([SourceText("b.c", source, "c")], "nl",
                                      SelectionConfig(targets_per_file=0), detector=detector)
    from corpus.select import target_order

    ordered = target_order(selected[0].targets, source, selected[0].targets)
    assert [c.line for c in ordered] == [9, 5, 1, 3]


# Issue 41: a file's informative comment is its target (chgogos/oop shapes)
LABELS_AND_EXPLANATION = """class Fraction {
    // συναρτήσεις μέλη
    void set(int n);
    int get() {
        // επιστρέφει τον αριθμητή του κλάσματος χωρίς να το αλλάξει
        return n;
    }
};
"""

TRANSCRIPT = """#include <iostream>
#include <string>

int main()
{
    std::wcout << L"ΠΩΣ ΣΕ ΛΕΝΕ; ";
    std::wstring str;
    std::wcin >> str;
    std::wcout << L"ΓΕΙΑ ΣΟΥ " << str << "\\n";
    return 0;
}

/*
ΠΩΣ ΣΕ ΛΕΝΕ; ΣΩΚΡΑΤΗΣ
ΓΕΙΑ ΣΟΥ ΣΩΚΡΑΤΗΣ
*/
"""

OUTPUT_AND_HEADER = """// εύρεση του αθροίσματος των στοιχείων ενός πίνακα ακεραίων

int main()
{
    int a[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    int sum = 0;
    for (int i = 0; i < 10; i++) sum += a[i];
    std::cout << sum << std::endl;
}

/*
55
το άθροισμα των δέκα πρώτων ακεραίων είναι πάντα 55
*/
"""


def test_an_explanation_is_chosen_ahead_of_a_label(detector):
    """`// συναρτήσεις μέλη` (member functions) names a section; the target is the comment that
    explains (both pass: no prime check here)."""
    config = SelectionConfig(prime_covers=False, min_tokens=1)
    selected, report = select_targets([SourceText("frac.cpp", LABELS_AND_EXPLANATION, "cpp")],
                                      "el", config, detector=detector)
    assert [t.line for t in selected[0].targets] == [5]
    by_line = {d["line"]: d for d in report.decisions}
    assert (by_line[2]["decision"], by_line[2]["reason"]) == ("passed", "not_chosen")


def test_a_console_transcript_is_no_target(detector):
    selected, report = select_targets([SourceText("greek5.cpp", TRANSCRIPT, "cpp")], "el",
                                      SelectionConfig(), detector=detector)
    assert selected == [] and report.removed["program_output"] == 1
    (decision,) = [d for d in report.decisions if d["kind"] == "block"]
    assert decision["reason"] == "program_output"
    kept, _ = select_targets([SourceText("greek5.cpp", TRANSCRIPT, "cpp")], "el",
                             SelectionConfig(program_output=False), detector=detector)
    assert kept and kept[0].targets[0].line == 13  # what was chosen before


def test_the_header_is_chosen_ahead_of_a_postscript_after_the_code(detector):
    """A comment after the last line of code (the program's output and a note on it) explains
    no code; the file's explanation at the top is the target."""
    selected, report = select_targets([SourceText("dbg2.cpp", OUTPUT_AND_HEADER, "cpp")], "el",
                                      SelectionConfig(), detector=detector)
    assert [t.line for t in selected[0].targets] == [1]
    assert {d["line"]: d["reason"] for d in report.decisions}[11] == "not_chosen"
