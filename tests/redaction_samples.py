"""One or more samples of every credential shape in ``loom.redact.PATTERNS``.

Built from seeded random bodies at import time rather than written out, so no file in the
repository holds a string a secret scanner would take for a real key. Each sample is
``(pattern name, text as it would appear, the secret part that must disappear)``.
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import NamedTuple

_rng = random.Random(20250101)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "/+"


def body(alphabet: str, n: int) -> str:
    """``n`` random characters from ``alphabet``, with at least one digit (as real keys
    of that length have)."""
    while True:
        text = "".join(_rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in text) or not any(c.isdigit() for c in alphabet):
            return text


class Sample(NamedTuple):
    pattern: str
    text: str
    secret: str


def _key(pattern: str, key: str) -> Sample:
    return Sample(pattern, key, key)


def _in(pattern: str, before: str, secret: str, after: str = "") -> Sample:
    return Sample(pattern, before + secret + after, secret)


def _jwt() -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return ".".join([part({"alg": "HS256", "typ": "JWT"}),
                     part({"sub": body(ALNUM, 12), "iat": 1700000000}),
                     body(URLSAFE, 43)])


def _pem(kind: str) -> tuple[str, str]:
    lines = [body(B64, 64) for _ in range(4)]
    block = (f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(lines) +
             f"\n-----END {kind}PRIVATE KEY-----")
    return block, lines[1]


_rsa, _rsa_line = _pem("RSA ")
_ssh, _ssh_line = _pem("OPENSSH ")
_aws_id = "AKIA" + body(UPPER, 16)
_aws_secret = body(B64, 40)
_basic = base64.b64encode(f"admin:{body(ALNUM, 14)}".encode()).decode()

SAMPLES: list[Sample] = [
    _key("anthropic_api_key", "sk-ant-api03-" + body(URLSAFE, 93) + "AA"),
    _key("anthropic_admin_key", "sk-ant-admin01-" + body(URLSAFE, 80)),
    _key("openai_project_key", "sk-proj-" + body(URLSAFE, 156)),
    _key("openai_service_account_key", "sk-svcacct-" + body(URLSAFE, 120)),
    _key("openai_admin_key", "sk-admin-" + body(ALNUM, 48)),
    _key("openrouter_key", "sk-or-v1-" + body(HEX, 64)),
    _key("sk_key", "sk-" + body(ALNUM, 48)),
    _key("groq_key", "gsk_" + body(ALNUM, 52)),
    _key("replicate_token", "r8_" + body(ALNUM, 37)),
    _key("huggingface_token", "hf_" + body(ALNUM, 34)),
    *[_key("github_token", prefix + body(ALNUM, 36))
      for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")],
    _key("github_fine_grained_pat", "github_pat_" + body(ALNUM, 22) + "_" + body(ALNUM, 59)),
    _key("gitlab_pat", "glpat-" + body(URLSAFE, 20)),
    _key("gitlab_token", "glptt-" + body(HEX, 40)),
    _key("npm_token", "npm_" + body(ALNUM, 36)),
    _key("pypi_token", "pypi-AgEIcHlwaS5vcmc" + body(URLSAFE, 120)),
    *[_key("slack_token", f"xox{c}-{body(string.digits, 12)}-{body(string.digits, 13)}-"
           f"{body(ALNUM, 24)}") for c in "abprs"],
    _in("slack_webhook", "https://hooks.slack.com/services/",
        f"T{body(UPPER, 8)}/B{body(UPPER, 10)}/{body(ALNUM, 24)}"),
    _key("stripe_secret_key", "sk_live_" + body(ALNUM, 99)),
    _key("stripe_secret_key", "sk_test_" + body(ALNUM, 24)),
    _key("stripe_restricted_key", "rk_live_" + body(ALNUM, 99)),
    _key("stripe_webhook_secret", "whsec_" + body(ALNUM, 32)),
    _key("twilio_api_key", "SK" + body(HEX, 32)),
    _key("sendgrid_api_key", "SG." + body(URLSAFE, 22) + "." + body(URLSAFE, 43)),
    _key("telegram_bot_token", body(string.digits, 10) + ":AA" + body(URLSAFE, 33)),
    _key("aws_access_key_id", _aws_id),
    _key("aws_access_key_id", "ASIA" + body(UPPER, 16)),
    _in("aws_secret_access_key", "aws_secret_access_key = ", _aws_secret),
    _in("aws_secret_access_key", "AWS secret key: ", body(B64, 40), "."),
    _in("aws_secret_after_key_id", f"Access key ID,Secret access key\n{_aws_id},",
        body(B64, 40), "\n"),
    _key("google_api_key", "AIza" + body(URLSAFE, 35)),
    _key("google_oauth_client_secret", "GOCSPX-" + body(URLSAFE, 28)),
    _key("google_oauth_access_token", "ya29." + body(URLSAFE, 100)),
    _in("azure_connection_string_key",
        "DefaultEndpointsProtocol=https;AccountName=loomdata;AccountKey=",
        body(B64, 86) + "==", ";EndpointSuffix=core.windows.net"),
    _key("digitalocean_token", "dop_v1_" + body(HEX, 64)),
    _key("databricks_token", "dapi" + body(HEX, 32)),
    _key("atlassian_api_token", "ATATT3xFfGF0" + body(URLSAFE + "=", 180)),
    _key("linear_api_key", "lin_api_" + body(ALNUM, 40)),
    _key("notion_token", "ntn_" + body(ALNUM, 46)),
    _key("notion_integration_secret", "secret_" + body(ALNUM, 43)),
    _key("shopify_token", "shpat_" + body(HEX, 32)),
    _key("age_secret_key", "AGE-SECRET-KEY-1" + body(UPPER, 58)),
    _key("jwt", _jwt()),
    Sample("private_key_block", _rsa, _rsa_line),
    Sample("private_key_block", _ssh, _ssh_line),
    _in("bearer_token", "curl -H 'Authorization: Bearer ", body(URLSAFE + ".", 40), "'"),
    _in("bearer_token", "the token was Bearer ", body(URLSAFE, 32), " and it worked"),
    _in("credential_field", 'password = "', body(ALNUM, 14), '"'),
    _in("credential_field", "export OPENAI_API_KEY=", "opaque" + body(ALNUM, 20)),
    _in("credential_field", '{"client_secret": "', body(URLSAFE, 30), '"}'),
    _in("credential_field", "X-Api-Key: ", body(ALNUM, 32)),
    _in("credential_field", "Authorization: Basic ", _basic),
    _in("credential_field", "My API key: ", body(ALNUM, 24)),
    _in("credential_field", "TWILIO_AUTH_TOKEN=", body(HEX, 32)),
    _in("conninfo_quoted_password", "connection to host=db.lab password='",
        body(ALNUM, 9) + " " + body(ALNUM, 7), "' user=bob failed"),
    _in("url_password", "postgres://app:", body(ALNUM, 16), "@db.internal:5432/prod"),
    _in("url_password", "mongodb+srv://reader:", body(ALNUM, 12), "@cluster0.example.net/x"),
    _in("url_password", "git clone https://loom:", body(ALNUM, 20), "@git.example.com/a.git"),
    _in("url_query_credential", "https://api.example.com/v1/items?api_key=",
        body(ALNUM, 24), "&n=2"),
]
