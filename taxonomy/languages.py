"""Natural-language codes: the one check that a language code is real, for the importer and the
metrics alike (pure; imports only `taxonomy.models`).

Accepted: the 183 ISO 639-1 codes (`de`, `zh`, ...) and the ISO 639-3 / 639-2 codes of the same
languages (`deu`, `ger`, `zho`, `chi`, ...), any case, normalised to the two-letter code, which
is what the database stores. Three-letter codes of languages without a two-letter code are not
in this table and are refused; a language name (`german`, `Chinese`) is refused with the code to
use instead ("did you mean 'de'?").

`APP_LANGUAGES` are the languages the labelling app and the taxonomy translations cover
(`taxonomy.LANGUAGES`); an annotator's `languages` must be among them.
"""
from __future__ import annotations

from nlce.cli import InputError
from taxonomy.models import LANGUAGES

# code639-1 code639-3[/code639-2B] English name[/other name]; one language a line
_TABLE = """
aa aar Afar|ab abk Abkhazian|ae ave Avestan|af afr Afrikaans|ak aka Akan|am amh Amharic
an arg Aragonese|ar ara Arabic|as asm Assamese|av ava Avaric|ay aym Aymara|az aze Azerbaijani
ba bak Bashkir|be bel Belarusian|bg bul Bulgarian|bi bis Bislama|bm bam Bambara
bn ben Bengali/Bangla|bo bod/tib Tibetan|br bre Breton|bs bos Bosnian|ca cat Catalan
ce che Chechen|ch cha Chamorro|co cos Corsican|cr cre Cree|cs ces/cze Czech
cu chu Church Slavic|cv chv Chuvash|cy cym/wel Welsh|da dan Danish|de deu/ger German
dv div Divehi/Maldivian|dz dzo Dzongkha|ee ewe Ewe|el ell/gre Greek|en eng English
eo epo Esperanto|es spa Spanish/Castilian|et est Estonian|eu eus/baq Basque|fa fas/per Persian/Farsi
ff ful Fulah|fi fin Finnish|fj fij Fijian|fo fao Faroese|fr fra/fre French|fy fry Western Frisian/Frisian
ga gle Irish|gd gla Gaelic/Scottish Gaelic|gl glg Galician|gn grn Guarani|gu guj Gujarati
gv glv Manx|ha hau Hausa|he heb Hebrew|hi hin Hindi|ho hmo Hiri Motu|hr hrv Croatian
ht hat Haitian/Haitian Creole|hu hun Hungarian|hy hye/arm Armenian|hz her Herero
ia ina Interlingua|id ind Indonesian|ie ile Interlingue|ig ibo Igbo|ii iii Sichuan Yi
ik ipk Inupiaq|io ido Ido|is isl/ice Icelandic|it ita Italian|iu iku Inuktitut|ja jpn Japanese
jv jav Javanese|ka kat/geo Georgian|kg kon Kongo|ki kik Kikuyu|kj kua Kuanyama|kk kaz Kazakh
kl kal Kalaallisut/Greenlandic|km khm Khmer|kn kan Kannada|ko kor Korean|kr kau Kanuri
ks kas Kashmiri|ku kur Kurdish|kv kom Komi|kw cor Cornish|ky kir Kirghiz/Kyrgyz|la lat Latin
lb ltz Luxembourgish|lg lug Ganda|li lim Limburgish|ln lin Lingala|lo lao Lao
lt lit Lithuanian|lu lub Luba-Katanga|lv lav Latvian|mg mlg Malagasy|mh mah Marshallese
mi mri/mao Maori|mk mkd/mac Macedonian|ml mal Malayalam|mn mon Mongolian|mr mar Marathi
ms msa/may Malay|mt mlt Maltese|my mya/bur Burmese|na nau Nauru|nb nob Norwegian Bokmal/Bokmal
nd nde North Ndebele|ne nep Nepali|ng ndo Ndonga|nl nld/dut Dutch/Flemish|nn nno Norwegian Nynorsk/Nynorsk
no nor Norwegian|nr nbl South Ndebele|nv nav Navajo|ny nya Chichewa/Nyanja|oc oci Occitan
oj oji Ojibwa|om orm Oromo|or ori Oriya/Odia|os oss Ossetian|pa pan Punjabi/Panjabi|pi pli Pali
pl pol Polish|ps pus Pashto|pt por Portuguese|qu que Quechua|rm roh Romansh|rn run Rundi
ro ron/rum Romanian/Moldavian|ru rus Russian|rw kin Kinyarwanda|sa san Sanskrit|sc srd Sardinian
sd snd Sindhi|se sme Northern Sami|sg sag Sango|si sin Sinhala/Sinhalese|sk slk/slo Slovak
sl slv Slovenian|sm smo Samoan|sn sna Shona|so som Somali|sq sqi/alb Albanian|sr srp Serbian
ss ssw Swati|st sot Southern Sotho|su sun Sundanese|sv swe Swedish|sw swa Swahili|ta tam Tamil
te tel Telugu|tg tgk Tajik|th tha Thai|ti tir Tigrinya|tk tuk Turkmen|tl tgl Tagalog/Filipino
tn tsn Tswana|to ton Tonga|tr tur Turkish|ts tso Tsonga|tt tat Tatar|tw twi Twi|ty tah Tahitian
ug uig Uighur/Uyghur|uk ukr Ukrainian|ur urd Urdu|uz uzb Uzbek|ve ven Venda|vi vie Vietnamese
vo vol Volapuk|wa wln Walloon|wo wol Wolof|xh xho Xhosa|yi yid Yiddish|yo yor Yoruba
za zha Zhuang|zh zho/chi Chinese/Mandarin|zu zul Zulu
"""


