"""The judge's prompt wording per language (YAML, loaded by judges.i18n); a package so that it
ships with the install."""
