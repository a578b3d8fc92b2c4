"""Secrets said in words and the token shapes detect-secrets misses (issue 23, item 7); the words
that merely talk about secrets stay."""

from __future__ import annotations

import pytest

from contextware.core.redact import redact, redact_text

SAID = [
    ("the admin password is hunter2xyz", "hunter2xyz"),
    ("The root password for db01 was Tr0ub4dor&3 until May.", "Tr0ub4dor&3"),
    ("token: 8f3kQ9zLmP2x", "8f3kQ9zLmP2x"),
    ("the secret key is now Abc12345xyz.", "Abc12345xyz"),
    ("our api key is 'AbCdEf123456'", "AbCdEf123456"),
    ("the deploy token has been set to dEpl0y-T0k3n", "dEpl0y-T0k3n"),
    ("the passphrase: correct-Horse-battery9", "correct-Horse-battery9"),
    ("the pin code is 48213377", "48213377"),
]
SHAPES = [
    ("digitalocean_token", "dop_v1_" + "0123456789abcdef" * 4),
    ("digitalocean_token", "doo_v1_" + "fedcba9876543210" * 4),
    ("shopify_token", "shpat_" + "0123456789abcdef" * 2),
    ("databricks_token", "dapi" + "0123456789abcdef" * 2),
    ("vault_token", "hvs." + "CAESIJ2x9kLmN3pQ7rT5vW8yZ1aB"),
    ("docker_token", "dckr_pat_" + "Xy9kLmN3pQ7rT5vW8yZ1aB2cD4e"),
    ("google_oauth", "GOCSPX-" + "Xy9kLmN3pQ7rT5vW8yZ1aB2c"),
    ("age_secret_key", "AGE-SECRET-KEY-1" + "QYZ3QJ8Y6ZK9R5T2XW7V4N6M8P0L3K5J7H9G2F4D6S8A0Q2W4E6R8T" + "ABCD"),
]
KEPT = [
    "the password is stored in vault",
    "the token is expired",
    "Password reset flow: the token is short-lived",
    "if password is None:",
    "def check(token: str) -> bool:",
    "token = QuotedString()",
    "the api key is in ~/.config/app/key1.txt",
    "the secret key is $SECRET_KEY",
    "the token is sent as a header",
    "the password is <your password>",
]


@pytest.mark.parametrize(("text", "secret"), SAID)
def test_a_secret_said_in_words_is_masked_and_the_sentence_kept(text, secret):
    clean, found = redact(text)
    assert secret not in clean and "[REDACTED:" in clean, clean
    assert clean.split("[REDACTED")[0] == text.split(secret)[0]  # what it was about survives
    assert sum(found.values()) == 1


@pytest.mark.parametrize(("kind", "token"), SHAPES)
def test_token_shapes_are_masked_by_kind(kind, token):
    clean, found = redact(f"use {token} for the job", library=False)
    assert token not in clean and found == {kind: 1}, (clean, found)


@pytest.mark.parametrize("text", KEPT)
def test_words_about_secrets_are_not_masked(text):
    assert redact_text(text) == text
