// Ξεκινά αντίστροφη μέτρηση από τα δευτερόλεπτα που δίνονται και καλεί τη συνάρτηση όταν φτάσει στο μηδέν
export function antistrofiMetrisi(deuterolepta, otanTeleiosei) {
  let ypoloipa = deuterolepta;
  const id = setInterval(() => {
    ypoloipa -= 1;
    if (ypoloipa <= 0) {
      clearInterval(id);
      otanTeleiosei();
    }
  }, 1000);
  return () => clearInterval(id);
}
