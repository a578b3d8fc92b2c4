"""The one redaction layer: every text passes it before it is stored or put in a model's context.

Two detector sets run in order over a text:

1. **Shapes** (``_PATTERNS``, standard-library regexes over the whole text): private-key and PGP
   blocks, provider tokens (AWS, GitHub, GitLab, npm, Hugging Face, SendGrid, Slack, Stripe, OpenAI,
   Google, PyPI, JWT), AWS secret access keys, ``DB_PASSWORD=``-style assignments (``_`` counts as a
   word boundary), JSON/YAML ``"password": "..."`` pairs, passwords in URLs (``redis://:pw@``),
   ``Authorization: Basic ...``, Azure ``AccountKey=``, ``.netrc`` and kubeconfig fields.
2. **detect-secrets** (Yelp's plugins, loaded once per process on first use): its provider detectors,
   its keyword detector and its entropy checks, each candidate passed through its heuristic filters
   (sequential strings, UUIDs, ids, templates, ``$VAR`` and indirect references).  Only lines that
   can hold a secret (a long token with a digit, a secret-sounding word, a quote-delimited token)
   are handed to it, which keeps ordinary code cheap (``bench/redact_cost.py`` measures it).  Its
   ``scan_line`` is deliberately not used: under ``default_settings`` it reports unfiltered candidates.

Each secret becomes ``[REDACTED:<kind>]`` (the secret part only: ``DB_PASSWORD=[REDACTED:...]``), so
what the text was about survives.  When detect-secrets is missing the shapes still run.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from contextware.core.text import plain_text

if TYPE_CHECKING:
    from contextware.core.errors import ErrorBody

MASK = "[REDACTED]"
_MASK_RE = re.compile(r"\[REDACTED(?::[a-z_]+)?\]")

# Values that name a secret rather than being one: placeholders, references, templates.
_PLACEHOLDER = re.compile(
    r"""^(?:\[REDACTED(?::[a-z_]+)?\]|<[^>]*>|\$\{?[A-Za-z_][\w.]*\}?|\{\{.*\}\}|%\(?\w*\)?s?|\*+|x+|\.\.\.+|
        (?:none|null|nil|true|false|undefined|changeme|password|secret|your[_-]?\w*|example\w*|redacted|
        required|optional|str|string|bytes|int|env|getenv)\W*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_NEXT_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# An unquoted value that is code, not a secret: a call, an index, an attribute path.
_CODE_VALUE = re.compile(r"^[A-Za-z_][\w]*(?:[.(\[]|$)")

_KEYWORDS = (
    r"(?:passw(?:or)?d|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|"
    r"client[_-]?secret|credentials?|(?:auth|access|refresh|api|bearer|bot|oauth|session|personal|deploy|"
    r"github|gitlab|npm|slack|hf)[_-]?token|_?authtoken)"
)
# A secret-sounding name ends with its keyword (DB_PASSWORD, aws_secret_access_key, _authToken),
# optionally followed by a suffix that still names the secret (SECRET_KEY_BASE).
_NAME_END = r"(?:[_-]?(?:base|value|b64|base64))?"

_SECRET_KEY = re.compile(_KEYWORDS + _NAME_END + r"$", re.IGNORECASE)


class _Pattern(NamedTuple):
    name: str
    regex: re.Pattern[str]
    group: int  # the group holding the secret; 0 the whole match; -1 the first of "…", '…', bare
    check: Callable[[str], bool] | None  # is the candidate a secret (not a placeholder, not code)?
    needles: tuple[str, ...]  # lowercase; the pattern only runs on lines holding one of them


_SNAKE_NAME = re.compile(r"^[a-z]+(?:_[a-z]+)+$")


def _secretish(value: str) -> bool:
    """A quoted or clearly delimited value that is not a placeholder, a template or a snake_case name."""
    return sum(c.isalnum() for c in value) >= 4 and not _PLACEHOLDER.match(value) and not _SNAKE_NAME.match(value)


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _unquoted_secretish(value: str) -> bool:
    """An unquoted value after ``name=``: not a placeholder, not code such as ``request.form[...]``."""
    if len(value) < 6 or _PLACEHOLDER.match(value) or any(c in value for c in "()[]{}"):
        return False
    if _NEXT_ASSIGNMENT.match(value):  # `DB_PASSWORD= DEBUG=1`: an empty value, then the next setting
        return False
    return not (_CODE_VALUE.match(value) and not any(c.isdigit() for c in value))


def _aws_secret(value: str) -> bool:
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and ("/" in value or "+" in value)
    )


