"""What a writer's role may do to the rows the trees' shared tables hold beside the nodes
(``store/roles.py`` installs these with the grants; docs/team.md, "Letting the database
enforce it too"): exactly what Loom's own writes need, and nothing a role may set opens
more.

- **Edges and sources** are made with their node: an ``edge`` leads to a node the same
  transaction inserted (its place among its siblings is set then too, as a split's head
  takes the original's), and an ``edge_source`` row joins such a node to its sources, or
  gives a version or a split's half its share of the original's continuations (the row
  the original has, with its role and position). A tree made in the same transaction (an
  import) takes its file's.
- **Token data** (``node_tokens``) is written, replaced or removed only in the
  transaction that writes its node's text: a node it inserts, or a split's half whose cut
  it moves.
- **Provenance**: a ``generation`` record is of a node the same transaction inserted; a
  ``raw_response`` body is stored before any earlier generation names it (a body the owner
  pruned is not written back by someone else); a ``media`` row is stored under its bytes'
  SHA-256.
- **The summary queue** takes work on a node, tree or document that exists; a worker
  leases a job for at most :data:`SUMMARY_LEASE_S` (by the database's clock, give or take
  ``CLOCK_SKEW_S``), counts its failed attempts one at a time, makes it only more urgent,
  and drops it when done — any worker may finish any job, so dropping is not restricted.
- **Turn locks** (``branch_lock``, by row-level security in ``roles.py``) are taken,
  renewed and released by their holder (the writer, or a model her process runs), for at
  most :data:`TURN_LOCK_S`; anyone else's is taken over or freed only once it has expired
  or its holder's editor session has been silent for ``SESSION_STALE_S`` (both by the
  database's clock: :data:`LOCK_FREE`).

"Inserted by the same transaction" is read from ``loom_text_written`` (``role_guards``),
which only ``SECURITY DEFINER`` triggers write: a row's ``xmin`` would say only that it was
written now, and a writer may update any node's marks."""

from __future__ import annotations

from loom.store.role_guards import (
    CLOCK_SKEW_S,
    PATH,
    REFUSE,
    inserted_now,
    owned_by_the_owner,
    text_written_now,
    trigger,
)
from loom.store.sessions import SESSION_STALE_S

#: The longest a summary worker leases a job (``llm.summaries.LEASE_S``; a retry waits less).
SUMMARY_LEASE_S = 300
#: The longest turn a lock is taken or renewed for (``Positions.acquire_turn``'s ttl).
TURN_LOCK_S = 600

_NOW = "extract(epoch FROM now())"
_MADE_NOW = ("EXISTS (SELECT 1 FROM loom_tree_origin g WHERE g.tree = {tree} "
             "AND g.xact = pg_current_xact_id())")

_EDGE = f"""CREATE OR REPLACE FUNCTION loom_edge_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF EXISTS (SELECT 1 FROM node n WHERE n.id = NEW.target AND n.tree_id = NEW.tree_id
        AND ({_MADE_NOW.format(tree="NEW.tree_id")}
             OR (n.parent IS NOT NULL AND {inserted_now("n.id")}))) THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'an edge you add leads to a node you add (node %)', NEW.target {REFUSE};
  END IF;
  IF {inserted_now("OLD.target")} OR {_MADE_NOW.format(tree="OLD.tree_id")} THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a node''s place among its siblings is set when it is made (node %)',
    OLD.target {REFUSE};
END $$"""

_EDGE_SOURCE = f"""CREATE OR REPLACE FUNCTION loom_edge_source_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  t node%ROWTYPE;
  s node%ROWTYPE;
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  SELECT * INTO t FROM node n WHERE n.id = NEW.target;
  SELECT * INTO s FROM node n WHERE n.id = NEW.node;
  IF t.tree_id = s.tree_id AND ({_MADE_NOW.format(tree="t.tree_id")}
      OR {inserted_now("t.id")}
      OR ({inserted_now("s.id")} AND EXISTS (SELECT 1 FROM edge_source o
          WHERE o.target = NEW.target AND o.role = NEW.role AND o.position = NEW.position
          AND o.node IN (s.edited_from, CASE WHEN s.extra IS NULL THEN NULL
                                        ELSE s.extra::jsonb->>'split_from' END)))) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a source you add joins a node you add (% to %)', NEW.node, NEW.target
    {REFUSE};
END $$"""

_TOKENS = f"""CREATE OR REPLACE FUNCTION loom_tokens_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() OR ((TG_OP = 'INSERT' OR {text_written_now("OLD.node")})
      AND (TG_OP = 'DELETE' OR {text_written_now("NEW.node")})) THEN
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'token data is written with its node''s text (node %)',
    CASE WHEN TG_OP = 'INSERT' THEN NEW.node ELSE OLD.node END {REFUSE};
END $$"""

_GENERATION = f"""CREATE OR REPLACE FUNCTION loom_generation_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() OR {inserted_now("NEW.node")} THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a generation record is of a node you add (node %)', NEW.node {REFUSE};
END $$"""

