def mesos_oros(vathmoi):
    # Υπολογίζει τον μέσο όρο των βαθμών και επιστρέφει μηδέν όταν η λίστα είναι κενή
    if not vathmoi:
        return 0.0
    return sum(vathmoi) / len(vathmoi)


def charaktirismos(vathmos):
    # Μετατρέπει τον αριθμητικό βαθμό σε χαρακτηρισμό: άριστα από 18 και πάνω, αλλιώς καλώς ή ανεπαρκώς
    if vathmos >= 18:
        return "άριστα"
    if vathmos >= 10:
        return "καλώς"
    return "ανεπαρκώς"
