"""A planted corpus of secret shapes (all fake): inline texts and whole secret-bearing files.

Every value in ``SECRETS`` must never appear in a table, a recall or context output, or a request
the real Gemini CLI sends.  Shared by the unit tests, the integration tests and
``bench/redact_cost.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextware.settings import Settings

# The secret values themselves (what must never leak), built from parts so that this file is not
# itself one long token.
AWS_ACCESS = "AKIA" + "J7QZ4EXAMPLE2KQ4"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "R8xK2mQ9vL4nT7wZ3pY6sB1cD5fG0hJ2kL8a"
GITLAB = "glpat-" + "Xk3vR9qL2mN8pT4wZ7sY"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HF = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm12345678"
SENDGRID = "SG." + "aB3dE5fG7hI9jK1lM3nO5p.qR7sT9uV1wX3yZ5aB7cD9eF1gH3iJ5kL7mN9oP1qR3s"
SLACK = "xoxb-" + "2048193-4096283-Zq8Xk2Lm9Vn3Bc7Df5Gh"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
OPENAI = "sk-proj-" + "T3BlbkFJx9Q2mLk4ZpR7vN8wY1sD6fG3hJ5k"
GOOGLE = "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
DB_PASSWORD = "Tr0ub4dor-and-3"
SECRET_KEY = "django-insecure-9f#k2l@x8q!v"
JSON_PASSWORD = "s3cr3t-JSON-pw"
JSON_API_KEY = "b7f9e2c4a1d8" + "e3f5a6b2c9d4e7f1"
REDIS_PW = "r3dis-Pa55word"
MYSQL_PW = "my5ql-R00t-pw"
BASIC = "YWRtaW46" + "c3VwZXJzZWNyZXQxMjM="
AZURE = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsu" + "Fq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
NPMRC_TOKEN = "npm_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
NETRC_PW = "n3trc-s3cret-pw"
GIT_CRED = "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"
TF_PW = "terraform-DB-pa55"
PRIVATE_KEY_BODY = "MIIEowIBAAKCAQEA7bq98" + "ZtYxWKqDkLbmXk0Hs3Ppq2ZvG"
PGP_BODY = "lQOYBF8xN2QBCADP1a" + "Mx8Gv3kQ9ZyTRd2fLw"
DOCSTRING_TOKEN = "ghp_" + "Doc5tr1ngT0kenAbCdEfGhIjKlMnOpQrStUv"
ENVRC_TOKEN = "ghs_" + "EnvRcT0ken9a8b7c6d5e4f3g2h1i0jKLmNoP"

PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n-----END RSA PRIVATE KEY-----"
PGP_KEY = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{PGP_BODY}\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----"

# Inline: how each shape shows up inside ordinary text (a fact, a log, a docstring, a value).
INLINE = {
    "aws_access_key": f"The CI user is {AWS_ACCESS} in us-east-1.",
    "aws_secret_key": f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
    "aws_secret_bare": f"the secret half is {AWS_SECRET} (rotate monthly)",
    "github": f"use token {GITHUB} for the release job",
    "gitlab": f"GitLab deploys with {GITLAB}",
    "npm": f"publish with {NPM}",
    "hf": f"the model pull uses {HF}",
    "sendgrid": f"mail goes out with {SENDGRID}",
    "slack": f"alerts post via {SLACK}",
    "stripe": f"billing test uses {STRIPE}",
    "openai": f"the eval calls {OPENAI}",
    "google": f"maps key {GOOGLE}",
    "jwt": f"a session cookie looked like {JWT}",
    "db_password": f"DB_PASSWORD={DB_PASSWORD}",
    "secret_key": f"SECRET_KEY='{SECRET_KEY}'",
    "json_password": f'{{"user": "app", "password": "{JSON_PASSWORD}"}}',
    "json_api_key": f'{{"api_key": "{JSON_API_KEY}", "region": "eu"}}',
    "redis_url": f"cache at redis://:{REDIS_PW}@cache.internal:6379/0",
    "mysql_url": f"DATABASE_URL=mysql://root:{MYSQL_PW}@db.internal/app",
    "basic_auth": f"curl -H 'Authorization: Basic {BASIC}' https://api.internal/",
    "azure": f"DefaultEndpointsProtocol=https;AccountName=prod;AccountKey={AZURE};EndpointSuffix=core.windows.net",
    "private_key": f"the deploy key is\n{PRIVATE_KEY}\nkeep it safe",
    "pgp": f"signing key:\n{PGP_KEY}",
    "netrc": f"machine api.internal login deploy password {NETRC_PW}",
    "git_credentials": f"https://deploy:{GIT_CRED}@github.com",
    "tfvars": f'db_password = "{TF_PW}"',
}
SECRETS = [
    AWS_ACCESS,
    AWS_SECRET,
    GITHUB,
    GITLAB,
    NPM,
    HF,
    SENDGRID,
    SLACK,
    STRIPE,
    OPENAI,
    GOOGLE,
    JWT,
    DB_PASSWORD,
    SECRET_KEY,
    JSON_PASSWORD,
    JSON_API_KEY,
    REDIS_PW,
    MYSQL_PW,
    BASIC,
    AZURE,
    NPMRC_TOKEN,
    NETRC_PW,
    GIT_CRED,
    TF_PW,
    PRIVATE_KEY_BODY,
    PGP_BODY,
    DOCSTRING_TOKEN,
    ENVRC_TOKEN,
]

# Secret-bearing files by their usual names: the code index must skip every one of them.
SECRET_FILES = {
    ".env": f"DB_PASSWORD={DB_PASSWORD}\nDEBUG=1\n",
    ".env.production": f"SECRET_KEY={SECRET_KEY}\n",
    ".envrc": f"export GITHUB_TOKEN={ENVRC_TOKEN}\n",
    ".aws/credentials": f"[default]\naws_access_key_id = {AWS_ACCESS}\naws_secret_access_key = {AWS_SECRET}\n",
    ".npmrc": f"//registry.npmjs.org/:_authToken={NPMRC_TOKEN}\n",
    ".pypirc": "[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmcCJGRlYWRiZWVm\n",
    ".netrc": f"machine api.internal login deploy password {NETRC_PW}\n",
    ".git-credentials": f"https://deploy:{GIT_CRED}@github.com\n",
    "deploy_key": PRIVATE_KEY + "\n",
    "keys/id_ed25519": PRIVATE_KEY + "\n",
    "certs/server.key": PRIVATE_KEY + "\n",
    "certs/server.pem": PRIVATE_KEY + "\n",
    "infra/prod.tfvars": f'db_password = "{TF_PW}"\n',
    "infra/terraform.tfstate": f'{{"resources": [{{"password": "{TF_PW}"}}]}}\n',
    "kube/kubeconfig": f"users:\n- name: admin\n  user:\n    token: {JWT}\n",
    "secrets/signing.asc": PGP_KEY + "\n",
}
# Ordinary files next to them that must still be indexed (documentation of settings, real code).
KEPT_FILES = {
    ".env.example": "DB_PASSWORD=\nDEBUG=1\n",
    "app/settings.py": (
        '"""Settings read from the environment.\n\nFor local runs: ' + DOCSTRING_TOKEN + ' (revoked)."""\n'
        "import os\n\nDB_PASSWORD = os.environ.get('DB_PASSWORD')\n"
        f"STRIPE_KEY = '{STRIPE}'\n\n"
        "def connect(password=DB_PASSWORD):\n    return password\n"
    ),
    "app/keys.py": "def id_for(key):\n    return key.lower()\n",
}


def plant(root: Path) -> None:
    """Write the secret files and the kept files under ``root``."""
    for rel, text in {**SECRET_FILES, **KEPT_FILES}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def table_dump(root: Path) -> str:
    """Every column of every table of the project at ``root`` as text (vectors left out)."""
    import json

    from contextware.storage.project import Project

    db = Project.open(root, Settings.from_env(os.environ)).db
    out = []
    for name in ("facts", "episodes", "logs", "code_index", "offloads", "kv"):
        table = db.open_table(name)
        if table is not None:
            arrow = table.to_arrow()
            rows = arrow.drop_columns([c for c in ("vector",) if c in arrow.column_names]).to_pylist()
            out.append(json.dumps(rows, default=str))
    return "\n".join(out)


def leaks(text: str) -> list[str]:
    """The planted secrets found in ``text``."""
    return [s for s in SECRETS if s in text]
