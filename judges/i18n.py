"""Every word a judge prompt contains, in each prompt language (en, zh, nl, el, pl).

Taxonomy names, descriptions, criteria, cluster names and accuracy-label texts come from the
`taxonomy` package; this module holds only the judge's own wording: instructions, bias
directives, Chain-of-Thought steps, rubric phrases, JSON keys of the input blocks and the
output schema's field names. Changing any string here changes the prompt version.
"""
from __future__ import annotations

PROMPT_LANGUAGES = ("en", "zh", "nl", "el", "pl")

# Where the comment was cut out of the code context: one language-neutral marker.
FIM_MASK = "<FIM_MASK>"

# Canonical (English) output field names; the prompt uses their translations.
OUTPUT_FIELDS = ("evaluations", "prediction_id", "reasoning", "errors", "code", "confidence",
                 "justification", "accuracy")
# Canonical keys of the JSON input blocks.
INPUT_KEYS = ("id", "name", "description", "inclusion", "exclusion", "comment")

TEXTS: dict[str, dict] = {
    "en": {
        "output_fields": {
            "evaluations": "evaluations", "prediction_id": "prediction_id",
            "reasoning": "reasoning", "errors": "errors", "code": "code",
            "confidence": "confidence", "justification": "justification",
            "accuracy": "accuracy",
        },
        "input_keys": {
            "id": "id", "name": "name", "description": "description",
            "inclusion": "inclusion", "exclusion": "exclusion", "comment": "comment",
        },
        "system_role": (
            "You are an expert evaluator of source-code comments written in English. A code "
            "model was given a source file from which one comment had been removed and was "
            "asked to fill it in (fill-in-the-middle). Your task is to compare each predicted "
            "comment with the original comment and the surrounding code, to identify its errors "
            "using the error taxonomy you are given, and to assign an overall accuracy label."
        ),
        "rules": "Rules:",
        "remember": "Remember:",
        "bias": (
            "Do not let comment length influence your judgment of quality. Short comments can "
            "be correct; long comments can contain errors.",
            "Evaluate each prediction independently; do not let the order of the predictions "
            "influence your judgment.",
            "Be consistent: apply the same standards regardless of comment length or verbosity.",
        ),
        "json_only": "Answer with one JSON object only, with no other text.",
        "h_taxonomy": "Error taxonomy (JSON)",
        "h_rubric": "Error rubric",
        "h_cluster": "Error cluster",
        "h_accuracy": "Accuracy labels",
        "h_original": "Original comment",
        "h_context": "Code context: the comment was removed at {mask}",
        "h_predictions": "Predictions (JSON)",
        "h_output": "Output format",
        "steps_intro": "Evaluate every prediction as follows:",
        "standard_steps": (
            "Compare the predicted comment with the original comment and with the code at the "
            "position of {mask}.",
            "Identify every error in the prediction, using only codes from the taxonomy; a "
            "prediction can have several errors or none.",
            "Assign one overall accuracy label.",
        ),
        "cot_steps": (
            "Read the predicted comment carefully.",
            "Use the fill-in-the-middle context to identify the code region that the comment "
            "describes (the position of {mask}).",
            "Compare the prediction with the original comment and with the code.",
            "For each potential error, check the inclusion criteria of the error code.",
            "Verify the exclusion criteria before confirming an error.",
            "Write your reasoning first, then the classification: fill in the \"{reasoning}\" "
            "field before the \"{errors}\" array, and give every error a \"{confidence}\" "
            "between 0 and 1 and a \"{justification}\".",
            "Determine the overall accuracy label based on the reasoning above.",
        ),
        "rubric_instruction": (
            "For every prediction, go through every rubric entry and decide whether the error "
            "is PRESENT or ABSENT using the criteria given; list the codes of all PRESENT errors "
            "in \"{errors}\"."
        ),
        "present_if": "Mark as PRESENT if:",
        "absent_if": "Mark as ABSENT if:",
        "none_listed": "(none listed)",
        "cluster_focus": (
            "Focus only on the error types listed above and ignore all other possible issues. "
            "Still give the accuracy label for the prediction as a whole."
        ),
        "output_instruction": (
            "Return exactly one entry per prediction ({ids}), with \"{prediction_id}\" set to "
            "its id. Use only the error codes listed above; leave \"{errors}\" empty when there "
            "is none. \"{accuracy}\" must be one of: {labels}. Answer with one JSON object only, "
            "in exactly this format:"
        ),
        "ph_code": "error code",
        "ph_reasoning": "step-by-step analysis",
        "ph_justification": "why this error applies",
    },
    "nl": {
        "output_fields": {
            "evaluations": "beoordelingen", "prediction_id": "voorspelling_id",
            "reasoning": "redenering", "errors": "fouten", "code": "code",
            "confidence": "zekerheid", "justification": "onderbouwing",
            "accuracy": "nauwkeurigheid",
        },
        "input_keys": {
            "id": "id", "name": "naam", "description": "beschrijving",
            "inclusion": "inclusiecriteria", "exclusion": "exclusiecriteria",
            "comment": "commentaar",
        },
        "system_role": (
            "Je bent een deskundige beoordelaar van broncodecommentaar in het Nederlands. Een "
            "codemodel kreeg een bronbestand waaruit één commentaar was verwijderd en moest dat "
            "commentaar invullen (fill-in-the-middle). Je taak is om elk voorspeld commentaar te "
            "vergelijken met het oorspronkelijke commentaar en de omliggende code, de fouten "
            "ervan vast te stellen met de foutentaxonomie die je krijgt, en een algemeen "
            "nauwkeurigheidslabel toe te kennen."
        ),
        "rules": "Regels:",
        "remember": "Onthoud:",
        "bias": (
            "Laat de lengte van een commentaar je oordeel over de kwaliteit niet beïnvloeden. "
            "Korte commentaren kunnen correct zijn; lange commentaren kunnen fouten bevatten.",
            "Beoordeel elke voorspelling onafhankelijk; laat de volgorde van de voorspellingen "
            "je oordeel niet beïnvloeden.",
            "Wees consistent: pas dezelfde maatstaven toe, ongeacht de lengte of de "
            "breedsprakigheid van het commentaar.",
        ),
        "json_only": "Antwoord uitsluitend met één JSON-object, zonder andere tekst.",
        "h_taxonomy": "Foutentaxonomie (JSON)",
        "h_rubric": "Beoordelingsrubriek voor fouten",
        "h_cluster": "Foutencluster",
        "h_accuracy": "Nauwkeurigheidslabels",
        "h_original": "Oorspronkelijk commentaar",
        "h_context": "Codecontext: het commentaar is verwijderd op de plaats van {mask}",
        "h_predictions": "Voorspellingen (JSON)",
        "h_output": "Uitvoerformaat",
        "steps_intro": "Beoordeel elke voorspelling als volgt:",
        "standard_steps": (
            "Vergelijk het voorspelde commentaar met het oorspronkelijke commentaar en met de "
            "code op de plaats van {mask}.",
            "Stel elke fout in de voorspelling vast, uitsluitend met codes uit de taxonomie; een "
            "voorspelling kan meerdere fouten bevatten of geen enkele.",
            "Ken één algemeen nauwkeurigheidslabel toe.",
        ),
        "cot_steps": (
            "Lees het voorspelde commentaar aandachtig.",
            "Bepaal met behulp van de fill-in-the-middle-context welk codegebied het commentaar "
            "beschrijft (de plaats van {mask}).",
            "Vergelijk de voorspelling met het oorspronkelijke commentaar en met de code.",
            "Controleer voor elke mogelijke fout de inclusiecriteria van de foutcode.",
            "Controleer de exclusiecriteria voordat je een fout bevestigt.",
            "Schrijf eerst je redenering en daarna de classificatie: vul het veld "
            "\"{reasoning}\" in vóór de lijst \"{errors}\", en geef bij elke fout een "
            "\"{confidence}\" tussen 0 en 1 en een \"{justification}\".",
            "Bepaal het algemene nauwkeurigheidslabel op basis van de bovenstaande redenering.",
        ),
        "rubric_instruction": (
            "Loop voor elke voorspelling alle rubriekitems door en beslis aan de hand van de "
            "gegeven criteria of de fout AANWEZIG of AFWEZIG is; zet de codes van alle "
            "AANWEZIGE fouten in \"{errors}\"."
        ),
        "present_if": "Markeer als AANWEZIG als:",
        "absent_if": "Markeer als AFWEZIG als:",
        "none_listed": "(geen vermeld)",
        "cluster_focus": (
            "Richt je uitsluitend op de hierboven genoemde fouttypen en negeer alle andere "
            "mogelijke problemen. Geef het nauwkeurigheidslabel wel voor de voorspelling als "
            "geheel."
        ),
        "output_instruction": (
            "Geef precies één item per voorspelling ({ids}), met het veld \"{prediction_id}\" "
            "gelijk aan het id ervan. Gebruik alleen de hierboven genoemde foutcodes; laat het veld "
            "\"{errors}\" leeg als er geen fouten zijn. Het veld \"{accuracy}\" moet een van "
            "de volgende waarden hebben: {labels}. Antwoord uitsluitend met één JSON-object, precies in dit formaat:"
        ),
        "ph_code": "foutcode",
        "ph_reasoning": "stapsgewijze analyse",
        "ph_justification": "waarom deze fout van toepassing is",
    },
    "el": {
        "output_fields": {
            "evaluations": "αξιολογήσεις", "prediction_id": "αναγνωριστικό_πρόβλεψης",
            "reasoning": "συλλογισμός", "errors": "σφάλματα", "code": "κωδικός",
            "confidence": "βεβαιότητα", "justification": "αιτιολόγηση",
            "accuracy": "ακρίβεια",
        },
        "input_keys": {
            "id": "αναγνωριστικό", "name": "όνομα", "description": "περιγραφή",
            "inclusion": "κριτήρια_συμπερίληψης", "exclusion": "κριτήρια_αποκλεισμού",
            "comment": "σχόλιο",
        },
        "system_role": (
            "Είστε ειδικός αξιολογητής σχολίων πηγαίου κώδικα γραμμένων στα ελληνικά. Ένα "
            "μοντέλο κώδικα έλαβε ένα αρχείο πηγαίου κώδικα από το οποίο είχε αφαιρεθεί ένα "
            "σχόλιο και του ζητήθηκε να το συμπληρώσει (συμπλήρωση στη μέση, fill-in-the-middle). "
            "Η εργασία σας είναι να συγκρίνετε κάθε προβλεπόμενο σχόλιο με το αρχικό σχόλιο και "
            "τον γύρω κώδικα, να εντοπίσετε τα σφάλματά του με βάση την ταξινομία σφαλμάτων που "
            "σας δίνεται και να αποδώσετε μια συνολική ετικέτα ακρίβειας."
        ),
        "rules": "Κανόνες:",
        "remember": "Θυμηθείτε:",
        "bias": (
            "Μην αφήνετε το μήκος ενός σχολίου να επηρεάζει την κρίση σας για την ποιότητά του. "
            "Τα σύντομα σχόλια μπορεί να είναι σωστά· τα μεγάλα σχόλια μπορεί να περιέχουν "
            "σφάλματα.",
            "Αξιολογήστε κάθε πρόβλεψη ανεξάρτητα· μην αφήνετε τη σειρά των προβλέψεων να "
            "επηρεάζει την κρίση σας.",
            "Να είστε συνεπείς: εφαρμόζετε τα ίδια κριτήρια ανεξάρτητα από το μήκος ή την "
            "πολυλογία του σχολίου.",
        ),
        "json_only": "Απαντήστε μόνο με ένα αντικείμενο JSON, χωρίς άλλο κείμενο.",
        "h_taxonomy": "Ταξινομία σφαλμάτων (JSON)",
        "h_rubric": "Ρουμπρίκα αξιολόγησης σφαλμάτων",
        "h_cluster": "Ομάδα σφαλμάτων",
        "h_accuracy": "Ετικέτες ακρίβειας",
        "h_original": "Αρχικό σχόλιο",
        "h_context": "Πλαίσιο κώδικα: το σχόλιο αφαιρέθηκε στη θέση {mask}",
        "h_predictions": "Προβλέψεις (JSON)",
        "h_output": "Μορφή εξόδου",
        "steps_intro": "Αξιολογήστε κάθε πρόβλεψη ως εξής:",
        "standard_steps": (
            "Συγκρίνετε το προβλεπόμενο σχόλιο με το αρχικό σχόλιο και με τον κώδικα στη θέση "
            "του {mask}.",
            "Εντοπίστε κάθε σφάλμα της πρόβλεψης χρησιμοποιώντας μόνο κωδικούς από την "
            "ταξινομία· μια πρόβλεψη μπορεί να έχει πολλά σφάλματα ή κανένα.",
            "Αποδώστε μία συνολική ετικέτα ακρίβειας.",
        ),
        "cot_steps": (
            "Διαβάστε προσεκτικά το προβλεπόμενο σχόλιο.",
            "Χρησιμοποιήστε το πλαίσιο συμπλήρωσης στη μέση (fill-in-the-middle) για να "
            "εντοπίσετε την περιοχή κώδικα που περιγράφει το σχόλιο (τη θέση του {mask}).",
            "Συγκρίνετε την πρόβλεψη με το αρχικό σχόλιο και με τον κώδικα.",
            "Για κάθε πιθανό σφάλμα, ελέγξτε τα κριτήρια συμπερίληψης του κωδικού σφάλματος.",
            "Επαληθεύστε τα κριτήρια αποκλεισμού πριν επιβεβαιώσετε ένα σφάλμα.",
            "Γράψτε πρώτα τον συλλογισμό σας και μετά την ταξινόμηση: συμπληρώστε το πεδίο "
            "\"{reasoning}\" πριν από τον πίνακα \"{errors}\" και δώστε για κάθε σφάλμα μια "
            "\"{confidence}\" από 0 έως 1 και μια \"{justification}\".",
            "Καθορίστε τη συνολική ετικέτα ακρίβειας με βάση τον παραπάνω συλλογισμό.",
        ),
        "rubric_instruction": (
            "Για κάθε πρόβλεψη, εξετάστε κάθε καταχώριση της ρουμπρίκας και αποφασίστε με βάση "
            "τα κριτήρια αν το σφάλμα είναι ΠΑΡΟΝ ή ΑΠΟΝ· καταγράψτε στο \"{errors}\" τους "
            "κωδικούς όλων των σφαλμάτων που είναι ΠΑΡΟΝΤΑ."
        ),
        "present_if": "Σημειώστε ως ΠΑΡΟΝ αν:",
        "absent_if": "Σημειώστε ως ΑΠΟΝ αν:",
        "none_listed": "(δεν αναφέρονται)",
        "cluster_focus": (
            "Εστιάστε μόνο στους τύπους σφαλμάτων που αναφέρονται παραπάνω και αγνοήστε όλα τα "
            "άλλα πιθανά προβλήματα. Την ετικέτα ακρίβειας, ωστόσο, να την αποδώσετε για την "
            "πρόβλεψη στο σύνολό της."
        ),
        "output_instruction": (
            "Επιστρέψτε ακριβώς μία καταχώριση για κάθε πρόβλεψη ({ids}), με το πεδίο "
            "\"{prediction_id}\" ίσο με το αναγνωριστικό της. Χρησιμοποιήστε μόνο τους κωδικούς "
            "σφαλμάτων που αναφέρονται παραπάνω· αφήστε το πεδίο \"{errors}\" κενό όταν δεν "
            "υπάρχει κανένα σφάλμα. Το πεδίο \"{accuracy}\" πρέπει να έχει μία από τις εξής "
            "τιμές: {labels}. "
            "Απαντήστε μόνο με ένα αντικείμενο JSON, ακριβώς σε αυτή τη μορφή:"
        ),
        "ph_code": "κωδικός σφάλματος",
        "ph_reasoning": "ανάλυση βήμα προς βήμα",
        "ph_justification": "γιατί ισχύει αυτό το σφάλμα",
    },
    "pl": {
        "output_fields": {
            "evaluations": "oceny", "prediction_id": "id_predykcji",
            "reasoning": "rozumowanie", "errors": "błędy", "code": "kod",
            "confidence": "pewność", "justification": "uzasadnienie",
            "accuracy": "poprawność",
        },
        "input_keys": {
            "id": "id", "name": "nazwa", "description": "opis",
            "inclusion": "kryteria_włączenia", "exclusion": "kryteria_wyłączenia",
            "comment": "komentarz",
        },
        "system_role": (
            "Jesteś ekspertem oceniającym komentarze w kodzie źródłowym napisane po polsku. "
            "Model kodu otrzymał plik źródłowy, z którego usunięto jeden komentarz, i miał go "
            "uzupełnić (fill-in-the-middle). Twoim zadaniem jest porównać każdy przewidziany "
            "komentarz (predykcję) z oryginalnym komentarzem i otaczającym kodem, wskazać jego "
            "błędy według podanej taksonomii błędów oraz przypisać ogólną etykietę poprawności."
        ),
        "rules": "Zasady:",
        "remember": "Pamiętaj:",
        "bias": (
            "Nie pozwól, aby długość komentarza wpływała na Twoją ocenę jego jakości. Krótkie "
            "komentarze mogą być poprawne; długie komentarze mogą zawierać błędy.",
            "Oceniaj każdą predykcję niezależnie; nie pozwól, aby kolejność predykcji wpływała "
            "na Twoją ocenę.",
            "Bądź konsekwentny: stosuj te same kryteria niezależnie od długości komentarza i "
            "jego rozwlekłości.",
        ),
        "json_only": "Odpowiedz wyłącznie jednym obiektem JSON, bez żadnego innego tekstu.",
        "h_taxonomy": "Taksonomia błędów (JSON)",
        "h_rubric": "Rubryka oceny błędów",
        "h_cluster": "Grupa błędów",
        "h_accuracy": "Etykiety poprawności",
        "h_original": "Oryginalny komentarz",
        "h_context": "Kontekst kodu: komentarz usunięto w miejscu {mask}",
        "h_predictions": "Predykcje (JSON)",
        "h_output": "Format odpowiedzi",
        "steps_intro": "Oceń każdą predykcję w następujący sposób:",
        "standard_steps": (
            "Porównaj przewidziany komentarz z oryginalnym komentarzem i z kodem w miejscu "
            "{mask}.",
            "Wskaż każdy błąd w predykcji, używając wyłącznie kodów z taksonomii; predykcja może "
            "mieć kilka błędów albo żadnego.",
            "Przypisz jedną ogólną etykietę poprawności.",
        ),
        "cot_steps": (
            "Uważnie przeczytaj przewidziany komentarz.",
            "Na podstawie kontekstu fill-in-the-middle ustal, który fragment kodu opisuje "
            "komentarz (miejsce {mask}).",
            "Porównaj predykcję z oryginalnym komentarzem i z kodem.",
            "Dla każdego potencjalnego błędu sprawdź kryteria włączenia danego kodu błędu.",
            "Zanim potwierdzisz błąd, sprawdź kryteria wyłączenia.",
            "Najpierw napisz rozumowanie, a potem klasyfikację: wypełnij pole \"{reasoning}\" "
            "przed listą \"{errors}\" i dla każdego błędu podaj \"{confidence}\" od 0 do 1 oraz "
            "\"{justification}\".",
            "Określ ogólną etykietę poprawności na podstawie powyższego rozumowania.",
        ),
        "rubric_instruction": (
            "Dla każdej predykcji przejdź przez wszystkie pozycje rubryki i na podstawie "
            "podanych kryteriów zdecyduj, czy błąd jest OBECNY, czy NIEOBECNY; kody wszystkich "
            "OBECNYCH błędów wpisz do \"{errors}\"."
        ),
        "present_if": "Oznacz jako OBECNY, jeśli:",
        "absent_if": "Oznacz jako NIEOBECNY, jeśli:",
        "none_listed": "(brak)",
        "cluster_focus": (
            "Skup się wyłącznie na typach błędów wymienionych powyżej i pomiń wszystkie inne "
            "możliwe problemy. Etykietę poprawności przypisz jednak do predykcji jako całości."
        ),
        "output_instruction": (
            "Zwróć dokładnie jeden wpis dla każdej predykcji ({ids}), z polem "
            "\"{prediction_id}\" ustawionym na jej identyfikator. Używaj wyłącznie kodów błędów "
            "wymienionych powyżej; pozostaw pole \"{errors}\" puste, jeśli nie ma błędów. "
            "Pole \"{accuracy}\" musi mieć jedną z wartości: {labels}. Odpowiedz wyłącznie jednym "
            "obiektem JSON, dokładnie w tym formacie:"
        ),
        "ph_code": "kod błędu",
        "ph_reasoning": "analiza krok po kroku",
        "ph_justification": "dlaczego ten błąd występuje",
    },
    "zh": {
        "output_fields": {
            "evaluations": "评估结果", "prediction_id": "预测编号",
            "reasoning": "推理过程", "errors": "错误", "code": "错误代码",
            "confidence": "置信度", "justification": "理由",
            "accuracy": "准确性",
        },
        "input_keys": {
            "id": "编号", "name": "名称", "description": "描述",
            "inclusion": "纳入标准", "exclusion": "排除标准", "comment": "注释",
        },
        "system_role": (
            "你是一名评估中文源代码注释的专家。一个代码模型收到了一个被删除了一条注释的源文件，"
            "并被要求补全这条注释（中间填充，fill-in-the-middle）。你的任务是将每条预测的注释与"
            "原始注释及其周围的代码进行比较，依据所提供的错误分类体系找出其中的错误，并给出一个"
            "总体准确性标签。"
        ),
        "rules": "规则：",
        "remember": "请牢记：",
        "bias": (
            "不要让注释的长度影响你对其质量的判断。简短的注释可能是正确的；冗长的注释也可能包含"
            "错误。",
            "独立评估每一条预测；不要让预测的顺序影响你的判断。",
            "保持一致：无论注释的长短或是否冗长，都采用相同的标准。",
        ),
        "json_only": "只用一个 JSON 对象作答，不要输出任何其他文字。",
        "h_taxonomy": "错误分类体系（JSON）",
        "h_rubric": "错误评分细则",
        "h_cluster": "错误类别组",
        "h_accuracy": "准确性标签",
        "h_original": "原始注释",
        "h_context": "代码上下文：注释在 {mask} 处被删除",
        "h_predictions": "预测（JSON）",
        "h_output": "输出格式",
        "steps_intro": "请按以下步骤评估每条预测：",
        "standard_steps": (
            "将预测的注释与原始注释以及 {mask} 位置处的代码进行比较。",
            "只使用分类体系中的代码，找出预测中的每一个错误；一条预测可以有多个错误，也可以没有"
            "错误。",
            "给出一个总体准确性标签。",
        ),
        "cot_steps": (
            "仔细阅读预测的注释。",
            "借助中间填充（fill-in-the-middle）上下文，确定该注释所描述的代码区域（即 {mask} "
            "所在的位置）。",
            "将预测与原始注释以及代码进行比较。",
            "对每一个可能的错误，检查该错误代码的纳入标准。",
            "在确认错误之前，核实其排除标准。",
            "先写推理，再给出分类：先填写\"{reasoning}\"字段，再填写\"{errors}\"数组，并为每个"
            "错误给出 0 到 1 之间的\"{confidence}\"以及\"{justification}\"。",
            "根据上述推理确定总体准确性标签。",
        ),
        "rubric_instruction": (
            "对每条预测，逐条检查评分细则中的每一项，并依据给出的标准判断该错误是【存在】还是"
            "【不存在】；把所有【存在】的错误代码列入\"{errors}\"。"
        ),
        "present_if": "满足以下条件时标记为【存在】：",
        "absent_if": "满足以下条件时标记为【不存在】：",
        "none_listed": "（无）",
        "cluster_focus": (
            "只关注上面列出的错误类型，忽略其他所有可能的问题。但准确性标签仍需针对整条预测给出。"
        ),
        "output_instruction": (
            "为每条预测（{ids}）各返回且仅返回一个条目，并将\"{prediction_id}\"设为其编号。只能"
            "使用上面列出的错误代码；没有错误时将\"{errors}\"留空。\"{accuracy}\"必须是以下之一："
            "{labels}。只用一个 JSON 对象作答，格式必须与下面完全一致："
        ),
        "ph_code": "错误代码",
        "ph_reasoning": "逐步分析",
        "ph_justification": "该错误成立的理由",
    },
}


def texts(lang: str) -> dict:
    """The judge's wording in one prompt language; an unknown language is a clear error."""
    try:
        return TEXTS[lang]
    except KeyError:
        raise ValueError(
            f"unknown prompt language {lang!r}; expected one of {', '.join(PROMPT_LANGUAGES)}"
        ) from None


def field_name(canonical: str, lang: str) -> str:
    return texts(lang)["output_fields"][canonical]


def _key(name: str) -> str:
    """How field names are compared: case-folded, trimmed, spaces and hyphens as underscores."""
    return name.strip().casefold().replace(" ", "_").replace("-", "_")


def field_aliases() -> dict[str, dict[str, str]]:
    """Normalised field name -> {language: canonical name}, over all prompt languages."""
    aliases: dict[str, dict[str, str]] = {}
    for lang, table in TEXTS.items():
        for canonical, translated in table["output_fields"].items():
            aliases.setdefault(_key(translated), {})[lang] = canonical
    return aliases


normalise_field_key = _key
