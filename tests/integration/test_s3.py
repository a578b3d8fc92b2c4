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
