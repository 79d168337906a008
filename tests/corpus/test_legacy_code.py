"""Issue 26.7: the corpus on legacy code. Visual Studio / MFC wizard and designer boilerplate and
generated files are not targets (file-wide for generated files), a GBK or GB18030 file is read in
the target language's codec when that codec reads it, each file's encoding is reported, and one
Greek word among three makes a comment Greek, as docs/corpus.md says. Every file here is written
for this test."""
from __future__ import annotations

import json

import pytest

from corpus.encoding import SourceReadError, decode_source
from corpus.extract import main as extract_main
from corpus.extract import run_extract
from corpus.langid import judge_language
from corpus.select import SelectionConfig, SourceText, select_targets

CODE = "int main(void)\n{\n    int total = 0;\n    for (int i = 0; i < 10; i++) total += i;\n" \
       "    return total;\n}\n"


def _select(files: dict[str, str], lang: str, detector, language="cpp"):
    sources = [SourceText(key=path, text=text, programming_language=language, path=path)
               for path, text in files.items()]
    return select_targets(sources, lang, SelectionConfig(min_tokens=3), detector=detector)


# ---------------------------------------------------------------------------------- encodings

@pytest.mark.parametrize("comment", ["// 错误 按钮", "// 消息 错误", "// 错误 缓存"])
def test_a_gbk_file_with_few_chinese_words_is_read_as_gbk(comment):
    """These were read as Windows-1250, -1253 and EUC-KR: mojibake, then judged another
    language."""
    text = comment + "\n" + CODE
    assert decode_source(text.encode("gbk"), "zh") == (text, "gb18030", 0)


def test_a_gb18030_file_beyond_gbk_is_read():
    """Pinyin with tone marks (Ḿ is outside GBK: four bytes in GB18030) was refused as
    "encoding not recognised"."""
    text = "// 拼音声调表: Ḿ ḿ ǹ ǘ ǚ ǜ ɑ ɡ\n" + CODE
    raw = text.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("gbk")
    assert decode_source(raw, "zh") == (text, "gb18030", 0)


@pytest.mark.parametrize("text, codec, lang", [
    ("// Microsoft Visual C++ fügt zusätzliche Deklarationen unmittelbar ein\n", "cp1252", "zh"),
    ("// Thanks to Pål K. Tønder for the user´s code\n", "cp1252", "zh"),
    ("// 取得快取中的物件，如果不存在就從資料庫重新載入\n", "big5", "zh"),
    ("// Zażółć gęślą jaźń: liczy średnią\n", "iso8859_2", "pl"),
    ("// Le café était très bon, à bientôt\n", "cp1252", "el"),
])
def test_a_file_in_another_codepage_is_not_forced_into_the_languages_codec(text, codec, lang):
    """German and Norwegian Latin-1 decode strictly as GB18030 too, Big5 as GBK, ISO 8859-2 as
    Windows-1250, French Latin-1 as Windows-1253: the letters they give do not read as the
    language, so the detector decides as before."""
    assert decode_source((text + CODE).encode(codec), lang) == (text + CODE, codec, 0)


# a GBK file with two multi-byte characters cut in half (their last byte lost), as in a public
# Chinese C library's samples (issue 34.10); written for this test
BROKEN_GBK_LINES = ["#include <stdio.h>", "", "int main(void)", "{",
                    "    // 初始化网络库，失败时立即退出程序并打印错误信息",
                    "    if (net_init() != 0) return 1;",
                    "    // 创建工作线程", "    start_workers(4);",
                    "    // 等待所有工作线程结束以后再释放它们的资源", "    wait_workers();",
                    "    // 关闭网络库", "    return 0;", "}", ""]


HELPER_LINES = ["static int send_all(int fd, const char* buf, size_t len)", "{",
                "    if (fd < 0 || buf == NULL) return -1;",
                "    size_t n = write(fd, buf, len);", "    return n == len ? 0 : -1;", "}", ""]


