"""The namespaced session store (contextware/store/kvstore.py) on a real LanceDB, in-process."""

from __future__ import annotations

import json

import pytest

from contextware.core.errors import ConfigError, NotFoundError, UsageError
from contextware.storage.project import Project
from contextware.storage.schemas import KV_TABLE
from contextware.store import kvstore
from tests.support.session_store import store_project, store_rows


def _keys(project: Project, namespace: str | None = None) -> list[str]:
    return [f"{k['namespace']}/{k['key']}" for k in kvstore.list_keys(project, namespace)["keys"]]


# -- values ---------------------------------------------------------------------------------------
VALUES = [
    {"p95_ms": 120, "endpoints": ["/a", "/b"], "nested": {"ok": True, "none": None, "pi": 3.14159}},
    [1, "two", {"three": [3]}, [], {}],
    {"ünïcödé": "日本語 — emoji 😀", "quote'and\"back\\slash": "tab\tnewline\n"},
    "just a string",
    42,
    -0.5,
    True,
    None,
]


def test_round_trip_of_json_values(project):
    for i, value in enumerate(VALUES):
        out = kvstore.save(project, "roundtrip", f"k{i}", value)
        assert out["created"] is True and out["evicted"] == []
        assert out["size"] == len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    reopened = Project.open(project.root)
    for i, value in enumerate(VALUES):
        got = kvstore.load(reopened, "roundtrip", f"k{i}")
        assert got["data"] == value and got["namespace"] == "roundtrip" and got["key"] == f"k{i}"
        assert got["updated_at"].endswith("Z")


def test_replacing_a_value_keeps_one_row_and_its_created_at(project):
    first = kvstore.save(project, "ns", "schema", {"v": 1})
    listed = kvstore.list_keys(project, "ns")["keys"][0]
    second = kvstore.save(project, "ns", "schema", {"v": 2, "more": "fields"})
    assert first["created"] and not second["created"]
    assert kvstore.load(project, "ns", "schema")["data"] == {"v": 2, "more": "fields"}
    assert len(store_rows(project)) == 1
    again = kvstore.list_keys(project, "ns")["keys"][0]
    assert again["created_at"] == listed["created_at"] and again["size"] == second["size"]


@pytest.mark.slow
def test_unusual_but_valid_keys(project):
    keys = ["GET /users/{id}", "tests/test_api.py::test_login", 'it\'s "quoted" \\ back', "日本語 キー", "a" * 256]
    for i, key in enumerate(keys):
        kvstore.save(project, "odd", key, i)
    for i, key in enumerate(keys):
        assert kvstore.load(project, "odd", key)["data"] == i
    assert sorted(k.split("/", 1)[1] for k in _keys(project, "odd")) == sorted(keys)
    kvstore.delete(project, "odd", keys[2])
    with pytest.raises(NotFoundError):
        kvstore.load(project, "odd", keys[2])
    assert kvstore.load(project, "odd", keys[3])["data"] == 3


def test_the_kv_table_has_no_vector_and_a_non_nullable_primary_key(project):
    kvstore.save(project, "ns", "k", 1)
    schema = project.db.open_table(KV_TABLE).schema
    assert "vector" not in schema.names and "search_text" not in schema.names
    assert set(schema.names) == {
        "id",
        "namespace",
        "key",
        "data",
        "size",
        "created_at",
        "updated_at",
        "accessed_at",
        "checksum",
    }
    field = schema.field("id")
    assert not field.nullable and any(b"primary-key" in k for k in (field.metadata or {}))
    assert store_rows(project)[0]["id"] == "ns/k"


# -- refusals: nothing written --------------------------------------------------------------------
@pytest.mark.parametrize("namespace", ["", "*", "a/b", "has space", "-lead", "x" * 65, "tab\t", "ns*"])
def test_bad_namespaces_are_refused(project, namespace):
    with pytest.raises(UsageError) as err:
        kvstore.save(project, namespace, "k", 1)
    assert err.value.exit_code == 2 and err.value.code == "bad_namespace"
    assert project.db.open_table(KV_TABLE) is None


