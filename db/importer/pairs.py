"""Placeholder: filled in below."""


def import_pairs(*args, **kwargs):
    raise NotImplementedError
