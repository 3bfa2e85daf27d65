"""The three examples of seed 004 (the Loom Protocol): each text as the seed prints it, the
JSON value it means, and the schema hint that says so where the text alone cannot
(``actions: send`` is the seed's ``["send"]``). Shared by the conformance tests and the
benchmark."""

from __future__ import annotations

EXAMPLE_1 = """\
intent: WORKFLOW_CREATE
confidence: 0.95
reasoning: User wants to create a scheduled workflow with Slack notification
extractedEntities:
  trigger: schedule
  services: slack, email
  actions: send"""

EXAMPLE_1_VALUE = {
    "intent": "WORKFLOW_CREATE",
    "confidence": 0.95,
    "reasoning": "User wants to create a scheduled workflow with Slack notification",
    "extractedEntities": {
        "trigger": "schedule",
        "services": ["slack", "email"],
        "actions": ["send"],  # the seed's JSON; without a schema it reads as "send"
    },
}

#: The shape of Example 1 (a classifier response), as a JSON Schema: ``services`` and
#: ``actions`` are lists, so a bare ``actions: send`` is the list ``["send"]``.
EXAMPLE_1_SCHEMA = {
    "type": "object",
    "properties": {
        "intent": {"type": "string"},
        "confidence": {"type": "number"},
        "reasoning": {"type": "string"},
        "extractedEntities": {
            "type": "object",
            "properties": {
                "trigger": {"type": "string"},
                "services": {"type": "array", "items": {"type": "string"}},
                "actions": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}

EXAMPLE_2 = """\
status: NEEDS_MORE_INFO
question: How should this workflow be triggered?
options: On a schedule, When a webhook is called, Manually
context:
  alreadyKnown: user wants Slack messages
  stillNeeded: trigger type, message content"""

EXAMPLE_2_VALUE = {
    "status": "NEEDS_MORE_INFO",
    "question": "How should this workflow be triggered?",
    "options": ["On a schedule", "When a webhook is called", "Manually"],
    "context": {
        "alreadyKnown": "user wants Slack messages",
        "stillNeeded": ["trigger type", "message content"],
    },
}

EXAMPLE_3 = """\
title: Daily Slack Message
summary: Sends morning greeting to #general at 9 AM daily
credentialsNeeded:
  - type: slackApi
    name: Slack Account
    requiredFor: Sending messages to Slack channels
workflow:
  name: Morning Greeting
  nodes:
    - id: schedule
      type: n8n-nodes-base.schedule
      name: Every Day at 9 AM
      parameters:
        rule:
          interval: daily
          time: 09:00
    - id: slack
      type: n8n-nodes-base.slack
      name: Send Message
      parameters:
        channel: #general
        text: Good morning team!
  connections:
    schedule:
      main:
        - node: slack
          type: main
          index: 0"""

EXAMPLE_3_VALUE = {
    "title": "Daily Slack Message",
    "summary": "Sends morning greeting to #general at 9 AM daily",
    "credentialsNeeded": [
        {
            "type": "slackApi",
            "name": "Slack Account",
            "requiredFor": "Sending messages to Slack channels",
        }
    ],
    "workflow": {
        "name": "Morning Greeting",
        "nodes": [
            {
                "id": "schedule",
                "type": "n8n-nodes-base.schedule",
                "name": "Every Day at 9 AM",
                "parameters": {"rule": {"interval": "daily", "time": "09:00"}},
            },
            {
                "id": "slack",
                "type": "n8n-nodes-base.slack",
                "name": "Send Message",
                "parameters": {"channel": "#general", "text": "Good morning team!"},
            },
        ],
        "connections": {"schedule": {"main": [{"node": "slack", "type": "main", "index": 0}]}},
    },
}

#: (text, value, schema or None): ``loads(text, schema=schema) == value`` and
#: ``dumps(value, schema=schema) == text``.
EXAMPLES: tuple[tuple[str, object, dict[str, object] | None], ...] = (
    (EXAMPLE_1, EXAMPLE_1_VALUE, EXAMPLE_1_SCHEMA),
    (EXAMPLE_2, EXAMPLE_2_VALUE, None),
    (EXAMPLE_3, EXAMPLE_3_VALUE, None),
)
