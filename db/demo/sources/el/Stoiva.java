package domes;

import java.util.Arrays;

public class Stoiva {
    private int[] stoixeia = new int[4];
    private int megethos = 0;

    // Προσθέτει ένα στοιχείο στην κορυφή της στοίβας και διπλασιάζει τον πίνακα όταν γεμίσει
    public void push(int timi) {
        if (megethos == stoixeia.length) {
            stoixeia = Arrays.copyOf(stoixeia, stoixeia.length * 2);
        }
        stoixeia[megethos++] = timi;
    }

    // Αφαιρεί και επιστρέφει το στοιχείο της κορυφής· αν η στοίβα είναι άδεια πετάει εξαίρεση
    public int pop() {
        if (megethos == 0) {
            throw new IllegalStateException("άδεια στοίβα");
        }
        return stoixeia[--megethos];
    }
}
