"""The server's settings: ``initializationOptions`` and ``didChangeConfiguration``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Settings(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    database: str | None = None
    # who this editor acts as; unset: $LOOM_PARTICIPANT, the PostgreSQL user, else "human"
    participant: str | None = None
    default_n: int = Field(default=3, alias="defaultN", ge=1, le=10)
    default_tokens: int = Field(default=50, alias="defaultTokens", ge=1, le=4096)
    inlay_hints: bool = Field(default=True, alias="inlayHints")
    # Which node boundaries get a marker (one on every boundary, mid-sentence, clutters
    # the prose): "siblings" where a node has alternatives (or no
    # text), "all" at every boundary. Authorship shows in the text's colour either way.
    markers: Literal["siblings", "all"] = "siblings"
    document_provider: Literal["textDocumentContent", "fileSystem", "bufReadCmd"] = Field(
        default="textDocumentContent", alias="documentProvider")
    run_on_save: bool = Field(default=True, alias="runOnSave")
    watch_interval_s: float = Field(default=0.5, alias="watchInterval", ge=0.05)
    # How long a request to the editor (showDocument, applyEdit, progress) may go
    # unanswered before the server stops waiting: no request of the client's waits forever
    # on an editor that never answers.
    client_timeout_s: float = Field(default=10.0, alias="clientTimeout", gt=0, le=600)
    # The collaborator: answers annotations addressed to it (@collaborator …) in open trees;
    # opt-in, takes a turn by itself once the human's activity settles; opt-in, asks the
    # human before each write (seed 003's ask_user).
    collaborator_triggers: bool = Field(default=True, alias="collaboratorTriggers")
    collaborator_autonomous: bool = Field(default=False, alias="collaboratorAutonomous")
    collaborator_settle_s: float = Field(default=30.0, alias="collaboratorSettle", ge=1.0)
    collaborator_approval: bool = Field(default=False, alias="collaboratorApproval")
    # Token probabilities: colour model text by probability (the toggle), continue
    # from an alternative after branching with it, offer a path's continuations as inline
    # suggestions at the end of the buffer.
    probabilities: bool = False
    alternative_continues: bool = Field(default=True, alias="alternativeContinues")
    inline_suggestions: bool = Field(default=True, alias="inlineSuggestions")


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, str | None]:
    """Settings from a client's JSON (``{"loom": {...}}`` or the bare object); on bad input
    the previous settings stay and the error is returned for a message."""
    base = base or Settings()
    if raw is None:
        return base, None
    if isinstance(raw, dict) and isinstance(raw.get("loom"), dict):
        raw = raw["loom"]
    if not isinstance(raw, dict):
        return base, f"settings must be an object, not {type(raw).__name__}"
    merged = {**base.model_dump(by_alias=True), **raw}
    try:
        return Settings.model_validate(merged), None
    except ValidationError as err:
        return base, f"invalid Loom settings: {err.errors()[0]['msg']}"
