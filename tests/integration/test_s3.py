"""CONTEXTWARE_DB_URI on an S3-compatible object store: a real moto server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import run_script


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3_server():
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def test_memory_on_s3_uri(s3_server, project_dir):
    import boto3

    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_server,
        "CONTEXTWARE_DB_URI": "s3://team-memory/projects/demo",
    }
    client = boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket="team-memory")
    saved = run_script(
        "save_fact", "Shared memory lives in the team bucket.", "--kind", "decision", cwd=project_dir, env=env
    )
    assert saved.returncode == 0, saved.stdout + saved.stderr
    run_script(
        "save_fact",
        "-",
        "--type",
        "episode",
        "--goal",
        "Share memory",
        "--result",
        "success",
        cwd=project_dir,
        env=env,
        input="Pointed CONTEXTWARE_DB_URI at S3 and it worked.",
    )
    found = run_script("recall", "--query", "where is the shared team memory stored?", cwd=project_dir, env=env)
    assert found.returncode == 0, found.stdout
    assert found.json["results"][0]["id"] == saved.json["id"]
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="team-memory").get("Contents", [])]
    assert any(k.startswith("projects/demo/facts.lance/") for k in keys)
    assert not (project_dir / "contextware_data" / "lancedb").exists()
    stats = run_script("memory", "stats", cwd=project_dir, env=env)
    assert stats.json["tables"]["facts"]["rows"] == 1 and stats.json["db_uri"].startswith("s3://")


# One process of the concurrency tests: its own data dir (so its own lock folder), the shared
# s3:// database, N saves in a row; prints the ids it got.
_SAVER = """
import json, os, sys
from contextware.memory.records import save_fact
from contextware.settings import Settings
from contextware.storage.project import Project
project = Project.open(sys.argv[1], Settings.from_env(os.environ))
ids = []
for text in sys.argv[2:]:
    ids.append(save_fact(project, text)["id"])
print(json.dumps(ids))
"""


def _s3_env(s3_server: str, bucket: str) -> dict[str, str]:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=bucket)
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_server,
        "CONTEXTWARE_DB_URI": f"s3://{bucket}/projects/demo",
    }


def _savers(
    tmp_path, env: dict[str, str], texts_per_process: list[list[str]], config: dict | None = None, one_root=None
) -> list[list[str]]:
    """Start one process per list of texts at once, each with its own data dir (lock folder, and
    ``config`` as its config.json), or all in the project ``one_root``; returns the ids each save
    answered with."""
    import json
    import os
    import subprocess
    import sys

    procs = []
    for i, texts in enumerate(texts_per_process):
        root = one_root or tmp_path / f"machine-{i}"
        full = {**os.environ, **env}
        if one_root is None:
            (root / "contextware_data").mkdir(parents=True)
            if config:
                (root / "contextware_data" / "config.json").write_text(json.dumps(config))
            full["CONTEXTWARE_DATA_DIR"] = str(root / "contextware_data")
        command = [sys.executable, "-c", _SAVER, str(root), *texts]
        procs.append(subprocess.Popen(command, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _facts(tmp_path, env: dict[str, str]) -> list[dict]:
    root = tmp_path / "reader"
    root.mkdir(exist_ok=True)
    out = run_script("memory", "list", "--collection", "facts", "--limit", "1000", cwd=root, env=env)
    assert out.returncode == 0, out.stdout
    return out.json["records"]


@pytest.mark.slow
def test_four_machines_saving_at_once_into_one_s3_memory_lose_nothing(s3_server, tmp_path):
    """The local file lock protects nothing across machines: each process here has its own lock
    folder.  LanceDB's own commit protocol (a conditional put of each new version) keeps every row."""
    env = _s3_env(s3_server, "team-concurrent")
    texts = [
        [f"Machine {m} fact {i}: service {m}-{i} listens on port {8000 + 20 * m + i}." for i in range(20)]
        for m in range(4)
    ]
    ids = _savers(tmp_path, env, texts)
    assert sum(len(x) for x in ids) == 80 and len({i for x in ids for i in x}) == 80
    facts = _facts(tmp_path, env)
    assert len(facts) == 80 and {f["id"] for f in facts} == {i for x in ids for i in x}


@pytest.mark.slow
def test_four_machines_saving_one_text_at_once_into_s3(s3_server, tmp_path):
    """Four saves of one text at the same moment from four machines (no shared lock) keep one row.
    Each machine's check for the text may run before another's commit, so each appends; a machine
    whose commit was not the first for that text then deletes its own row and names the first one
    (contextware/storage/first_copy.py).  Any later save of that text is a duplicate."""
    env = _s3_env(s3_server, "team-same-text")
    ids = _savers(tmp_path, env, [["The staging database is Postgres 16 on port 5433."]] * 4)
    facts = _facts(tmp_path, env)
    assert [f["text"] for f in facts] == ["The staging database is Postgres 16 on port 5433."]
    assert {x[0] for x in ids} == {facts[0]["id"]}  # every save's answer names the row that stayed
    again = run_script(
        "save_fact", "The staging database is Postgres 16 on port 5433.", cwd=tmp_path / "reader", env=env
    )
    assert again.json["duplicate_of"] == facts[0]["id"]
    assert len(_facts(tmp_path, env)) == 1


@pytest.mark.slow
def test_four_machines_saving_the_same_twenty_texts_into_s3_keep_each_once(s3_server, tmp_path):
    """The race repeated twenty times, with the machines' commits interleaved: each text lands once
    and none is lost (a text-keyed merge_insert once lost rows here; appends and deletes of one's own
    rows do not)."""
    env = _s3_env(s3_server, "team-same-texts")
    texts = [f"Shared rule {i}: deploys to region r{i} need a second approval." for i in range(20)]
    ids = _savers(tmp_path, env, [texts] * 4)
    facts = _facts(tmp_path, env)
    assert sorted(f["text"] for f in facts) == sorted(texts)
    assert {i for x in ids for i in x} == {f["id"] for f in facts}