@pytest.mark.parametrize("key", ["", "*", "a*b", " lead", "trail ", "new\nline", "\x00", "k" * 257])
def test_bad_keys_are_refused(project, key):
    with pytest.raises(UsageError) as err:
        kvstore.save(project, "ns", key, 1)
    assert err.value.code == "bad_key"
    with pytest.raises(UsageError) as err:  # a NotFoundError is a UsageError too: check the code
        kvstore.load(project, "ns", key)
    assert err.value.code == "bad_key"


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"a": 1,}', "line 1, column 9"),
        ("[1, 2", "line 1, column 6"),
        ('{\n  "a": 1\n  "b": 2\n}', "line 3, column 3"),
        ("{'single': 1}", "line 1, column 2"),
        ("", "empty"),
        ("NaN", "NaN is not valid JSON"),
        ('{"x": Infinity}', "Infinity is not valid JSON"),
    ],
)
def test_invalid_json_says_where(text, where):
    with pytest.raises(UsageError) as err:
        kvstore.parse_json(text)
    assert err.value.code == "bad_json" and where in err.value.message and "\n" not in err.value.message


def test_a_value_that_can_never_fit_is_refused_and_others_stay(project_dir):
    project = store_project(project_dir, store_max_bytes=1000)
    kvstore.save(project, "ns", "small", {"x": "y" * 100})
    with pytest.raises(UsageError) as err:
        kvstore.save(project, "ns", "huge", "z" * 2000)
    assert err.value.code == "value_too_large" and err.value.exit_code == 2
    assert "nothing was saved" in err.value.message and "store_max_bytes" in err.value.message
    assert _keys(project) == ["ns/small"]
    assert kvstore.load(project, "ns", "small")["data"] == {"x": "y" * 100}
    assert kvstore.save(project, "ns", "exact", "z" * 998)["size"] == 1000  # fits exactly, evicting the rest
    assert _keys(project) == ["ns/exact"]


def test_missing_keys_are_not_found(project):
    with pytest.raises(NotFoundError):
        kvstore.load(project, "ns", "never")  # no table yet
    kvstore.save(project, "ns", "there", 1)
    with pytest.raises(NotFoundError) as err:
        kvstore.load(project, "ns", "never")
    assert err.value.code == "not_found" and err.value.exit_code == 2
    with pytest.raises(NotFoundError):
        kvstore.delete(project, "ns", "never")
    with pytest.raises(NotFoundError):
        kvstore.load(project, "other", "there")


def test_bad_config_is_a_clear_error(project_dir):
    with pytest.raises(ConfigError, match="store_max_keys_per_namespace"):
        kvstore.save(store_project(project_dir, store_max_keys_per_namespace=0), "ns", "k", 1)
    with pytest.raises(ConfigError, match="lru"):
        kvstore.save(store_project(project_dir, store_eviction_by_namespace={"b": "fifo"}), "ns", "k", 1)


# -- eviction -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_key_limit_evicts_least_recently_used_or_oldest_per_namespace(project_dir):
    project = store_project(project_dir, store_max_keys_per_namespace=3, store_eviction_by_namespace={"fifo": "oldest"})
    for ns in ("lru", "fifo"):
        for i in range(3):
            assert kvstore.save(project, ns, f"k{i}", i)["evicted"] == []
        kvstore.load(project, ns, "k0")  # k0 is now the most recently used, still the oldest
    lru = kvstore.save(project, "lru", "k3", 3)
    fifo = kvstore.save(project, "fifo", "k3", 3)
    assert lru["evicted"] == [
        {"namespace": "lru", "key": "k1", "size": 1, "reason": "max_keys_per_namespace", "policy": "lru"}
    ]
    assert fifo["evicted"] == [
        {"namespace": "fifo", "key": "k0", "size": 1, "reason": "max_keys_per_namespace", "policy": "oldest"}
    ]
    assert _keys(project, "lru") == ["lru/k0", "lru/k2", "lru/k3"]
    assert _keys(project, "fifo") == ["fifo/k1", "fifo/k2", "fifo/k3"]
    # Replacing a key never evicts (the count does not grow); under LRU a save counts as a use.
    assert kvstore.save(project, "lru", "k2", "new")["evicted"] == []
    assert kvstore.save(project, "lru", "k4", 4)["evicted"][0]["key"] == "k0"


def test_byte_limit_evicts_across_namespaces_and_reports_each(project_dir):
    project = store_project(project_dir, store_max_bytes=100)
    for i, ns in enumerate(["a", "b", "a", "b"]):
        kvstore.save(project, ns, f"v{i}", "x" * 18)  # 20 bytes each with the quotes
    kvstore.load(project, "a", "v0")
    out = kvstore.save(project, "c", "big", "y" * 48)  # 50 bytes: 80 + 50 > 100, free 30 -> two go
    assert [(e["namespace"], e["key"], e["reason"]) for e in out["evicted"]] == [
        ("b", "v1", "max_bytes"),
        ("a", "v2", "max_bytes"),
    ]
    assert sorted(_keys(project)) == ["a/v0", "b/v3", "c/big"]
    assert kvstore.stats(project)["bytes"] == 90


