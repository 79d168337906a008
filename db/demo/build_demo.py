"""Author the DEMO dataset: `python -m db.demo.build_demo` rewrites db/demo/demo.jsonl.

DEMO DATA, invented for trying the platform; none of it comes from the study. The source files
(db/demo/sources/<lang>/) and every comment, prediction and label below were written for this
demo. Five natural languages x three files (Python, Java, JavaScript) x 1-2 target comments =
25 targets; five "models" (the study's model ids) predict each one = 125 generations, with a
spread of quality and of the taxonomy's errors.

FIM inputs follow each model family's fill-in-the-middle format, with the first three tokens of
the reference comment appended to the prefix, as in the study (here "tokens" are approximated:
the comment marker plus three words, or three characters for Chinese). `raw_output` is what the
model produced after that primer, up to where it stopped; `predicted_comment` is the primer plus
the comment cut out of the raw output.

Labels: the annotator "expert" labels every generation; "anna" and "bas" (role annotator) label
overlapping subsets with a few deliberate disagreements; "lead" adjudicates some of those.
Demo accounts anna, bas and lead have the password "demo" (scrypt-hashed; DEMO ONLY).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
SOURCES = HERE / "sources"
OUT = HERE / "demo.jsonl"
DATASET = "demo"

MODELS = ("google/codegemma-7b", "meta-llama/CodeLlama-7b-hf", "Qwen/CodeQwen1.5-7B",
          "ibm-granite/granite-8b-code-base", "bigcode/starcoder2-7b")
FIM_FORMATS = {  # prefix, suffix, middle sentinels per model family
    "google/codegemma-7b": ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
    "meta-llama/CodeLlama-7b-hf": ("<PRE> ", " <SUF>", " <MID>"),
    "Qwen/CodeQwen1.5-7B": ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
    "ibm-granite/granite-8b-code-base": ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
    "bigcode/starcoder2-7b": ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
}
PROGRAMMING = {".py": "python", ".java": "java", ".js": "javascript"}
DEMO_PASSWORD = "demo"  # DEMO ONLY: published on purpose so anyone can sign in to the demo


@dataclass(frozen=True)
class P:
    """One model's prediction for a target: the predicted comment, the expert's label, what the
    raw output held after the comment ("\\n" = the model stopped), and an optional note."""
    text: str
    accuracy: str
    codes: str = ""
    tail: str = "\n"
    note: str = ""


# (language, file, reference comment, predictions in MODELS order)
TARGETS: list[tuple[str, str, str, tuple[P, P, P, P, P]]] = [
    # ------------------------------------------------------------------ English
    ("en", "stats.py",
     "# Convert every Celsius reading in the list to Fahrenheit and return a new list", (
         P("# Convert every Celsius value in the list to Fahrenheit and return the result",
           "correct"),
         P("# Convert every Celsius reading to Fahrenheit.\n    # Convert every Celsius reading "
           "to Fahrenheit.\n    # Convert every Celsius reading to Fahrenheit.", "incorrect",
           "MS-RE2"),
         P("# Convert every Celsius reading in the list to Fahrenheit and return a new list",
           "correct"),
         P("# Convert every Celsius reading\n    # return [c * 9 / 5 + 32 for c in celsius_values]",
           "partial", "SE-CS1", note="second line is commented-out code"),
         P("# Convert every Celsius reading in place, modifying the original list", "incorrect",
           "SE-HA3", note="the function builds a new list"),
     )),
    ("en", "stats.py",
     "# Return the average of each window of consecutive values; shorter input gives an empty "
     "list", (
         P("# Return the average of each sliding window of the given size", "partial", "SE-MD"),
         P("# Return the average of the values\n    # Example: moving_average([1, 2, 3], 2) -> "
           "[1.5, 2.5]\n    # Author: John Miller <jmiller@example.com>", "incorrect",
           "MS-LT MS-ME1 SE-MD", tail="\n    if window <= 0:\n        raise ValueError()\n"),
         P("# Return the average of each window of consecutive values, or an empty list when the "
           "input is shorter than the window", "correct"),
         P("# Return the average of all values using numpy for speed", "incorrect", "SE-HA2"),
         P("# Return the average of every window of `window` consecutive values; empty list if "
           "there are too few values", "correct"),
     )),
    ("en", "ShoppingCart.java",
     "// Sum the price of all items and subtract the discount when the total exceeds one hundred", (
         P("// Sum the price of all items multiplied by their quantity and apply the discount "
           "above 100", "correct"),
         P("// Sum the price of all items", "partial", "SE-MD"),
         P("// Sum the price of all items and subtract the discount when the total exceeds one "
           "hundred\n    // Sum the price of all items and subtract the discount when the total "
           "exceeds one hundred", "partial", "MS-RE2"),
         P("// Sum the price of all items including 21% VAT, see https://shop.example.com/tax",
           "incorrect", "SE-HA2 MS-ME2"),
         P("// Sum the price of all items; Java doubles are 64-bit IEEE 754 numbers", "partial",
           "SE-HA1 SE-MD"),
     )),
    ("en", "ShoppingCart.java",
     "// Remove the first item with the given name and report whether anything was removed", (
         P("// Remove the first item with the given name; returns true if it was found", "correct"),
         P("// Remove the first item with the given name\n    // and return the removed item or "
           "null", "incorrect", "SE-HA3"),
         P("// Remove the first item with the given name and return whether it was removed",
           "correct"),
         P("// Remove the first item from the cart", "partial", "SE-MD"),
         P("// Remove the first item with the given name and report whether anything was removed",
           "correct"),
     )),
    ("en", "debounce.js",
     "// Wrap a function so that it only runs after the caller has been quiet for the given delay", (
         P("// Wrap a function so that it runs at most once every delayMs milliseconds",
           "incorrect", "SE-HA3", note="describes throttling, not debouncing"),
         P("// Wrap a function so that it is debounced", "partial", "SE-MD"),
         P("// Wrap a function so that repeated calls within delayMs only trigger one call after "
           "the last", "correct"),
         P("// Wrap a function so that it only runs after the caller has been quiet for the given "
           "delay\n// Wrap a function so that it runs at most once per delay", "partial", "MS-LT",
           tail="\nexport function throttle(fn, delayMs) {\n  let last = 0;\n"),
         P("// Wrap a function so that calls are delayed until delayMs have passed without a new "
           "call", "correct"),
     )),
    # ------------------------------------------------------------------ Dutch
    ("nl", "voorraad.py",
     "# Lees het CSV-bestand met artikelen in en geef een woordenboek van artikelcode naar aantal "
     "terug", (
         P("# Lees het CSV-bestand in en geef een dictionary met de code en het aantal van elk "
           "artikel terug", "correct"),
         P("# Lees het CSV-bestand and return a dictionary mapping item codes to quantities",
           "incorrect", "LG-WL2"),
         P("# Lees het CSV-bestand met artikelen in en geeft een woordenboek terug", "partial",
           "LG-GR2 SE-MD"),
         P("# Lees het CSV-bestand bestand bestand bestand bestand bestand", "incorrect", "MS-RE2",
           tail=" bestand bestand"),
         P("# Lees het CSV-bestand met de voorraad en zet elke artikelcode om naar het aantal",
           "correct"),
     )),
    ("nl", "voorraad.py",
     "# Geef de codes van alle artikelen waarvan minder dan de drempel op voorraad is, gesorteerd", (
         P("# Geef de codes van de artikelen die bijna op zijn", "partial", "SE-MD"),
         P("# Geef de codes van alle artikelen met een voorraad kleiner dan de drempel, op "
           "alfabet gesorteerd", "correct"),
         P("# Geef de codes van alle artikel waarvan de voorraad onder de drempel ligt, gesorteerd",
           "partial", "LG-GR1"),
         P("# Geef de codes terug.\n    # TODO: drempel instelbaar maken\n    # Zie "
           "https://github.com/voorbeeld/voorraad", "incorrect", "MS-LT MS-ME2 SE-MD",
           tail="\n    return sorted(voorraad)\n"),
         P("# Geef de codes van alle artikelen waarvan de voorraad onder de drempel ligt, "
           "gesorteerd", "correct"),
     )),
    ("nl", "Rekening.java",
     "// Neem het bedrag op als het saldo toereikend is, anders blijft het saldo ongewijzigd en "
     "volgt een fout", (
         P("// Neem het bedrag op; werpt een IllegaleToestandUitzondering bij onvoldoende saldo",
           "partial", "LG-WL1", note="de naam van de Java-exceptie hoort onvertaald te blijven"),
         P("// Neem het bedrag op van het rekening", "partial", "LG-GR3 SE-MD"),
         P("// Neem het bedrag op en zet het saldo op nul als het te laag is", "incorrect",
           "SE-HA3"),
         P("// Neem het bedrag withdraw the amount from the account", "incorrect", "LG-WL2"),
         P("// Neem het bedrag op als er genoeg saldo is; anders wordt een uitzondering gegooid",
           "correct"),
     )),
    ("nl", "Rekening.java",
     "// Bereken de rente over een jaar met het gegeven percentage en tel die bij het saldo op", (
         P("// Bereken de rente over een jaar en tel die bij het evenwicht op", "partial", "LG-IS",
           note="'evenwicht' is de verkeerde vertaling van 'balance'; bedoeld is 'saldo'"),
         P("// Bereken de rente over een jaar met het gegeven percentage en tel die bij het saldo "
           "op", "correct"),
         P("// Bereken de rente over een jaar met het gegeven percentage en tel die bij het saldo "
           "op", "correct"),
         P("// Bereken de rente rente rente rente rente rente rente", "incorrect", "MS-RE2",
           tail=" rente rente"),
         P("// Bereken de rentevoet per maand en trek die af van het saldo", "incorrect", "SE-HA3"),
     )),
    ("nl", "postcode.js",
     "// Controleer of de invoer een geldige Nederlandse postcode is, zoals 1234 AB, met of zonder "
     "spatie", (
         P("// Controleer of de invoer een geldige postcode is", "partial", "SE-MD"),
         P("// Controleer of de postcode geldig is\n   vier cijfers en twee letters", "partial",
           "ST-IF", note="tweede regel mist het commentaarteken"),
         P("// Controleer of de invoer een geldig e-mailadres is", "incorrect", "SE-HA3"),
         P("// Controleer of de invoer een geldige Nederlandse postcode is\n// Controleer of de "
           "invoer een geldige Belgische postcode is\n// Controleer of de invoer een geldige "
           "Duitse postcode is", "incorrect", "MS-LT MS-RE1",
           tail="\nexport function isGeldigePostcodeBE(invoer) {\n"),
         P("// Controleer of de invoer een geldige Nederlandse postcode is (bijv. 1234 AB of "
           "1234AB)", "correct"),
     )),
    # ------------------------------------------------------------------ Chinese
    ("zh", "lru.py",
     "# 从缓存中取出键对应的值，并把该键移到最近使用的位置；键不存在时返回 None", (
         P("# 从缓存中获取键对应的值，并将其标记为最近使用；如果不存在则返回 None", "correct"),
         P("# 从缓存中获取值", "partial", "SE-MD"),
         P("# 从缓存中取出键对应的值，并把该键移到最近使用的位置；键不存在时返回 None", "correct"),
         P("# 从缓存 get the value for key and move it to the end", "incorrect", "LG-WL2"),
         P("# 从缓存中取出值，如果键不存在就抛出 KeyError 异常", "incorrect", "SE-HA3"),
     )),
    ("zh", "lru.py",
     "# 写入键值对，如果超过容量，就删除最久没有使用的那一项", (
         P("# 写入键值对，超出容量时淘汰最久未使用的项", "correct"),
         P("# 写入键值对\n        # 写入键值对\n        # 写入键值对", "incorrect", "MS-RE2",
           tail="\n        # 写入键值对\n"),
         P("# 写入键值对，如果缓存已满，则删除最早插入的元素", "partial", "SE-HA3",
           note="删除的是最久未使用的项，不是最早插入的"),
         P("# 写入键值对，如果超过容量，就删除最久没有使用的那一项\n        self.items[key] = value\n"
           "        self.items.move_to_end(key)", "partial", "MS-LT MS-CC"),
         P("# 写入键值对，容量满了以后删除最久没被访问的键", "correct"),
     )),
    ("zh", "Matrix.java",
     "// 返回矩阵的转置：原来第 i 行第 j 列的元素放到新矩阵第 j 行第 i 列", (
         P("// 返回矩阵的转置", "partial", "SE-MD"),
         P("// 返回矩阵的转置矩阵，行和列互换", "correct"),
         P("// 返回矩阵的转置，即把第 i 行第 j 列的元素放到第 j 行第 i 列", "correct"),
         P("// 返回矩阵的逆矩阵", "incorrect", "SE-HA3"),
         P("// 返回矩阵的转置。作者：张伟，邮箱 zhangwei@example.cn", "partial", "MS-ME1"),
     )),
    ("zh", "Matrix.java",
     "// 计算两个矩阵的乘积，如果第一个矩阵的列数不等于第二个矩阵的行数就抛出异常", (
         P("// 计算两个矩阵的乘积；维度不匹配时抛出 IllegalArgumentException", "correct"),
         P("// 计算两个矩阵的和", "incorrect", "SE-HA3"),
         P("// 计算两个矩阵的乘积，如果第一个矩阵的列数不等于第二个矩阵的行数就抛出异常", "correct"),
         P("// 计算两个矩阵相乘 multiply two matrices a and b", "partial", "LG-WL2"),
         P("// 计算两个矩阵的乘积", "partial", "SE-MD"),
     )),
    ("zh", "formatDate.js",
     "// 把日期格式化为“年-月-日”形式的字符串，月份和日期不足两位时在前面补零", (
         P("// 把日期格式化为 YYYY-MM-DD 字符串", "correct"),
         P("// 把日期转换成时间戳", "incorrect", "SE-HA3"),
         P("// 把日期格式化为“年-月-日”的字符串，不足两位的月和日补零", "correct"),
         P("// 把日期 formatted as yyyy-mm-dd", "incorrect", "LG-WL2"),
         P("// 把日期格式化为字符串，例如 2024-1-5", "partial", "SE-HA3",
           note="示例没有补零，与代码不符"),
     )),
    # ------------------------------------------------------------------ Greek
    ("el", "vathmoi.py",
     "# Υπολογίζει τον μέσο όρο των βαθμών και επιστρέφει μηδέν όταν η λίστα είναι κενή", (
         P("# Υπολογίζει τον μέσο όρο των βαθμών· για κενή λίστα επιστρέφει 0", "correct"),
         P("# Υπολογίζει τον μέσο όρο", "partial", "MS-ET", tail=""),
         P("# Υπολογίζει τον μέσο όρο των βαθμών και επιστρέφει μηδέν όταν η λίστα είναι κενή",
           "correct"),
         P("# Υπολογίζει τον μέσο όρο of the grades and returns zero for an empty list",
           "incorrect", "LG-WL2"),
         P("# Υπολογίζει τον μέσο όρος των βαθμό", "partial", "LG-GR4 SE-MD"),
     )),
    ("el", "vathmoi.py",
     "# Μετατρέπει τον αριθμητικό βαθμό σε χαρακτηρισμό: άριστα από 18 και πάνω, αλλιώς καλώς ή "
     "ανεπαρκώς", (
         P("# Μετατρέπει τον αριθμητικό βαθμό σε λεκτικό χαρακτηρισμό (άριστα, καλώς, ανεπαρκώς)",
           "correct"),
         P("# Μετατρέπει τον αριθμητικό βαθμό σε γράμμα A, B, C, D ή F", "incorrect", "SE-HA3"),
         P("# Μετατρέπει τον αριθμητικό βαθμό σε χαρακτηρισμό", "partial", "SE-MD"),
         P("# Μετατρέπει τον αριθμητικό αριθμητικό αριθμητικό αριθμητικό", "incorrect", "MS-RE2",
           tail=" αριθμητικό"),
         P("# Μετατρέπει τον αριθμητικό βαθμό σε χαρακτηρισμό: άριστα για 18 και πάνω, καλώς από "
           "10, αλλιώς ανεπαρκώς", "correct"),
     )),
    ("el", "Stoiva.java",
     "// Προσθέτει ένα στοιχείο στην κορυφή της στοίβας και διπλασιάζει τον πίνακα όταν γεμίσει", (
         P("// Προσθέτει ένα στοιχείο στη στοίβα", "partial", "SE-MD"),
         P("// Προσθέτει ένα στοιχείο στο τέλος της λίστας και ταξινομεί τη λίστα", "incorrect",
           "SE-HA2"),
         P("// Προσθέτει ένα στοιχείο στην κορυφή της στοίβας· αν ο πίνακας είναι γεμάτος, "
           "διπλασιάζει το μέγεθός του", "correct"),
         P("// Προσθέτει ένα στοιχείο\n    public void push(int timi) {", "incorrect",
           "SE-CS2 MS-CC", tail="\n        stoixeia[megethos++] = timi;\n    }\n"),
         P("// Προσθέτει ένα στοιχείο στην κορυφή της στοίβας και μεγαλώνει τον πίνακα όταν "
           "χρειάζεται", "correct"),
     )),
    ("el", "Stoiva.java",
     "// Αφαιρεί και επιστρέφει το στοιχείο της κορυφής· αν η στοίβα είναι άδεια πετάει εξαίρεση", (
         P("// Αφαιρεί και επιστρέφει το τελευταίο στοιχείο· πετάει IllegalStateException αν η "
           "στοίβα είναι άδεια", "correct"),
         P("// Αφαιρεί και επιστρέφει το στοιχείο της κορυφής· αν η στοίβα είναι άδεια "
           "επιστρέφει -1", "partial", "SE-HA3"),
         P("// Αφαιρεί και επιστρέφει το στοιχείο της κορυφής", "partial", "SE-MD"),
         P("// Αφαιρεί και επιστρέφει removes and returns the top element", "incorrect", "LG-WL2"),
         P("// Αφαιρεί και επιστρέφει το στοιχείο της κορυφής· αν η στοίβα είναι άδεια πετάει "
           "εξαίρεση", "correct"),
     )),
    ("el", "antistrofi.js",
     "// Ξεκινά αντίστροφη μέτρηση από τα δευτερόλεπτα που δίνονται και καλεί τη συνάρτηση όταν "
     "φτάσει στο μηδέν", (
         P("// Ξεκινά αντίστροφη μέτρηση και επιστρέφει μια συνάρτηση που τη σταματά· στο μηδέν "
           "καλεί το otanTeleiosei", "correct"),
         P("// Ξεκινά αντίστροφη μέτρηση", "partial", "MS-ET", tail=""),
         P("// Ξεκινά αντίστροφη μέτρηση από τα δευτερόλεπτα και καλεί τη συνάρτηση κάθε "
           "δευτερόλεπτο", "incorrect", "SE-HA3"),
         P("// Ξεκινά αντίστροφη μέτρηση μέτρηση μέτρηση μέτρηση μέτρηση", "incorrect", "MS-RE2",
           tail=" μέτρηση"),
         P("// Ξεκινά αντίστροφη μέτρηση από τον δοσμένο αριθμό δευτερολέπτων και στο μηδέν καλεί "
           "τη συνάρτηση επιστροφής", "correct"),
     )),
    # ------------------------------------------------------------------ Polish
    ("pl", "statystyki.py",
     "# Zwraca słownik, w którym każdemu słowu przypisana jest liczba jego wystąpień, bez "
     "rozróżniania wielkości liter", (
         P("# Zwraca słownik, w którym dla tekstu 'Ala ma kota' słowo 'ala' ma liczbę 1",
           "partial", "SE-TS"),
         P("# Zwraca słownik, w którym kluczami są słowa pisane małymi literami, a wartościami "
           "liczby ich wystąpień", "correct"),
         P("# Zwraca słownik, w którym każdemu słowu przypisana jest liczba jego wystąpień, bez "
           "rozróżniania wielkości liter", "correct"),
         P("# Zwraca słownik, w którym każdy słowo ma swoją liczbę", "partial", "LG-GR3 SE-MD"),
         P("# Zwraca słownik, w którym słowa są posortowane alfabetycznie", "incorrect", "SE-HA3"),
     )),
    ("pl", "statystyki.py",
     "# Znajduje najdłuższe słowo w tekście; przy remisie wygrywa to, które pojawiło się wcześniej", (
         P("# Znajduje najdłuższe słowo w tekście (pierwsze, jeśli kilka ma tę samą długość)",
           "correct"),
         P("# Znajduje najdłuższe słowo w tekście; przy remisie wygrywa ostatnie", "partial",
           "SE-HA3"),
         P("# Znajduje najdłuższe słowo w tekście", "partial", "SE-MD"),
         P("# Znajduje najdłuższe słowo\n    # Znajduje najkrótsze słowo\n    # Znajduje średnie "
           "słowo", "incorrect", "MS-LT MS-RE1", tail="\n    najkrotsze = \"\"\n"),
         P("# Znajduje najdłuższe słowo w tekście i zwraca jego długość", "incorrect", "SE-HA3",
           note="funkcja zwraca samo słowo, nie jego długość"),
     )),
    ("pl", "Faktura.java",
     "// Oblicza kwotę brutto, doliczając podatek VAT według podanej stawki i zaokrąglając do "
     "groszy", (
         P("// Oblicza kwotę brutto, czyli netto powiększone o VAT, zaokrągloną do dwóch miejsc po "
           "przecinku", "correct"),
         P("// Oblicza kwotę brutto, calculates the gross amount including VAT", "incorrect",
           "LG-WL2"),
         P("// Oblicza kwotę brutto, doliczając podatek VAT", "partial", "SE-MD"),
         P("// Oblicza kwotę brutto, odejmując podatek VAT od kwoty netto", "incorrect", "SE-HA3"),
         P("// Oblicza kwotę brutto, doliczając VAT według stawki i zaokrąglając wynik do groszy",
           "correct"),
     )),
    ("pl", "Faktura.java",
     "// Termin płatności przypada dokładnie czternaście dni kalendarzowych po dacie wystawienia "
     "faktury", (
         P("// Termin płatności przypada 14 dni po dacie wystawienia", "correct"),
         P("// Termin płatności przypada na koniec miesiąca", "incorrect", "SE-HA3"),
         P("// Termin płatności przypada czternaście dni po wystawieniu faktury", "correct"),
         P("// Termin płatności przypada dokładnie czternaście dni kalendarzowych po dacie "
           "wystawienia faktury, kontakt: jan.kowalski@example.pl", "partial", "MS-ME1"),
         P("// Termin płatności przypada dokładnie czternaście dni roboczych po dacie wystawienia "
           "faktury", "partial", "SE-HA3", note="dni kalendarzowe, nie robocze"),
     )),
    ("pl", "ponawianie.js",
     "// Pobiera adres URL i w razie błędu sieci ponawia próbę do trzech razy, czekając coraz "
     "dłużej między próbami", (
         P("// Pobiera adres URL, ponawiając żądanie przy błędzie z wykładniczo rosnącym "
           "opóźnieniem", "correct"),
         P("// Pobiera adres URL i zwraca dane w formacie JSON", "incorrect", "SE-HA2"),
         P("// Pobiera adres URL i ponawia próbę w razie błędu", "partial", "SE-MD"),
         P("// Pobiera adres URL ; ;; => proby 500 ** i }} await", "incorrect", "MS-IG"),
         P("// Pobiera adres URL i w razie błędu sieci ponawia próbę maksymalnie trzy razy z "
           "rosnącym odstępem", "correct"),
     )),
]

REPOS = {"en": "demo/weather-shop", "nl": "demo/winkel-bank", "zh": "demo/huancun-juzhen",
         "el": "demo/vathmoi-domes", "pl": "demo/faktury-tekst"}
ANNOTATORS = [  # username, role, languages, password
    ("expert", "expert", ["en", "nl", "zh", "el", "pl"], None),
    ("anna", "annotator", ["en", "nl", "pl"], DEMO_PASSWORD),
    ("bas", "annotator", ["en", "nl", "el"], DEMO_PASSWORD),
    ("lead", "lead", ["en", "nl", "zh", "el", "pl"], DEMO_PASSWORD),
]


def demo_password_hash(password: str, username: str) -> str:
    """scrypt at OWASP's cost (`db.passwords`). The salt is derived from the username only so
    that the demo file is reproducible: DEMO ONLY, never do this for real."""
    from db.passwords import OWASP_COST, hash_password

    salt = hashlib.sha256(f"nlce-demo-salt:{username}".encode()).digest()[:16]
    return hash_password(password, salt=salt, cost=OWASP_COST)


def primer(comment: str, language: str) -> str:
    """The comment marker plus the first three words (three characters for Chinese)."""
    marker, _, text = comment.partition(" ")
    if language == "zh":
        return f"{marker} {text[:3]}"
    return " ".join([marker, *text.split(" ")[:3]])


def token_count(text: str, language: str) -> int:
    words = text.split()[1:]  # without the marker
    return sum(len(w) for w in words) if language == "zh" else len(words)


def fim_input(model: str, prefix: str, suffix: str) -> str:
    pre, suf, mid = FIM_FORMATS[model]
    return f"{pre}{prefix}{suf}{suffix}{mid}"


def shift(accuracy: str) -> str:
    """A neighbouring label on the scale: the typical human disagreement."""
    return {"correct": "partial", "partial": "correct", "incorrect": "partial"}[accuracy]


def build() -> list[dict]:
    records: list[dict] = [{"type": "dataset", "name": DATASET, "description":
                            "DEMO DATA written for trying the platform (not from the study): "
                            "15 short files in en/nl/zh/el/pl, 25 targets, 5 models."}]
    files_done: set[str] = set()
    generations: list[tuple[dict, str, P, int]] = []  # (reference, language, prediction, index)
    for language, name, comment, predictions in TARGETS:
        path = f"{language}/{name}"
        content = (SOURCES / path).read_text(encoding="utf-8")
        ref = {"dataset": DATASET, "repo": REPOS[language], "path": path}
        if path not in files_done:
            files_done.add(path)
            records.append({"type": "file", **ref, "natural_language": language,
                            "programming_language": PROGRAMMING[Path(name).suffix],
                            "licence": "CC0-1.0 (demo data)", "external_id": f"demo-{path}",
                            "content": content})
        assert content.count(comment) == 1, f"{path}: comment must occur once: {comment}"
        assert token_count(comment, language) >= 10, f"{path}: comment too short: {comment}"
        start = content.index(comment)
        span = [start, start + len(comment)]
        records.append({"type": "target", **ref, "span": span, "original_comment": comment,
                        "comment_kind": "line"})
        head = primer(comment, language)
        for model, prediction in zip(MODELS, predictions, strict=True):
            assert prediction.text.startswith(head), f"{model} {path}: must start with {head!r}"
            records.append({
                "type": "generation", **ref, "span": span, "model": model,
                "fim_input": fim_input(model, content[:start] + head, content[span[1]:]),
                "raw_output": prediction.text[len(head):] + prediction.tail,
                "predicted_comment": prediction.text, "backend": "demo",
                "params": {"temperature": 0.0, "max_new_tokens": 128, "primer_tokens": 3}})
            generations.append(({**ref, "span": span, "model": model}, language, prediction,
                                 len(generations)))

    for username, role, languages, password in ANNOTATORS:
        record = {"type": "annotator", "username": username, "role": role,
                  "languages": languages, "display_name": username.capitalize()}
        if password:
            record["password_hash"] = demo_password_hash(password, username)
        records.append(record)

    def label(gen_ref, annotator, accuracy, codes, i, note="", history=None):
        record = {"type": "annotation", **gen_ref, "annotator": annotator, "accuracy": accuracy,
                  "codes": codes, "note": note, "seconds_spent": float(25 + (i * 37) % 95),
                  "status": "done"}
        if history:
            record["history"] = history
        return record

    disagreements = []
    for gen_ref, _language, p, i in generations:
        records.append(label(gen_ref, "expert", p.accuracy, p.codes.split(), i, p.note))
    for annotator, languages, every, offset, labelled_targets in (
            ("anna", ("en", "nl", "pl"), 6, 2, 12), ("bas", ("en", "nl", "el"), 5, 3, 11)):
        mine = [g for g in generations if g[1] in languages]
        for position, (gen_ref, _, _, _) in enumerate(mine):
            records.append({"type": "assignment", **gen_ref, "annotator": annotator,
                            "position": position})
        for gen_ref, _, p, i in mine[:labelled_targets * 5]:
            accuracy, codes = p.accuracy, p.codes.split()
            if i % every == offset:  # a deliberate, realistic disagreement
                accuracy = shift(accuracy)
                codes = [] if accuracy == "correct" else (codes or ["SE-MD"])
                disagreements.append((gen_ref, p))
            elif annotator == "bas" and len(codes) > 1 and i % 2:
                codes = codes[:1]  # bas often gives only the main error
            history = None
            if annotator == "anna" and i == 1:  # one label revised after a second look
                history = [{"accuracy": "partial", "codes": ["MS-LT"], "seconds_spent": 30.0},
                           {"accuracy": accuracy, "codes": codes,
                             "seconds_spent": float(25 + (i * 37) % 95)}]
            records.append(label(gen_ref, annotator, accuracy, codes, i, history=history))
    for gen_ref, p in disagreements[:6]:
        records.append({"type": "gold_label", **gen_ref, "adjudicator": "lead",
                        "accuracy": p.accuracy, "codes": p.codes.split(),
                        "note": "demo adjudication: agrees with the expert label"})
    return records


def main() -> None:
    records = build()
    with open(OUT, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for record in records:
        kinds[record["type"]] = kinds.get(record["type"], 0) + 1
    print(f"wrote {OUT} ({', '.join(f'{k} {n}' for k, n in kinds.items())})")


if __name__ == "__main__":
    main()
