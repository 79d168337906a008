import re


def policz_slowa(tekst):
    # Zwraca słownik, w którym każdemu słowu przypisana jest liczba jego wystąpień, bez rozróżniania wielkości liter
    licznik = {}
    for slowo in re.findall(r"\w+", tekst.lower()):
        licznik[slowo] = licznik.get(slowo, 0) + 1
    return licznik


def najdluzsze_slowo(tekst):
    # Znajduje najdłuższe słowo w tekście; przy remisie wygrywa to, które pojawiło się wcześniej
    najlepsze = ""
    for slowo in re.findall(r"\w+", tekst):
        if len(slowo) > len(najlepsze):
            najlepsze = slowo
    return najlepsze
