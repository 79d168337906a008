"""What the labelling app does, as functions over a database session and plain data. The
Streamlit pages are a thin shell around this package; every name is importable from here
(`from annotate import service; service.save_label(...)`), whichever module holds it:

- `accounts`: accounts, the password policy, the interface language, and `require_role`: every
  lead action takes the acting account (`acting=`: an account id, or `OPERATOR` for commands
  run with direct database access) and refuses anyone else with NotAllowedError;
- `signin`: password sign-in with a per-client rate limit and lockout, OIDC, server-side
  sessions;
- `queue`: an annotator's queue, progress and moving between items;
- `labelling`: one item as its annotator sees it (blind: only the caller's own label) and
  saving labels through `db.annotations` (history, optimistic concurrency), skip and flag;
- `assignment`: planning and storing assignments, the team's progress;
- `plans`: label plans (assign by need: draws where a judge is least reliable) and their stop
  rule;
- `review`: finished labels for analysis, disagreements and adjudication into gold labels,
  which label counts per item, inter-annotator agreement;
- `tables`: the study's Tables 1 and 2;
- `flags`: flagged labels and the lead's answers to them.
"""
from annotate.service.accounts import (
                                       LEAD_ROLES,
                                       MIN_PASSWORD_LENGTH,
                                       OPERATOR,
                                       POLICY,
                                       ROLES,
                                       AnnotatorInfo,
                                       Operator,
                                       all_annotators,
                                       check_password,
                                       create_annotator,
                                       get_annotator,
                                       list_annotators,
                                       require_role,
                                       revoke_sessions,
                                       set_interface_language,
                                       update_annotator,
)
from annotate.service.assignment import (
                                       Assigned,
                                       ItemRef,
                                       Shortfall,
                                       assign,
                                       assign_items,
                                       models_to_assign,
                                       plan_assignments,
                                       team_progress,
                                       unassign_open,
)
from annotate.service.errors import (
                                       AnnotateError,
                                       AuthError,
                                       ItemGoneError,
                                       LabelError,
                                       NotAllowedError,
                                       NotAssignedError,
)
from annotate.service.flags import answer_flag, flag_answer, flagged_items, open_flag_count
from annotate.service.labelling import (
                                       MAX_SECONDS_PER_VISIT,
                                       ItemView,
                                       OwnLabel,
                                       Saved,
                                       is_stale_error,
                                       load_item,
                                       own_history,
                                       own_label,
                                       save_label,
                                       status_after_change,
                                       validate_codes,
                                       validate_label,
                                       visit_seconds,
)
from annotate.service.plans import (
                                       PlanAssigned,
                                       PlanDraft,
                                       PlanError,
                                       PlanRequest,
                                       assign_plan,
                                       draft_plan,
                                       make_plan,
                                       plan_options,
                                       plan_statuses,
)
from annotate.service.queue import (
                                       MAX_SEARCH_CHARS,
                                       Progress,
                                       QueueEntry,
                                       QueueState,
                                       first_open,
                                       index_of,
                                       median_done_seconds,
                                       next_open,
                                       progress_of,
                                       queue_for,
                                       search_queue,
                                       step,
)
from annotate.service.review import (
                                       Disagreement,
                                       HumanLabel,
                                       LanguageAgreement,
                                       ResolvedLabel,
                                       accept_label,
                                       accuracy_matrix,
                                       adjudicate,
                                       agreement_by_language,
                                       comment_pair,
                                       find_disagreements,
                                       finished_labels,
                                       gold_history,
                                       gold_labels,
                                       item_for_review,
                                       majority_label,
                                       reject_label,
                                       resolve_labels,
)
from annotate.service.signin import (
                                       LOCKOUT,
                                       MAX_FAILURES,
                                       RATE_BURST,
                                       RATE_INTERVAL,
                                       SESSION_LIFETIME,
                                       SIGN_IN_FAILED,
                                       SignInGate,
                                       TooManyAttempts,
                                       annotator_for_email,
                                       authenticate,
                                       end_session,
                                       session_account,
                                       start_session,
)
from annotate.service.tables import (
    accuracy_table,
    error_table,
    export_jsonl,
    quality_rows,
    rows_to_csv,
)
from db.annotations import StaleAnnotationError, max_note_chars

__all__ = [
    "LEAD_ROLES", "MIN_PASSWORD_LENGTH", "OPERATOR", "POLICY", "ROLES", "AnnotatorInfo", "Operator",
    "all_annotators", "check_password", "create_annotator", "get_annotator", "list_annotators",
    "require_role", "revoke_sessions", "set_interface_language", "update_annotator",
    "LOCKOUT", "MAX_FAILURES", "RATE_BURST", "RATE_INTERVAL", "SESSION_LIFETIME",
    "SIGN_IN_FAILED", "SignInGate", "TooManyAttempts", "annotator_for_email",
    "authenticate", "end_session", "session_account", "start_session",
    "Assigned", "ItemRef", "Shortfall", "assign", "assign_items", "models_to_assign",
    "plan_assignments", "team_progress", "unassign_open",
    "answer_flag", "flag_answer", "flagged_items", "open_flag_count",
    "PlanAssigned", "PlanDraft", "PlanError", "PlanRequest", "assign_plan", "draft_plan",
    "make_plan", "plan_options", "plan_statuses",
    "AnnotateError", "AuthError", "ItemGoneError", "LabelError", "NotAllowedError",
    "NotAssignedError",
    "MAX_SECONDS_PER_VISIT", "ItemView", "OwnLabel", "Saved", "is_stale_error", "load_item",
    "max_note_chars",
    "own_history", "own_label", "save_label", "status_after_change", "validate_codes",
    "validate_label",
    "visit_seconds",
    "Progress", "QueueEntry", "QueueState", "first_open", "index_of", "median_done_seconds",
    "next_open", "progress_of",
    "queue_for", "search_queue", "step", "MAX_SEARCH_CHARS",
    "Disagreement", "HumanLabel", "LanguageAgreement", "ResolvedLabel", "accept_label",
    "accuracy_matrix", "reject_label",
    "adjudicate", "agreement_by_language", "comment_pair", "find_disagreements",
    "finished_labels", "gold_history", "gold_labels", "item_for_review", "majority_label",
    "resolve_labels",
    "accuracy_table", "error_table", "export_jsonl", "quality_rows", "rows_to_csv",
    "StaleAnnotationError",
]