def broken_gbk(helpers: int = 0) -> bytes:
    """The file, with `helpers` copies of an ASCII function before main (more code, less
    Chinese: then it was read as Windows-1250, '// łőĘĽ»ŻÍřÂç...')."""
    lines = BROKEN_GBK_LINES[:3] + HELPER_LINES * helpers + BROKEN_GBK_LINES[3:]
    raw = "\r\n".join(lines).encode("gbk")
    for cut in ("线程\r\n", "网络库\r\n"):  # the last byte of 程 and of 库 lost
        whole = cut.encode("gbk")
        raw = raw.replace(whole, whole[:-3] + b"\r\n", 1)
    return raw


@pytest.mark.parametrize("helpers", [0, 6])
def test_a_gbk_file_with_a_few_broken_bytes_is_read_as_gb18030(helpers):
    """It was refused as "encoding not recognised", or read in a Cyrillic or Central European
    code page (mojibake)."""
    raw = broken_gbk(helpers)
    with pytest.raises(UnicodeDecodeError):
        raw.decode("gb18030")
    text, encoding, replaced = decode_source(raw, "zh")
    assert (encoding, replaced) == ("gb18030", 2)
    assert text == raw.decode("gb18030", "replace")
    assert "// 初始化网络库，失败时立即退出程序并打印错误信息\r\n" in text
    assert "// 创建工作线\ufffd\r\n" in text and "// 关闭网络\ufffd\r\n" in text


def test_a_file_with_many_broken_bytes_is_not_forced_into_gb18030():
    """Past a few broken bytes the encoding is wrong, not the bytes: the detector decides."""
    words = "初始 化网 络库 失败 时立 即退 出程 序并 打印 错误 信息 然后 等待 所有 工作 线程 结束"
    cut = b" ".join(word.encode("gbk")[:-1] for word in words.split())  # 17 characters cut
    raw = b"// " + cut + b"\n" + CODE.encode()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("gb18030")
    try:
        decoded = decode_source(raw, "zh")
    except SourceReadError:
        return
    assert decoded.replaced == 0


