"""The redaction layer: every planted secret shape is masked, ordinary code and prose are not."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from contextware.core.redact import redact, redact_json, redact_text
from tests.support import secret_corpus as sc


@pytest.mark.parametrize("shape", sorted(sc.INLINE))
def test_every_inline_shape_is_masked(shape):
    clean, found = redact(sc.INLINE[shape])
    assert sc.leaks(clean) == [] and found, clean


@pytest.mark.parametrize("name", sorted(sc.SECRET_FILES))
def test_secret_file_contents_are_masked_too(name):
    """Should a secret file be indexed anyway (config can bring one back), its text is masked."""
    assert sc.leaks(redact_text(sc.SECRET_FILES[name])) == []


def test_the_corpus_has_at_least_25_shapes():
    assert len(sc.INLINE) >= 25 and len(sc.SECRETS) >= 25


@pytest.mark.parametrize(
    "text, expected",
    [
        ("DB_PASSWORD=Tr0ub4dor-and-3", "DB_PASSWORD=[REDACTED:password_assignment]"),  # `_` is a boundary
        ("export SECRET_KEY=abc123def456", "export SECRET_KEY=[REDACTED:password_assignment]"),
        ('{"password": "s3cr3t-pw"}', '{"password": "[REDACTED:password_assignment]"}'),
        ("redis://:r3disPw99@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "Authorization: Basic [REDACTED:authorization_header]"),
    ],
)
def test_the_secret_part_is_masked_and_its_name_kept(text, expected):
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "def add(a, b): return a + b",
        "token_type = 'quoted-string'",
        "password = request.form['password']",
        "DB_PASSWORD = os.environ.get('DB_PASSWORD')",
        "pwd = (self.password.encode('utf-8') if isinstance(self.password, str) else self.password)",
        'TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"',
        "uuid = '123e4567-e89b-12d3-a456-426614174000'",
        "credentials = '{}:{}'.format(user, passwd)",
        "password: ${DB_PASSWORD}",
        'api_key = "<your-api-key>"',
        "Use the token bucket algorithm for rate limiting; see ratelimit.py.",
        "The password reset flow lives in auth/reset.py and sends an email.",
        "max_tokens = 4096",
        "DB_PASSWORD=",
        "DB_PASSWORD= DEBUG=1",
        "https://github.com/org/repo/blob/main/README.md",
    ],
)
def test_ordinary_code_and_prose_are_left_intact(text):
    assert redact(text) == (text, {})


def test_json_values_are_redacted_leaf_by_leaf():
    counts: dict[str, int] = {}
    value = {
        "api_key": sc.JSON_API_KEY,
        "nested": [{"note": sc.INLINE["github"]}, 42, None, True],
        "region": "eu-west-1",
        "token": "",
    }
    clean = redact_json(value, counts)
    assert sc.leaks(repr(clean)) == []
    assert clean["region"] == "eu-west-1" and clean["nested"][1:] == [42, None, True] and clean["token"] == ""
    assert counts == {"password_assignment": 1, "github_token": 1}


def test_masks_are_not_masked_again():
    once = redact_text(sc.INLINE["db_password"])
    assert redact(once) == (once, {})


@pytest.mark.slow
def test_at_most_one_false_redaction_over_300_real_files():
    """The standard library selection of bench/stdlib_corpus.py holds no secrets: every mask is a
    false redaction (one docstring example password, `passwd='kadidd!ehopper'`, is allowed)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from stdlib_corpus import select

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = select(stdlib)
    assert len(files) >= 300
    masked = {rel: found for rel in files if (found := redact((stdlib / rel).read_text(errors="replace"))[1])}
    assert sum(sum(f.values()) for f in masked.values()) <= 1, masked


def test_a_key_id_and_a_password_in_one_uri_are_each_masked_once():
    from contextware.core.redact import redact_text

    uri = "s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY@bucket/memory"
    once = redact_text(f"Cannot open {uri}.")
    assert once == "Cannot open s3://[REDACTED:aws_access_key]:[REDACTED:url_password]@bucket/memory."
    assert redact_text(once) == once  # redacting twice (error paths do) changes nothing