@pytest.mark.slow
def test_lowering_a_limit_evicts_everything_over_it_at_the_next_save(project_dir):
    project = store_project(project_dir)
    for ns in ("a", "b"):
        for i in range(5):
            kvstore.save(project, ns, f"k{i}", i)
    project = store_project(project_dir, store_max_keys_per_namespace=2)
    out = kvstore.save(project, "a", "new", 1)
    assert len(out["evicted"]) == 4 + 3
    assert {e["reason"] for e in out["evicted"]} == {"max_keys_per_namespace"}
    assert len(store_rows(project)) == 4 == 10 + 1 - len(out["evicted"])
    assert _keys(project) == ["a/k4", "a/new", "b/k3", "b/k4"]


@pytest.mark.slow
def test_the_access_log_is_folded_without_losing_lru_order(project_dir, monkeypatch):
    project = store_project(project_dir, store_max_keys_per_namespace=3)
    for i in range(3):
        kvstore.save(project, "ns", f"k{i}", i)
    for _ in range(20):
        kvstore.load(project, "ns", "k0")
    log = project.data_dir / kvstore.ACCESS_LOG
    assert len(log.read_text().splitlines()) == 20
    monkeypatch.setattr(kvstore, "ACCESS_LOG_FOLD_BYTES", 0)
    kvstore.save(project, "ns", "k1", "replaced")  # folds: k0's loads are later than its last save
    assert log.read_text().splitlines() == [log.read_text().splitlines()[0]] and '"ns/k0"' in log.read_text()
    assert kvstore.save(project, "ns", "k3", 3)["evicted"][0]["key"] == "k2"
    log.write_text(log.read_text() + '["ns/k0", 12')  # a line cut short by a crash is ignored
    assert [k["key"] for k in kvstore.list_keys(project, "ns")["keys"]] == ["k0", "k1", "k3"]


# -- delete and stats ------------------------------------------------------------------------------
@pytest.mark.slow
def test_delete_a_key_a_namespace_and_everything(project):
    for ns in ("a", "b", "c"):
        for i in range(3):
            kvstore.save(project, ns, f"k{i}", {"i": i})
    one = kvstore.delete(project, "a", "k1")
    assert one["count"] == 1 and one["deleted"] == [{"namespace": "a", "key": "k1", "size": 7}]
    assert _keys(project, "a") == ["a/k0", "a/k2"]
    ns = kvstore.delete(project, "b", "*")
    assert ns["count"] == 3 and ns["bytes_freed"] == 21 and _keys(project, "b") == []
    assert kvstore.delete(project, "b", "*")["count"] == 0  # clearing an empty namespace is fine
    with pytest.raises(UsageError):
        kvstore.delete(project, "*", "k0")
    everything = kvstore.delete(project, "*", None)
    assert everything["count"] == 5 and _keys(project) == []
    kvstore.save(project, "a", "k0", "back")
    assert kvstore.load(project, "a", "k0")["data"] == "back"


def test_stats(project_dir):
    project = store_project(project_dir, store_eviction_by_namespace={"baselines": "oldest"})
    empty = kvstore.stats(project)
    assert empty["keys"] == 0 and empty["namespaces"] == [] and empty["oldest"] is None and empty["last_write"] is None
    kvstore.save(project, "baselines", "first", [1, 2, 3])
    kvstore.save(project, "schemas", "api", {"a": "b"})
    kvstore.save(project, "baselines", "second", "x")
    s = kvstore.stats(project)
    assert s["keys"] == 3 and s["bytes"] == 7 + 9 + 3
    assert s["max_bytes"] == 10 * 1024 * 1024 and s["max_keys_per_namespace"] == 50 and s["eviction"] == "lru"
    assert s["oldest"]["namespace"] == "baselines" and s["oldest"]["key"] == "first"
    last = kvstore.list_keys(project, "baselines")["keys"][1]
    assert s["last_write"] == last["updated_at"]
    by_ns = {n["namespace"]: n for n in s["namespaces"]}
    assert (
        by_ns["baselines"]["keys"] == 2
        and by_ns["baselines"]["bytes"] == 10
        and by_ns["baselines"]["eviction"] == "oldest"
    )
    assert by_ns["baselines"]["oldest"]["key"] == "first" and by_ns["schemas"]["eviction"] == "lru"
    one = kvstore.stats(project, "schemas")
    assert [n["namespace"] for n in one["namespaces"]] == ["schemas"] and one["keys"] == 3
