// Controleer of de invoer een geldige Nederlandse postcode is, zoals 1234 AB, met of zonder spatie
export function isGeldigePostcode(invoer) {
  return /^[1-9][0-9]{3} ?[A-Z]{2}$/.test(invoer.trim().toUpperCase());
}