class LanguageCodeError(InputError):
    """Not a language code this project knows; the message says what to write instead."""


def _parse_table() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    codes: dict[str, str] = {}  # any accepted code -> ISO 639-1
    names: dict[str, str] = {}  # lower-cased English name -> ISO 639-1
    english: dict[str, str] = {}  # ISO 639-1 -> English name
    for entry in _TABLE.replace("\n", "|").split("|"):
        if not entry.strip():
            continue
        two, three, name = entry.split(" ", 2)
        codes[two] = two
        for code in three.split("/"):
            codes[code] = two
        for alias in name.split("/"):
            names[alias.lower()] = two
        english[two] = name.split("/")[0]
    return codes, names, english


_CODES, _NAMES, ENGLISH_NAMES = _parse_table()
ISO_639_1 = tuple(sorted(ENGLISH_NAMES))
APP_LANGUAGES = LANGUAGES  # the app's and the taxonomy translations' languages


def normalise_language(value: object) -> str:
    """The ISO 639-1 code for `value` ('de', 'DE', 'deu', 'ger' -> 'de'); else LanguageCodeError
    naming the code to use when `value` is a language name ('german' -> did you mean 'de')."""
    if not isinstance(value, str):
        raise LanguageCodeError(f"expected an ISO 639-1 code like 'nl', got {value!r:.40}")
    text = value.strip().lower().replace("_", "-")
    base = text.split("-")[0]  # 'zh-CN', 'pt_BR': the language part
    if base in _CODES:
        return _CODES[base]
    suggestion = _NAMES.get(text)
    hint = f"; did you mean {suggestion!r}?" if suggestion else \
        " (ISO 639-1 like 'de', or ISO 639-3 like 'deu')"
    raise LanguageCodeError(f"{value!r} is not a language code{hint}")


def check_app_languages(values) -> list[str]:
    """An annotator's languages: each normalised and among APP_LANGUAGES."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise LanguageCodeError(f"expected a list of language codes, got {values!r:.40}")
    out = []
    for value in values:
        code = normalise_language(value)
        if code not in APP_LANGUAGES:
            raise LanguageCodeError(
                f"{value!r} ({ENGLISH_NAMES[code]}) is not a language of the labelling app; "
                f"expected some of {', '.join(APP_LANGUAGES)}")
        out.append(code)
    return out
