package faktury;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;

public class Faktura {
    private final BigDecimal kwotaNetto;
    private final LocalDate dataWystawienia;

    public Faktura(BigDecimal kwotaNetto, LocalDate dataWystawienia) {
        this.kwotaNetto = kwotaNetto;
        this.dataWystawienia = dataWystawienia;
    }

    // Oblicza kwotę brutto, doliczając podatek VAT według podanej stawki i zaokrąglając do groszy
    public BigDecimal kwotaBrutto(BigDecimal stawkaVat) {
        BigDecimal podatek = kwotaNetto.multiply(stawkaVat).divide(BigDecimal.valueOf(100));
        return kwotaNetto.add(podatek).setScale(2, RoundingMode.HALF_UP);
    }

    // Termin płatności przypada dokładnie czternaście dni kalendarzowych po dacie wystawienia faktury
    public LocalDate terminPlatnosci() {
        return dataWystawienia.plusDays(14);
    }
}
