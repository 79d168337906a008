// Pobiera adres URL i w razie błędu sieci ponawia próbę do trzech razy, czekając coraz dłużej między próbami
export async function pobierzZPonawianiem(url, proby = 3) {
  for (let i = 0; i < proby; i++) {
    try {
      return await fetch(url);
    } catch (blad) {
      if (i === proby - 1) throw blad;
      await new Promise((r) => setTimeout(r, 500 * 2 ** i));
    }
  }
}
