import csv


def lees_voorraad(pad):
    # Lees het CSV-bestand met artikelen in en geef een woordenboek van artikelcode naar aantal terug
    voorraad = {}
    with open(pad, newline="", encoding="utf-8") as bestand:
        for rij in csv.DictReader(bestand):
            voorraad[rij["code"]] = int(rij["aantal"])
    return voorraad


def bijna_op(voorraad, drempel=5):
    # Geef de codes van alle artikelen waarvan minder dan de drempel op voorraad is, gesorteerd
    return sorted(code for code, aantal in voorraad.items() if aantal < drempel)
