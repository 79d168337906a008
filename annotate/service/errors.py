"""The errors of the labelling service: each is shown to its user as one clear sentence."""

from nlce.cli import UserError


class AnnotateError(UserError):
    """A problem the app shows to its user as one clear sentence; nothing was changed."""


class AuthError(AnnotateError):
    pass


class ItemGoneError(AnnotateError):
    pass


class NotAssignedError(AnnotateError):
    pass


class LabelError(AnnotateError):
    pass


class NotAllowedError(AuthError):
    """The acting account may not do this (a lead action by a non-lead, or a deactivated one)."""