# A value said in words (the password "is", "was", ":" a value): it has a digit or a symbol, or mixes
# case inside the word, so "the token is expired" and "the password is stored in vault" stay.
_SAID_SYMBOLS = frozenset("!@#$%^&*+=~/")


def _said_secret(value: str) -> bool:
    value = value.rstrip(".!?:")
    if len(value) < 6 or _PLACEHOLDER.match(value) or value.startswith(("http://", "https://", "~", "/", "./")):
        return False
    if value.isdigit():
        return len(value) >= 8
    return (
        any(c.isdigit() for c in value)
        or any(c in _SAID_SYMBOLS for c in value)
        or (any(c.isupper() for c in value[1:]) and any(c.islower() for c in value))
    )


def _generated(value: str) -> bool:
    """A value named by no verb ("password" then the value): it must look generated, a digit with a
    symbol or with both cases, so "password sha256" or "password PostgreSQL" stay."""
    if not _said_secret(value):
        return False
    value = value.rstrip(".!?:")
    digit = any(c.isdigit() for c in value)
    return digit and (
        any(c in _SAID_SYMBOLS for c in value) or (any(c.isupper() for c in value) and any(c.islower() for c in value))
    )


# A value on a command line: quoted, or a bare word that is not the next option.
_CLI_VALUE = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'`\-][^\s\"'`,;)]*)"
_METAVAR = re.compile(r"^[A-Z][A-Z_]*$")


def _cli_secret(value: str) -> bool:
    """A password given on a command line (``-pS3cret``), not a variable or a placeholder."""
    value = value.strip("\"'").rstrip(".:")
    return len(value) >= 4 and not _PLACEHOLDER.match(value) and "$" not in value


def _cli_flag_secret(value: str) -> bool:
    """``--password VALUE``: also not a usage string's metavar (``--password TEXT``)."""
    return _cli_secret(value) and not _METAVAR.match(value.strip("\"'").rstrip(".:"))


# "password X": the keyword, what it is for, then the value (the verbs of said_secret excluded).
_SAID_PASSWORD = (
    r"(?:pass(?:word|phrase|code)|passwd|pwd)s?(?:\s+(?:for|of|on|to|in|at)\s+(?:the\s+)?[\w.@:/\-]+)?[ \t]+"
    r"(?!(?:is|was|are|were|will|has|became|becomes|reads|for|of|on|to|in|at)\b)"
    r"[\"'`]?([^\s\"'`,;()\[\]{}<>=]{5,}[^\s\"'`,;()\[\]{}<>.?:=])(?=[.!?:]*(?:[\s\"'`,;)\]}>]|$))"
)
_VERB = (
    r"(?i)\b(?:use|using|used|with|enter|entered|type|typed|try|tried|set|login|log\s+in|sign\s+in)\s+"
    r"(?:(?:with|the|a|this|my|our|your|its|admin|root|db|database|new|old|temporary|temp|default|wifi|"
    r"account|user|ssh|sudo|master)\s+){0,3}"
)


def _p(
    name: str, regex: str, group: int = 0, check: Callable[[str], bool] | None = None, needles: tuple[str, ...] = ()
) -> _Pattern:
    return _Pattern(name, re.compile(regex), group, check, needles)


_KEY_NEEDLES = (
    "pass",
    "pwd",
    "secret",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "access-key",
    "privatekey",
    "private_key",
    "private-key",
    "credential",
    "authtoken",
    "_token",
    "-token",
)
# Patterns with needles run only on the lines holding one of them (lowercase); the others run over
# the whole text (they start with a literal, or must span lines).
_PATTERNS: list[_Pattern] = [
    _p(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)",
    ),
    _p(
        "aws_access_key",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}(?![A-Z0-9])",
        needles=("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
    ),
    _p(
        "aws_secret_key",
        r"(?i)secret_?(?:access)?_?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
        needles=("secret",),
    ),
    _p("aws_secret_key", r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", 0, _aws_secret),
    _p(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _p(
        "gitlab_token",
        r"\bgl(?:pat|dt|ptt|rt|cbt|soat|ft)-[A-Za-z0-9_\-]{20,}",
        needles=("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "glsoat-", "glft-"),
    ),
    _p("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", needles=("npm_",)),
    _p("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b", needles=("hf_",)),
    _p("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}", needles=("sg.",)),
    _p("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", needles=("pypi-age",)),
    _p("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b", needles=("aiza",)),
    _p("google_oauth", r"\b(?:GOCSPX-[A-Za-z0-9_\-]{20,}|ya29\.[A-Za-z0-9_\-]{20,})", needles=("gocspx-", "ya29.")),
    _p("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", needles=("dop_v1_", "doo_v1_", "dor_v1_")),
    _p("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", needles=("shpat_", "shpca_", "shppa_", "shpss_")),
    _p("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b", needles=("dapi",)),
    _p("linear_key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b", needles=("lin_api_", "lin_oauth_")),
    _p("postman_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", needles=("pmak-",)),
    _p("docker_token", r"\bdckr_pat_[A-Za-z0-9_\-]{27,}", needles=("dckr_pat_",)),
    _p(
        "grafana_token",
        r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
        needles=("glsa_", "glc_"),
    ),
    _p("vault_token", r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}", needles=("hvs.", "hvb.")),
    _p("sentry_token", r"\bsntr[ysu]_[A-Za-z0-9+/=_\-]{40,}", needles=("sntrys_", "sntryu_")),
    _p("atlassian_token", r"\bATATT3[A-Za-z0-9_\-=]{100,}", needles=("atatt3",)),
    _p("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", needles=("age-secret-key-",)),
    _p("square_token", r"\bsq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}", needles=("sq0atp-", "sq0csp-")),
    _p("rubygems_key", r"\brubygems_[a-f0-9]{48}\b", needles=("rubygems_",)),
    _p("anthropic_admin_key", r"\bsk-ant-admin\d\d-[A-Za-z0-9_\-]{20,}", needles=("sk-ant-admin",)),
    _p("openai_key", r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{20,}\b", needles=("sk-",)),
    _p("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b", needles=("_live_", "_test_")),
    _p("slack_token", r"\bxox[abposre]-[0-9A-Za-z\-]{10,}\b", needles=("xox",)),
    _p("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    _p("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", needles=("eyj",)),
    _p(
        "azure_key",
        r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*([^;\s\"']{16,})",
        1,
        needles=("accountkey", "sharedaccess"),
    ),
    _p(
        "authorization_header",
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token|digest|negotiate)\s+([A-Za-z0-9+/=._~\-]{8,})",
        1,
        needles=("authorization",),
    ),
    _p("bearer_token", r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/\-]{16,}=*)", 1, _has_digit, ("bearer",)),
    # scheme://user:password@host, including an empty user (redis://:pw@host)
    _p(
        "url_password",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://(?:\[REDACTED:\w+\]|[^\s:/@])*:([^\s@/]+)@",
        1,
        _secretish,
        ("://",),
    ),
    _p("netrc_password", r"(?i)\b(?:login|user)\s+\S+\s+password\s+(\S+)", 1, _secretish, ("password",)),
    _p("kubeconfig_key", r"(?i)\bclient-key-data\s*:\s*([A-Za-z0-9+/=]{16,})", 1, needles=("client-key-data",)),
    # "password": "...", 'api_key': '...', password: "..." (JSON, YAML, Python dicts)
    _p(
        "password_assignment",
        r"(?i)(?<![\w.\-])[\"']?[\w.\-]*" + _KEYWORDS + _NAME_END + r"[\"']?[ \t]*:[ \t]*[\"']([^\"'\n]{4,})[\"']",
        1,
        _secretish,
        _KEY_NEEDLES,
    ),
    # said in words: the admin password is ..., token: ..., the secret key for prod was ...
    _p(
        "said_secret",
        r"(?i)\b(?:password|passphrase|passcode|passwd|pwd|pin\s+code|secret(?:[ _-]?key)?|api[ _-]?key|"
        r"access[ _-]?key|(?:(?:api|access|auth|bearer|bot|deploy|refresh|session|personal[ _-]access)[ _-]?)?token|"
        r"credentials?)(?:\s+(?:for|of|on|to|in|at)\s+(?:the\s+)?[\w.@:/\-]+)?"
        r"\s*(?:\b(?:is|was|are|were|will\s+be|has\s+been|became|becomes|reads)\b|:)"
        r"(?:\s*:)?\s*(?:(?:now|still|just|actually|simply|set\s+to|changed\s+to)\s+)?"
        r"[\"'`]?([^\s\"'`,;()\[\]{}<>]{5,}[^\s\"'`,;()\[\]{}<>.?:])(?=[.!?:]*(?:[\s\"'`,;)\]}>]|$))",
        1,
        _said_secret,
        ("pass", "pwd", "pin code", "secret", "api key", "api_key", "api-key", "access key", "token", "credential"),
    ),
    # said after a verb ("use password X", "log in with the root password X"), or bare ("password X",
    # where the value must look generated: a digit with a symbol or with both cases)
    _p("said_secret", _VERB + _SAID_PASSWORD, 1, _said_secret, ("pass", "pwd")),
    _p("said_secret", r"(?i)\b" + _SAID_PASSWORD, 1, _generated, ("pass", "pwd")),
    # on a command line: mysql -u root -pSECRET (the value glued to -p), sshpass -p SECRET,
    # redis-cli -a SECRET, any --password SECRET / --pass SECRET
    _p(
        "cli_password",
        r"\b(?i:mysql\w*|mariadb\w*|mycli)\b[^\n|;&]*?[ \t]-p" + _CLI_VALUE,
        1,
        _cli_secret,
        ("mysql", "mariadb", "mycli"),
    ),
    _p(
        "cli_password",
        r"\b(?i:sshpass)\b[^\n|;&]*?[ \t]-p[ \t]*" + _CLI_VALUE,
        1,
        _cli_secret,
        ("sshpass",),
    ),
    _p(
        "cli_password",
        r"\b(?i:redis-cli)\b[^\n|;&]*?[ \t]-a[ \t]+" + _CLI_VALUE,
        1,
        _cli_secret,
        ("redis-cli",),
    ),
    _p(
        "cli_password",
        r"(?i)(?<![\w\-])--pass(?:word)?[ \t]+" + _CLI_VALUE,
        1,
        _cli_flag_secret,
        ("--pass",),
    ),
    # NAME=value, name = "value", name: value; `_` before the keyword is a boundary (DB_PASSWORD=)
    _p(
        "password_assignment",
        r"(?i)(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]*" + _KEYWORDS + _NAME_END + r"(?![A-Za-z0-9_])[\"']?[ \t]*"
        r"(?::=|=>|[:=])[ \t]*(?:\"([^\"\n]{4,})\"|'([^'\n]{4,})'|([^\s\"'`,;)\]}]{6,}))",
        -1,
        None,
        _KEY_NEEDLES,
    ),
]
_NEEDLES = re.compile("|".join(sorted({re.escape(n) for p in _PATTERNS for n in p.needles}, key=len, reverse=True)))


# -- detect-secrets -----------------------------------------------------------------------------
# A line worth handing to detect-secrets: a long token with a digit in it, a secret-sounding word,
# a URL with credentials, a key block.
_LONG_RUN = re.compile(r"[A-Za-z0-9+/=\-]{20,}")
_DS_HINT = re.compile(r"(?i:" + _KEYWORDS + r")[\"']?\s*[:=]|://\S*@|-----BEGIN")


def _candidate_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of the lines worth handing to detect-secrets, in order."""
    starts: set[int] = set()
    for m in _LONG_RUN.finditer(text):
        run = m.group(0)
        if any(c.isdigit() for c in run) and any(c.isalpha() for c in run):
            starts.add(text.rfind("\n", 0, m.start()) + 1)
    seen: set[int] = set()
    for m in _NEEDLES.finditer(text.lower()):  # a secret-sounding name, a URL, ... on this line?
        start = text.rfind("\n", 0, m.start()) + 1
        if start not in seen:
            seen.add(start)
            end = text.find("\n", start)
            if _DS_HINT.search(text, start, len(text) if end < 0 else end):
                starts.add(start)
    if "-----BEGIN" in text:
        starts.update(text.rfind("\n", 0, m.start()) + 1 for m in re.finditer("-----BEGIN", text))
    spans = []
    for start in sorted(starts):
        end = text.find("\n", start)
        spans.append((start, len(text) if end < 0 else end))
    return spans


_DS_NAMES = {
    "AWS Access Key": "aws_access_key",
    "Secret Keyword": "password_assignment",
    "Base64 High Entropy String": "high_entropy_string",
    "Hex High Entropy String": "high_entropy_string",
    "Basic Auth Credentials": "url_password",
    "Private Key": "private_key",
}
_ds_lock = threading.Lock()
_ds: dict[str, Any] = {}


def _detect_secrets() -> dict[str, Any] | None:
    """The detect-secrets plugins and filters, built once; None when the library is missing."""
    with _ds_lock:
        if not _ds:
            try:
                _ds.update(_load_detect_secrets())
            except ImportError:
                _ds["missing"] = True
        return None if _ds.get("missing") else _ds


def _load_detect_secrets() -> dict[str, Any]:
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins import (
        artifactory,
        aws,
        azure_storage_key,
        basic_auth,
        cloudant,
        discord,
        github_token,
        gitlab_token,
        high_entropy_strings,
        ibm_cloud_iam,
        ibm_cos_hmac,
        jwt,
        keyword,
        mailchimp,
        npm,
        openai,
        private_key,
        pypi_token,
        sendgrid,
        slack,
        softlayer,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )

    regex_plugins = [
        artifactory.ArtifactoryDetector(),
        aws.AWSKeyDetector(),
        azure_storage_key.AzureStorageKeyDetector(),
        basic_auth.BasicAuthDetector(),
        cloudant.CloudantDetector(),
        discord.DiscordBotTokenDetector(),
        github_token.GitHubTokenDetector(),
        gitlab_token.GitLabTokenDetector(),
        ibm_cloud_iam.IbmCloudIamDetector(),
        ibm_cos_hmac.IbmCosHmacDetector(),
        jwt.JwtTokenDetector(),
        mailchimp.MailchimpDetector(),
        npm.NpmDetector(),
        openai.OpenAIDetector(),
        private_key.PrivateKeyDetector(),
        pypi_token.PypiTokenDetector(),
        sendgrid.SendGridDetector(),
        slack.SlackDetector(),
        softlayer.SoftlayerDetector(),
        square_oauth.SquareOAuthDetector(),
        stripe.StripeDetector(),
        telegram_token.TelegramBotTokenDetector(),
        twilio.TwilioKeyDetector(),
    ]
    # JWT's detector checks the token decodes; private_key only flags the BEGIN line (our shape
    # masks the block).  Telegram, IBM and Softlayer detectors match ordinary hex/ids: they need
    # their own keyword, which their regexes already require.
    return {
        "regex": regex_plugins,
        "keyword": keyword.KeywordDetector(),
        "keyword_groups": keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        "base64": high_entropy_strings.Base64HighEntropyString(limit=4.5),
        "hex": high_entropy_strings.HexHighEntropyString(limit=3.0),
        "filters": heuristic,
    }


def _filtered(ds: dict[str, Any], secret: str, line: str, plugin: Any) -> bool:
    """detect-secrets' own heuristics: True when the candidate is not a secret."""
    h = ds["filters"]
    return (
        len(secret) < 6
        or bool(_MASK_RE.search(secret))
        or h.is_sequential_string(secret)
        or h.is_potential_uuid(secret)
        or h.is_likely_id_string(secret, line, plugin)
        or h.is_templated_secret(secret)
        or h.is_prefixed_with_dollar_sign(secret)
        or h.is_not_alphanumeric_string(secret)
        or bool(_PLACEHOLDER.match(secret))
    )


def _entropy_secret(ds: dict[str, Any], value: str, line: str) -> bool:
    """Whether a quoted string is a high-entropy secret.  Hex needs a secret-sounding name on its
    line (bare hex strings in code are digests and ids); base64 needs length and mixed classes."""
    if len(value) < 20:
        return False
    is_hex = all(c in "0123456789abcdefABCDEF" for c in value)
    if is_hex:
        if not re.search(_KEYWORDS, line, re.IGNORECASE):
            return False
        plugin = ds["hex"]
    else:
        if not (
            any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value)
        ):
            return False
        plugin = ds["base64"]
    return plugin.calculate_shannon_entropy(value) > plugin.entropy_limit and not _filtered(ds, value, line, plugin)


def _scan_line(ds: dict[str, Any], line: str) -> list[tuple[str, str]]:
    """(kind, secret) pairs that detect-secrets finds on one line, after its filters."""
    found: list[tuple[str, str]] = []
    for plugin in ds["regex"]:
        for secret in plugin.analyze_string(line):
            if secret and not _MASK_RE.search(secret) and len(secret) >= 6 and _secretish(secret):
                kind = _DS_NAMES.get(plugin.secret_type) or re.sub(r"\W+", "_", plugin.secret_type.lower()).strip("_")
                found.append((kind, secret))
    kw = ds["keyword"]
    for secret in kw.analyze_string(line, denylist_regex_to_group=ds["keyword_groups"]):
        if secret and not _filtered(ds, secret, line, kw):
            found.append(("password_assignment", secret))
    for value in ds["base64"].analyze_string(line):
        if _entropy_secret(ds, value, line):
            found.append(("high_entropy_string", value))
    return found


# -- the API ------------------------------------------------------------------------------------
def _mask(name: str) -> str:
    return f"[REDACTED:{name}]"


def _substitute(p: _Pattern, text: str, found: Counter[str]) -> str:
    def sub(match: re.Match[str]) -> str:
        whole = match.group(0)
        if p.group == 0:
            if _MASK_RE.fullmatch(whole) or (p.check is not None and not p.check(whole)):
                return whole
            found[p.name] += 1
            return _mask(p.name)
        if p.group < 0:  # the first group that matched: quoted "...", quoted '...', or bare
            idx = next(i for i in (1, 2, 3) if match.group(i) is not None)
            value = match.group(idx)
            ok = _unquoted_secretish(value) if idx == 3 else _secretish(value)
        else:
            idx, value = p.group, match.group(p.group)
            ok = p.check(value) if p.check is not None else True
        if not ok or _MASK_RE.search(value):
            return whole
        found[p.name] += 1
        start, end = match.span(idx)
        offset = match.start(0)
        return whole[: start - offset] + _mask(p.name) + whole[end - offset :]

    return p.regex.sub(sub, text)


def _apply_patterns(text: str, found: Counter[str]) -> str:
    for p in _PATTERNS:
        if not p.needles:
            text = _substitute(p, text, found)
    lower = text.lower()
    hits = {m.start() for m in _NEEDLES.finditer(lower)}
    if not hits:
        return text
    # The lines holding a needle, each once; the patterns whose needles it holds run on it.
    spans: dict[int, int] = {}
    for pos in hits:
        start = lower.rfind("\n", 0, pos) + 1
        if start not in spans:
            end = lower.find("\n", pos)
            spans[start] = len(lower) if end < 0 else end
    out, last = [], 0
    for start in sorted(spans):
        end = spans[start]
        line, low = text[start:end], lower[start:end]
        for p in _PATTERNS:
            if p.needles and any(n in low for n in p.needles):
                line = _substitute(p, line, found)
        out += [text[last:start], line]
        last = end
    out.append(text[last:])
    return "".join(out)


def _apply_detect_secrets(text: str, found: Counter[str]) -> str:
    spans = _candidate_lines(text)
    if not spans:
        return text
    ds = _detect_secrets()
    if ds is None:
        return text
    out, last = [], 0
    for start, end in spans:
        line = text[start:end]
        if len(line) <= 20_000:
            for kind, secret in sorted(_scan_line(ds, line), key=lambda h: -len(h[1])):
                if secret in line:
                    found[kind] += 1
                    line = line.replace(secret, _mask(kind))
        out += [text[last:start], line]
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(text: str, library: bool = True) -> tuple[str, dict[str, int]]:
    """The text with secrets masked, and how many of each kind were masked.  ``library=False`` runs
    the shapes only (no detect-secrets, whose first load costs ~0.2-0.3 s): for a hook's warm path,
    over texts that were fully redacted when they were stored.

    The detectors read the text's normal form (``text.plain_text``: no terminal escapes, no invisible
    or bidi characters, NFKC), as a terminal or a model would: a token coloured by ANSI codes or split
    by U+200B is found.  A text holding a secret comes back in that normal form, masked, so nothing
    can put the secret together again; a text holding none comes back unchanged."""
    found: Counter[str] = Counter()
    if not text:
        return text, {}
    seen = plain_text(text)
    out = _apply_patterns(seen, found)
    if library:
        out = _apply_detect_secrets(out, found)
    return (out, dict(found)) if found else (text, {})


def refuse_secret_name(value: str, what: str) -> str:
    """``value`` unless it holds a secret by its shape: then a UsageError (exit 2).  For names that
    others look things up by (a store namespace or key, an episode category), where a mask would
    change what is named; the shapes only, so an ordinary id is never taken for entropy."""
    _, found = redact(value, library=False)
    if found:
        from contextware.core.errors import UsageError

        kinds = ", ".join(sorted(found))
        raise UsageError(
            f"{what} holds what looks like a secret ({kinds}); name it without the secret.", code="secret_in_name"
        )
    return value


Shaped = TypeVar("Shaped")  # a value given back in the same shape


def refuse_secret_topics(raw: Shaped) -> Shaped:
    """``raw`` topics (a comma-separated string or a list, as ``text.parse_topics`` takes them) unless
    one holds a secret by its shape, judged before topics are lower-cased (``AKIA...`` would no longer
    look like a key): a topic is stored, shown and matched as it is, so it is refused, never masked."""
    items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, (list, tuple)) else []
    for n, item in enumerate(items, 1):
        if isinstance(item, str):
            refuse_secret_name(item.strip(), f"Topic {n}")
    return raw


def redact_text(text: str, library: bool = True) -> str:
    """``redact`` without the counts."""
    return redact(text, library)[0]


def redact_json(value: Shaped, counts: dict[str, int] | None = None) -> Shaped:
    """A JSON value with every string leaf (and every key that names a secret's value) redacted;
    adds what was masked to ``counts``."""
    counts = {} if counts is None else counts

    def walk(v: object, key: str | None = None) -> object:
        if isinstance(v, str):
            # A value under a secret-sounding key ({"api_key": "..."}) is a secret as a whole.
            if key is not None and _SECRET_KEY.search(key) and "\n" not in v and _secretish(v):
                _add(counts, {"password_assignment": 1})
                return _mask("password_assignment")
            clean, found = redact(v)
            _add(counts, found)
            return clean
        if isinstance(v, dict):
            return {k: walk(x, str(k)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return cast("Shaped", walk(value))  # the same shape: strings stay strings, containers keep their keys


def redact_error(error: ErrorBody) -> ErrorBody:
    """An error body (``{"code", "message", ...}``) as it may be shown: an exception's text can quote
    a path, a URI or an input that holds a secret.  Every front end passes its errors through this."""
    return redact_json(error)  # the same keys, secrets in their strings masked


def _add(counts: dict[str, int], found: dict[str, int]) -> None:
    for k, n in found.items():
        counts[k] = counts.get(k, 0) + n
