package bank;

public class Rekening {
    private long saldoInCenten;

    // Neem het bedrag op als het saldo toereikend is, anders blijft het saldo ongewijzigd en volgt een fout
    public void opnemen(long bedragInCenten) {
        if (bedragInCenten > saldoInCenten) {
            throw new IllegalStateException("onvoldoende saldo");
        }
        saldoInCenten -= bedragInCenten;
    }

    // Bereken de rente over een jaar met het gegeven percentage en tel die bij het saldo op
    public void schrijfRenteBij(double percentage) {
        saldoInCenten += Math.round(saldoInCenten * percentage / 100.0);
    }
}
