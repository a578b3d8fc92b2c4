"""The resident service answers from in-memory table snapshots: a write by any other process is in
its very next answer (real service, real processes)."""

from __future__ import annotations

import shutil

from tests.support.service_helpers import OFF, run, status


def _ids(result) -> list[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return [r["id"] for r in result.json["results"]]


def test_writes_by_in_process_callers_are_seen_by_the_next_service_recall(project_dir, services):
    first = run("save_fact", "The billing service queues invoices in Redis streams.", cwd=project_dir).json["id"]
    assert _ids(run("recall", "--query", "where are invoices queued?", cwd=project_dir))[0] == first
    assert status(project_dir)["running"] is True  # that answer came from the service's snapshot

    new = run("save_fact", "Invoices moved to Kafka topics in March.", cwd=project_dir, env=OFF).json["id"]
    assert _ids(run("recall", "--query", "which Kafka topics hold invoices?", cwd=project_dir))[0] == new
    assert run("memory", "delete", new, cwd=project_dir, env=OFF).returncode == 0
    assert new not in _ids(run("recall", "--query", "which Kafka topics hold invoices?", cwd=project_dir))

    # The whole table dropped and written again by another process: its versions start over.
    shutil.rmtree(project_dir / "contextware_data" / "lancedb" / "facts.lance")
    again = run("save_fact", "Invoices are queued in SQS now.", cwd=project_dir, env=OFF).json["id"]
    served = run("recall", "--query", "where are invoices queued?", cwd=project_dir)
    assert _ids(served)[0] == again and first not in _ids(served)
    local = run("recall", "--query", "where are invoices queued?", cwd=project_dir, env=OFF)
    assert served.json == local.json
    assert status(project_dir)["requests"] >= 5