# (generation rows are never updated by a writer, so their xmin says when they were made)
_RAW = f"""CREATE OR REPLACE FUNCTION loom_raw_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() OR NOT EXISTS (SELECT 1 FROM generation g WHERE g.raw = NEW.id
      AND NOT loom_written_now(g.xmin)) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a raw response is stored with its generation (%)', NEW.id {REFUSE};
END $$"""

_MEDIA = f"""CREATE OR REPLACE FUNCTION loom_media_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() OR (NEW.sha256 = encode(sha256(NEW.data), 'hex')
      AND NEW.size = length(NEW.data)) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'media are stored under their bytes'' SHA-256 (%)', NEW.sha256 {REFUSE};
END $$"""

_LEASED = (f"a summary job is leased until at most {SUMMARY_LEASE_S + CLOCK_SKEW_S} s past the "
           "database''s clock, counts its attempts one at a time and only grows more urgent "
           "(job %)")

_JOB_NEW = f"""CREATE OR REPLACE FUNCTION loom_job_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF NEW.attempts = 0 AND NEW.not_before <= {_NOW} + {SUMMARY_LEASE_S + CLOCK_SKEW_S}
        AND (CASE NEW.kind
          WHEN 'node' THEN EXISTS (SELECT 1 FROM node n WHERE n.id = NEW.entity
                                   AND n.tree_id = NEW.tree)
          WHEN 'tree' THEN NEW.tree = NEW.entity
                           AND EXISTS (SELECT 1 FROM tree t WHERE t.id = NEW.entity)
          WHEN 'doc' THEN NEW.tree IS NULL
                          AND EXISTS (SELECT 1 FROM document d WHERE d.id = NEW.entity)
          ELSE false END) THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'a summary job you queue is work on a node, tree or document (% %)',
      NEW.kind, NEW.entity {REFUSE};
  END IF;
  IF NEW.attempts IN (OLD.attempts, OLD.attempts + 1) AND NEW.priority <= OLD.priority
      AND NEW.not_before <= {_NOW} + {SUMMARY_LEASE_S + CLOCK_SKEW_S} THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION '{_LEASED}', OLD.id {REFUSE};
END $$"""

#: Whether anyone may take over or free a turn lock: it has expired, or its holder's
#: editor session on the process that took it has gone silent (a crashed editor: the
#: holder's sessions are the holder's own rows, so nobody else can make one look silent).
LOCK_FREE = (f"expires <= {_NOW} OR loom_lock_silent(participant, host, pid)")

_LOCK_SILENT = f"""CREATE OR REPLACE FUNCTION loom_lock_silent(who text, h text, p integer)
RETURNS boolean LANGUAGE sql STABLE {PATH} AS $$
  SELECT EXISTS (SELECT 1 FROM editor_session s WHERE s.participant = who AND s.host = h
                 AND s.pid = p)
     AND NOT EXISTS (SELECT 1 FROM editor_session s WHERE s.participant = who
                     AND s.host = h AND s.pid = p
                     AND s.heartbeat > {_NOW} - {SESSION_STALE_S:g})
$$"""

#: what a lock its holder writes may say (``roles.py``'s policies)
LOCK_TAKEN = f"expires <= {_NOW} + {TURN_LOCK_S + CLOCK_SKEW_S}"

_FUNCTIONS = ("loom_edge_guard()", "loom_edge_source_guard()", "loom_tokens_guard()",
              "loom_generation_guard()", "loom_raw_guard()", "loom_media_guard()",
              "loom_job_guard()", "loom_lock_silent(text, text, integer)")


def statements() -> list[str]:
    """The functions and triggers (idempotent; run by the owner after ``role_guards``)."""
    return [
        _EDGE, _EDGE_SOURCE, _TOKENS, _GENERATION, _RAW, _MEDIA, _JOB_NEW, _LOCK_SILENT,
        owned_by_the_owner(_FUNCTIONS),
        *trigger("loom_edge_made", "edge", "BEFORE INSERT OR UPDATE", "loom_edge_guard"),
        *trigger("loom_source_made", "edge_source", "BEFORE INSERT", "loom_edge_source_guard"),
        *trigger("loom_tokens_written", "node_tokens", "BEFORE INSERT OR UPDATE OR DELETE",
                 "loom_tokens_guard"),
        *trigger("loom_generation_made", "generation", "BEFORE INSERT",
                 "loom_generation_guard"),
        *trigger("loom_raw_made", "raw_response", "BEFORE INSERT", "loom_raw_guard"),
        *trigger("loom_media_made", "media", "BEFORE INSERT", "loom_media_guard"),
        *trigger("loom_job_queued", "summary_job", "BEFORE INSERT", "loom_job_guard"),
        # (an enqueue that finds its job queued and changes nothing is not checked again)
        *trigger("loom_job_leased", "summary_job", "BEFORE UPDATE", "loom_job_guard",
                 " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}"
                             for c in ("priority", "attempts", "not_before"))),
    ]