def test_broken_bytes_are_counted_and_intact_comments_kept(tmp_path, db_url, capsys):
    (tmp_path / "main.cpp").write_bytes(broken_gbk())
    report = tmp_path / "report.json"
    assert extract_main([str(tmp_path), "--lang", "zh", "--dataset", "zh", "--db", db_url,
                         "--targets-per-file", "0", "--explain",
                         "--report-json", str(report)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "read as gb18030, 2 broken bytes replaced" in out
    assert "broken bytes replaced (U+FFFD): 2 in 1 file(s)" in out
    data = json.loads(report.read_text(encoding="utf-8"))
    assert [(f["encoding"], f["replaced"]) for f in data["files"]] == [("gb18030", 2)]
    decisions = {c["excerpt"]: (c["decision"], c["reason"]) for c in data["comments"]}
    assert decisions == {
        "// 初始化网络库，失败时立即退出程序并打印错误信息": ("target", ""),
        "// 创建工作线\ufffd": ("dropped", "broken_text"),
        "// 等待所有工作线程结束以后再释放它们的资源": ("target", ""),
        "// 关闭网络\ufffd": ("dropped", "broken_text")}
    assert next(f for f in data["filters"] if f["name"] == "broken_text")["removed"] == 2


def test_each_files_encoding_is_reported_and_stored(tmp_path, db_url, capsys):
    (tmp_path / "anniu.cpp").write_bytes(
        ("// 错误 按钮\n" + CODE + "// 如果按钮被禁用就先恢复它的状态，然后再发送点击消息\nvoid f();\n")
        .encode("gbk"))
    (tmp_path / "plain.cpp").write_text("// 读取配置文件中的窗口位置，没有文件就用默认的位置\n" + CODE,
                                        encoding="utf-8")
    report = tmp_path / "report.json"
    assert extract_main([str(tmp_path), "--lang", "zh", "--dataset", "zh", "--db", db_url,
                         "--explain", "--report-json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "read as gb18030" in out and "read as utf-8" in out
    assert "read as: " in out  # the summary line
    files = {f["file"].rsplit("/", 1)[-1]: f["encoding"]
             for f in json.loads(report.read_text(encoding="utf-8"))["files"]}
    assert files == {"anniu.cpp": "gb18030", "plain.cpp": "utf-8"}
    targets = [c for c in json.loads(report.read_text(encoding="utf-8"))["comments"]
               if c["decision"] == "target"]
    assert all(c["language"].startswith("zh") for c in targets) and len(targets) == 2


# ------------------------------------------------------------------ generated files, wizards

AUTO_GENERATED_CS = """//------------------------------------------------------------------------------
// <auto-generated>
//     此代码由工具生成。
//     运行时版本:4.0.30319.42000
// </auto-generated>
//------------------------------------------------------------------------------

namespace Shop.Properties {
    internal class Resources {
        /// <summary>
        ///   一个强类型的资源类，用于查找本地化的字符串等。
        /// </summary>
        internal Resources() {
            // 返回此类使用的缓存的 ResourceManager 实例，第一次使用时创建
        }
    }
}
"""
STDAFX_H = """// stdafx.h : 标准系统包含文件的包含文件，
// 或是经常使用但不常更改的
// 特定于项目的包含文件

#pragma once

#define WIN32_LEAN_AND_MEAN             // 从 Windows 头中排除极少使用的资料
#include <windows.h>

// 在此处引用程序需要的其他头文件，例如串口通信和数据库访问的头文件
#include <stdio.h>
"""
DESIGNER_CS = """namespace Kalkulator
{
    partial class Form1
    {
        /// <summary>
        /// Wymagana zmienna projektanta.
        /// </summary>
        private System.ComponentModel.IContainer components = null;

        /// <summary>
        /// Wyczyść wszystkie używane zasoby, gdy formularz jest zamykany przez użytkownika.
        /// </summary>
        protected override void Dispose(bool disposing)
        {
            // przycisk wyliczający sumę wszystkich wpisanych liczb z listy
            base.Dispose(disposing);
        }
    }
}
"""
RESOURCE_H = """//{{NO_DEPENDENCIES}}
// Microsoft Visual C++ generated include file.
// 供 Kalkulator.rc 使用，每个对话框和按钮的标识符都在这里定义
//
#define IDD_MAIN_DIALOG 102
"""


def test_generated_files_and_wizard_templates_are_dropped_file_wide(detector):
    zh = {"Properties/Resources.Designer.cs": AUTO_GENERATED_CS,
          "Shop/Settings.cs": AUTO_GENERATED_CS.replace("Resources", "Settings")
          .replace("字符串", "设置值"),  # no telling name: the marker decides
          "App/stdafx.h": STDAFX_H, "App/resource.h": RESOURCE_H}
    languages = {"Properties/Resources.Designer.cs": "csharp", "Shop/Settings.cs": "csharp"}
    sources = [SourceText(key=p, text=t, programming_language=languages.get(p, "cpp"), path=p)
               for p, t in zh.items()]
    selected, report = select_targets(sources, "zh", SelectionConfig(min_tokens=3),
                                      detector=detector)
    assert selected == [] and report.removed["generated_file"] == 4
    why = {d["file"]: d["excerpt"] for d in report.decisions if d["reason"] == "generated_file"}
    assert why == {"Properties/Resources.Designer.cs": "name Resources.Designer.cs",
                   "Shop/Settings.cs": "marker <auto-generated",
                   "App/stdafx.h": "name stdafx.h",
                   "App/resource.h": "marker {{NO_DEPENDENCIES}}"}
    selected, report = _select({"Form1.Designer.cs": DESIGNER_CS}, "pl", detector, "csharp")
    assert selected == [] and report.removed["generated_file"] == 1
    # --no-generated-file switches it off
    sources = [SourceText(key="App/stdafx.h", text=STDAFX_H, programming_language="cpp",
                          path="App/stdafx.h")]
    selected, _ = select_targets(sources, "zh", SelectionConfig(min_tokens=3,
                                                                generated_file=False),
                                 detector=detector)
    assert selected


WIZARD_APP_CPP = """// Kalkulator.cpp : 定义应用程序的类行为。
//

#include "stdafx.h"

// CKalkulatorApp 构造

CKalkulatorApp::CKalkulatorApp()
{
}

// 唯一的一个 CKalkulatorApp 对象

CKalkulatorApp theApp;

BOOL CKalkulatorApp::InitInstance()
{
    // 读取配置文件中的窗口位置，如果文件不存在就使用默认的位置
    LoadPosition();
    return TRUE;
}
"""
CONSOLE_CPP = """// 作业1.cpp : 定义控制台应用程序的入口点。
//

#include "stdafx.h"

int main()
{
    return 0;
}
"""
FORM_CS = """namespace Kalkulator
{
    static class Program
    {
        /// <summary>
        /// Główny punkt wejścia dla aplikacji.
        /// </summary>
        static void Main()
        {
            Application.Run(new Form1());
        }
    }

    public class Form2 : Form
    {
        /// <summary>
        /// Clean up any resources being used.
        /// </summary>
        protected override void Dispose(bool disposing) { }
    }
}
"""


def test_wizard_comments_in_files_people_edit_are_not_targets(detector):
    selected, report = _select({"Kalkulator.cpp": WIZARD_APP_CPP, "作业1.cpp": CONSOLE_CPP},
                               "zh", detector)
    assert [(s.source.key, [t.text for t in s.targets]) for s in selected] == [
        ("Kalkulator.cpp", ["// 读取配置文件中的窗口位置，如果文件不存在就使用默认的位置"])]
    dropped = {d["excerpt"]: d["reason"] for d in report.decisions
               if d["decision"] == "dropped"}
    assert dropped == {"// Kalkulator.cpp : 定义应用程序的类行为。 //": "autogenerated",
                       "// CKalkulatorApp 构造": "autogenerated",
                       "// 唯一的一个 CKalkulatorApp 对象": "autogenerated",
                       "// 作业1.cpp : 定义控制台应用程序的入口点。 //": "autogenerated"}
    selected, report = _select({"Program.cs": FORM_CS}, "pl", detector, "csharp")
    assert not selected
    assert {d["reason"] for d in report.decisions} == {"autogenerated"}


# ---------------------------------------------------------------------------- Greek by script

def test_one_greek_word_among_three_is_greek_as_the_docs_say(detector):
    """docs/corpus.md: the script decides when its words are at least a third of the comment's.
    A lone Greek letter is a symbol, not a word."""
    verdict = judge_language("// Επιστρέφει the result", "el", detector)
    assert (verdict.status, verdict.detected, verdict.rule) == ("match", "el", "script")
    symbol = judge_language("// returns the sum Σ of x", "el", detector)
    assert symbol.rule != "script"
    quarter = judge_language("// Υπολογισμός of the mean", "el", detector)  # 1 of 4
    assert quarter.rule != "script"


def test_a_gbk_file_is_extracted_in_chinese_end_to_end(tmp_path, db_url):
    (tmp_path / "anniu.cpp").write_bytes(("// 消息 错误\n" + CODE).encode("gbk"))
    result = run_extract([tmp_path], natural_language="zh", dataset="zh", db_url=db_url,
                         console=False, config=SelectionConfig(min_tokens=1, min_words=1))
    assert result.report.encodings == {str(tmp_path / "anniu.cpp"): "gb18030"}
    verdicts = [d["language"] for d in result.report.decisions]
    assert verdicts == ["zh (script, match)"] and result.written_targets == 1


@pytest.mark.parametrize("body, wizard", [
    (" ChildFrm.h : CChildFrame 类的接口", True),
    (" 所有命令将通过此控件路由，而不是通过主框架路由:", True),
    (" SHARED_HANDLERS 可以在实现预览、缩略图和搜索筛选器句柄的", True),
    (" CMainFrame 构造/析构", True),
    (" ShowInformation 消息处理程序", True),
    (" CAboutDlg dialog used for App About", True),
    ("{{AFX_MSG(CMyApp)\n NOTE - the ClassWizard will add and remove member functions here.", True),
    (" 这是唯一的一个入口，其他线程都要在这里排队等待", False),
    (" Cache construction is lazy: the first lookup builds it", False),
    (" 计算最大公约数，用辗转相除法", False),
])
def test_wizard_sentences_and_near_misses(body, wizard):
    from corpus.filters import is_autogenerated

    assert is_autogenerated(body) is wizard
