"""The local summariser: symbols per language, summaries, fallbacks, caps and speed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from contextware.codeindex.languages import LANGUAGES, detect_language
from contextware.codeindex.local_summary import (
    SUMMARY_LIMIT,
    LocalSummary,
    _compose,
    _python_ast,
    summarize_local,
)

PYTHON_SRC = '''\
#!/usr/bin/env python3
"""Invoice storage for the billing service.

Persists invoices in Postgres and sends reminders. Used by the nightly job. Nothing else.
"""
from __future__ import annotations

import dataclasses

MAX_RETRIES = 3
default_timeout = 30


@dataclasses.dataclass
class Invoice:
    """One customer invoice."""

    id: int
    total: float


class InvoiceStore:
    """Persists invoices in Postgres.

    Args:
        dsn: the connection string.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    async def save(self, invoice: Invoice) -> None:
        """Insert or update one invoice."""

    @property
    def size(self) -> int:
        return 0

    class Page:
        def next(self):
            return None


# Email a reminder for an overdue invoice.
def send_reminder(invoice: Invoice) -> bool:
    def _format() -> str:
        return ""

    return True


try:
    import ujson as json
except ImportError:
    JSON_FALLBACK = True
'''


PYTHON_SYMBOLS = [
    "MAX_RETRIES",
    "Invoice",
    "InvoiceStore",
    "InvoiceStore.__init__",
    "InvoiceStore.save",
    "InvoiceStore.size",
    "InvoiceStore.Page",
    "InvoiceStore.Page.next",
    "send_reminder",
    "JSON_FALLBACK",
]


JS_SRC = """\
/**
 * Client-side cart helpers.
 */
import { api } from "./api.js";

export const MAX_ITEMS = 50;
const cache = new Map();

/** Shopping cart kept in local storage. */
export class Cart {
  constructor(owner) { this.owner = owner; this.items = []; }
  add(item) { this.items.push(item); }
  get total() { return 0; }
  static fromJSON(json) { return new Cart(json.owner); }
  handleClick = () => {};
}

// Format a price in euros.
export function formatPrice(cents) {
  return `${cents / 100} EUR`;
}

export const debounce = (fn, ms) => fn;
"""


def check(path: str, src: str, symbols: list[str], *phrases: str) -> LocalSummary:
    result = summarize_local(path, src)
    assert result.symbols == symbols
    for phrase in phrases:
        assert phrase in result.summary, (phrase, result.summary)
    assert len(result.summary) <= SUMMARY_LIMIT
    return result


def test_python() -> None:
    result = check(
        "billing/store.py",
        PYTHON_SRC,
        PYTHON_SYMBOLS,
        "Invoice storage for the billing service. Persists invoices in Postgres and sends reminders. "
        "Used by the nightly job. Defines: ",
        "class Invoice — One customer invoice.",
        "class InvoiceStore — Persists invoices in Postgres.;",
        "def send_reminder — Email a reminder for an overdue invoice.",
    )
    assert result.language == "python"
    assert "Nothing else" not in result.summary  # three sentences at most
    assert "Args" not in result.summary and "InvoiceStore.save" not in result.summary  # members are symbols only
    assert "MAX_RETRIES" not in result.summary  # constants too


def test_python_ast_fallback_matches_tree_sitter() -> None:
    fallback = _python_ast(PYTHON_SRC)
    assert fallback is not None
    lead, defs = fallback
    assert [d.name for d in defs] == PYTHON_SYMBOLS
    assert _compose("python", lead, defs, None) == summarize_local("store.py", PYTHON_SRC).summary


def test_python_ast_fallback_reads_comments_and_gives_up_on_syntax_errors() -> None:
    src = "# Helpers for dates.\n\nimport time\n\n# Today as ISO text.\n@cache\ndef today():\n    pass\n"
    lead, defs = _python_ast(src) or ("", [])
    assert lead == "Helpers for dates."
    assert [(d.name, d.doc) for d in defs] == [("today", "Today as ISO text.")]
    assert _python_ast("def broken(:\n") is None


def test_python_syntax_error_keeps_what_parses() -> None:
    src = 'def broken(:\n    pass\n\nclass Ok:\n    """Still fine."""\n    def method(self):\n        pass\n'
    result = summarize_local("bad.py", src)
    assert result.symbols == ["broken", "Ok", "Ok.method"]
    assert "class Ok — Still fine." in result.summary


def test_javascript() -> None:
    src = JS_SRC
    check(
        "web/cart.mjs",
        src,
        [
            "MAX_ITEMS",
            "Cart",
            "Cart.constructor",
            "Cart.add",
            "Cart.total",
            "Cart.fromJSON",
            "Cart.handleClick",
            "formatPrice",
            "debounce",
        ],
        "Client-side cart helpers.",
        "class Cart — Shopping cart kept in local storage.",
        "function formatPrice — Format a price in euros.",
        "function debounce",
    )


def test_typescript() -> None:
    src = """\
// Typed API client for the billing service.
import type { Invoice } from "./types";

export interface Transport {
  send(path: string, body: unknown): Promise<Response>;
  readonly baseUrl: string;
}

export type InvoiceId = string;

export enum Status { Draft, Sent, Paid }

/** Talks to the billing REST API. */
export class BillingClient {
  private retries = 3;
  constructor(private transport: Transport) {}
  async getInvoice(id: InvoiceId): Promise<Invoice> { return {} as Invoice; }
  private log(msg: string): void {}
}

export function createClient(transport: Transport): BillingClient {
  return new BillingClient(transport);
}

export namespace Errors {
  export class NotFound extends Error {}
}
"""
    result = check(
        "src/client.ts",
        src,
        [
            "Transport",
            "Transport.send",
            "InvoiceId",
            "Status",
            "BillingClient",
            "BillingClient.constructor",
            "BillingClient.getInvoice",
            "BillingClient.log",
            "createClient",
            "Errors",
            "NotFound",
        ],
        "Typed API client for the billing service.",
        "interface Transport; type InvoiceId; enum Status",
        "class BillingClient — Talks to the billing REST API.",
        "function createClient",
        "namespace Errors; class NotFound",
    )
    assert result.language == "typescript"


def test_tsx() -> None:
    src = """\
/** Button components for the design system. */
import React from "react";

type Props = { label: string; onClick?: () => void };

/** A primary action button. */
export const Button = ({ label, onClick }: Props) => (
  <button className="btn" onClick={onClick}>{label}</button>
);

export default function Toolbar({ children }: { children: React.ReactNode }) {
  return <div className="toolbar">{children}</div>;
}
"""
    result = check(
        "ui/Button.tsx",
        src,
        ["Props", "Button", "Toolbar"],
        "Button components for the design system.",
        "function Button — A primary action button.",
        "function Toolbar",
    )
    assert result.language == "tsx"


def test_go() -> None:
    src = """\
// Copyright 2024 Acme. All rights reserved.
// Use of this source code is governed by a BSD-style license.

//go:build linux

// Package billing stores invoices and sends reminders.
package billing

import (
\t"errors"
)

// ErrNotFound is returned when an invoice does not exist.
var ErrNotFound = errors.New("invoice not found")

var cache = map[int]string{}

const MaxRetries = 3

// Store persists invoices.
type Store struct {
\tdb *sql.DB
}

// Notifier sends messages.
type Notifier interface {
\tNotify(to string, body string) error
}

// NewStore opens a store.
func NewStore(dsn string) (*Store, error) { return &Store{}, nil }

// Save writes one invoice.
func (s *Store) Save(inv Invoice) error { return nil }

func (s Store) count() int { return 0 }

func (c *Cache[K]) Get(key K) {}
"""
    result = check(
        "billing/store.go",
        src,
        [
            "ErrNotFound",
            "MaxRetries",
            "Store",
            "Notifier",
            "Notifier.Notify",
            "NewStore",
            "Store.Save",
            "Store.count",
            "Cache.Get",
        ],
        "Package billing stores invoices and sends reminders. Defines: ",
        "struct Store — Store persists invoices.",
        "interface Notifier — Notifier sends messages.",
        "func NewStore — NewStore opens a store.",
        "func Cache.Get",
    )
    assert "Copyright" not in result.summary and "go:build" not in result.summary
    assert "Store.Save" not in result.summary  # methods of a type defined here are symbols only


def test_rust() -> None:
    src = """\
//! Invoice storage backed by SQLite.

use std::fmt;

/// Maximum number of retries.
pub const MAX_RETRIES: u32 = 3;

/// A stored invoice.
#[derive(Debug, Clone)]
pub struct Invoice {
    pub id: u64,
}

pub enum Status { Draft, Paid }

pub trait Store {
    fn save(&mut self, invoice: &Invoice) -> Result<(), String>;
}

impl Invoice {
    /// Create an invoice.
    pub fn new(id: u64) -> Self { Invoice { id } }
}

impl<'a> fmt::Display for &'a Invoice {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{}", self.id) }
}

impl<T> Store for Vec<T> {
    fn save(&mut self, invoice: &Invoice) -> Result<(), String> { Ok(()) }
}

/// Send a reminder email.
pub fn send_reminder(invoice: &Invoice) {}

#[cfg(test)]
mod tests {
    #[test]
    fn it_works() {}
}
"""
    check(
        "src/store.rs",
        src,
        [
            "MAX_RETRIES",
            "Invoice",
            "Status",
            "Store",
            "Store.save",
            "Invoice.new",
            "Invoice.fmt",
            "Vec.save",
            "send_reminder",
            "tests",
        ],
        "Invoice storage backed by SQLite. Defines: ",
        "struct Invoice — A stored invoice.;",
        "enum Status;",
        "trait Store;",
        "fn Vec.save;",
        "fn send_reminder — Send a reminder email.",
        "mod tests",
    )


def test_java() -> None:
    src = """\
/*
 * Copyright 2024 Acme Corp. Licensed under the Apache License 2.0.
 */
package com.acme.billing;

import java.util.List;

/**
 * Persists invoices in Postgres.
 * @author someone
 */
public class InvoiceStore {
    public static final int MAX_RETRIES = 3;
    private final DataSource ds;

    public InvoiceStore(DataSource ds) { this.ds = ds; }

    /** Save one invoice. */
    @Override
    public void save(Invoice invoice) {}

    public List<Invoice> findAll() { return List.of(); }

    public static class Page {
        int size() { return 0; }
    }
}

interface Repository<T> {
    T find(long id);
}

enum Status { DRAFT, PAID; boolean isFinal() { return this == PAID; } }

record Money(long cents, String currency) {}
"""
    result = check(
        "src/main/java/com/acme/billing/InvoiceStore.java",
        src,
        [
            "InvoiceStore",
            "InvoiceStore.MAX_RETRIES",
            "InvoiceStore.InvoiceStore",
            "InvoiceStore.save",
            "InvoiceStore.findAll",
            "InvoiceStore.Page",
            "InvoiceStore.Page.size",
            "Repository",
            "Repository.find",
            "Status",
            "Status.isFinal",
            "Money",
        ],
        "class InvoiceStore — Persists invoices in Postgres.;",
        "interface Repository; enum Status;",
        "record Money",
    )
    assert result.summary.startswith("Defines: ")  # the licence header is not a description
    assert "@author" not in result.summary


def test_c() -> None:
    src = """\
/* Ring buffer for sensor samples. */
#ifndef RING_H
#define RING_H 1

#include <stddef.h>

#define RING_CAPACITY 64
#define RING_NEXT(i) (((i) + 1) % RING_CAPACITY)

typedef struct {
    int data[RING_CAPACITY];
    size_t head;
} Ring;

struct sample { int value; };

typedef unsigned long ring_size_t;

enum mode { MODE_FAST, MODE_SLOW };

static int counter = 0;

/* Push one value; returns 0 when full. */
int ring_push(Ring *r, int value);

static size_t ring_size(const Ring *r) { return r->head; }

int (*callback)(int);

#endif
"""
    check(
        "include/ring.h",
        src,
        ["RING_CAPACITY", "RING_NEXT", "Ring", "sample", "ring_size_t", "mode", "ring_push", "ring_size"],
        "Ring buffer for sensor samples. Defines: macro RING_NEXT; struct Ring; struct sample; "
        "typedef ring_size_t; enum mode; function ring_push — Push one value; returns 0 when full.; "
        "function ring_size",
    )


def test_cpp() -> None:
    src = """\
// Geometry primitives.
#pragma once
#include <cmath>

namespace geo {

/// A 2D point.
struct Point {
    double x, y;
    double norm() const { return std::sqrt(x * x + y * y); }
};

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
};

class Circle : public Shape {
public:
    explicit Circle(double r);
    double area() const override;
private:
    double r_;
};

template <typename T>
T clamp(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace geo

double geo::Circle::area() const { return 3.14159 * r_ * r_; }

extern "C" int geo_version(void);
"""
    result = check(
        "geo/shapes.hpp",
        src,
        [
            "geo",
            "Point",
            "Point.norm",
            "Shape",
            "Shape.~Shape",
            "Shape.area",
            "Circle",
            "Circle.Circle",
            "Circle.area",
            "clamp",
            "geo_version",
        ],
        "Geometry primitives. Defines: namespace geo; struct Point — A 2D point.; class Shape; "
        "class Circle; function clamp; function geo_version",
    )
    assert result.language == "cpp"
    # a C++ header named .h is parsed as C++ but keeps the extension's language
    header = summarize_local("geo/shapes.h", src)
    assert header.language == "c" and header.symbols == result.symbols


def test_ruby() -> None:
    src = """\
# frozen_string_literal: true

# Billing helpers for the storefront.
require "json"

module Billing
  TAX_RATE = 0.2

  # Persists invoices.
  class InvoiceStore < BaseStore
    attr_reader :db

    def initialize(db)
      @db = db
    end

    def self.connect(url)
      new(url)
    end

    def save(invoice) = db.insert(invoice)

    class << self
      def default = connect(ENV["DATABASE_URL"])
    end

    private

    def valid?(invoice)
      true
    end
  end

  def self.configure
    yield self
  end
end
"""
    check(
        "lib/billing.rb",
        src,
        [
            "Billing",
            "Billing.TAX_RATE",
            "InvoiceStore",
            "InvoiceStore.initialize",
            "InvoiceStore.connect",
            "InvoiceStore.save",
            "InvoiceStore.default",
            "InvoiceStore.valid?",
            "Billing.configure",
        ],
        "Billing helpers for the storefront. Defines: module Billing; class InvoiceStore — Persists invoices.",
    )


def test_bash() -> None:
    src = """\
#!/usr/bin/env bash
# Deploy the web app to the staging cluster.
set -euo pipefail

readonly REGISTRY="registry.example.com"
export IMAGE_TAG="${IMAGE_TAG:-latest}"
log_file=/tmp/deploy.log

# Build and push the container image.
build_image() {
  docker build -t "$REGISTRY/app:$IMAGE_TAG" .
}

function deploy {
  build_image
  kubectl apply -f k8s/
}

deploy "$@"
"""
    result = check(
        "scripts/deploy",
        src,
        ["REGISTRY", "IMAGE_TAG", "build_image", "deploy"],
        "Deploy the web app to the staging cluster. Defines: ",
        "function build_image — Build and push the container image.; function deploy",
    )
    assert result.language == "bash"  # from the shebang


def test_syntax_errors_in_other_languages_degrade() -> None:
    assert summarize_local("x.rs", "fn main( { struct Leftover;").symbols == ["Leftover"]
    for path in ("x.js", "x.ts", "x.go", "x.java", "x.c", "x.cpp", "x.rb", "x.sh"):
        result = summarize_local(path, "function (\n{{{ class } def ( ]] fi done esac")
        assert isinstance(result.summary, str) and isinstance(result.symbols, list)


def test_empty_blank_and_binary_files() -> None:
    assert summarize_local("empty.py", "") == LocalSummary("python", "Empty file.", [])
    assert summarize_local("blank.go", " \n\n\t\n") == LocalSummary("go", "Empty file.", [])
    binary = summarize_local("blob.dat", "PK\x03\x04\x00\x00binary\x00data")
    assert binary.symbols == [] and binary.summary == "Binary or non-text content."


def test_odd_text_never_raises() -> None:
    odd = [
        "x = '\udcff'\ndef f(): pass\n",  # a lone surrogate (surrogateescape-decoded bytes)
        "\ufeff'''BOM doc.'''\ndef f(): pass\n",
        "def f():\r    pass\rclass A:\r    pass\r",  # old Mac line endings
        "class " * 20000,
        "(" * 5000 + ")" * 5000,
    ]
    results = [summarize_local("odd.py", text) for text in odd]
    assert results[0].symbols == ["f"]
    assert results[1].summary.startswith("BOM doc.")
    assert results[2].symbols == ["f", "A"]
    assert all(len(r.summary) <= SUMMARY_LIMIT for r in results)
    assert summarize_local("a.py", b"def from_bytes(): pass\n").symbols == ["from_bytes"]  # type: ignore[arg-type]


def test_leading_comment_skips_licences_and_definition_docs() -> None:
    licence_then_doc = "/* SPDX-License-Identifier: MIT */\n/* Ring buffers. */\n\nint f(void) { return 0; }\n"
    assert summarize_local("a.c", licence_then_doc).summary == "Ring buffers. Defines: function f"
    doc_then_copyright = "/*\n * float.h -- a dummy header.\n *\n * Copyright (c) 1993 The Regents.\n */\n"
    assert summarize_local("float.h", doc_then_copyright).summary == "float.h -- a dummy header."
    only_def_doc = "/** Doc of A. */\nclass A {}\n"
    assert summarize_local("a.js", only_def_doc).summary == "Defines: class A — Doc of A."
    file_overview = "/**\n * @fileoverview Cart helpers.\n */\n'use strict';\n\nfunction f() {}\n"
    assert summarize_local("a.js", file_overview).summary == "Cart helpers. Defines: function f"


def test_script_without_definitions_uses_comment_and_first_lines() -> None:
    result = summarize_local("run.py", "# Print the working directory.\n\nimport os\nprint(os.getcwd())\n")
    assert result.symbols == []
    assert result.summary == "Print the working directory. import os; print(os.getcwd())"


def test_markdown_headings() -> None:
    src = """\
---
title: Contextware
---
# Contextware

[![build](https://ci.example/badge.svg)](https://ci.example)

Local, **persistent** memory for [coding agents](https://example.com). It runs offline. More text here.

## Install

```bash
# not a heading
uv sync
```

## Usage
Run `recall.py`.

Configuration
-------------
"""
    result = summarize_local("README.md", src)
    assert result == LocalSummary(
        "markdown",
        "Contextware. Local, persistent memory for coding agents. It runs offline. "
        "Sections: Install; Usage; Configuration",
        [],
    )
    assert summarize_local("notes.md", "just some words, no heading").summary == "just some words, no heading"


def test_config_and_text_files() -> None:
    assert summarize_local("package.json", '{"name": "app", "scripts": {"a": 1}, "version": "1"}').summary == (
        "Keys: name, scripts, version"
    )
    yaml = "# CI pipeline for pull requests.\nname: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu\n"
    assert summarize_local(".github/ci.yml", yaml).summary == "CI pipeline for pull requests. Keys: name, on, jobs"
    toml = '[project]\nname = "x"\n\n[tool.uv]\ndev = true\n'
    assert summarize_local("pyproject.toml", toml).summary == "Sections: project, tool.uv"
    make = "CC := gcc\nall: build\nbuild:\n\tgo build\ntest: build\n\tgo test\n"
    assert summarize_local("Makefile", make).summary == "Targets: all, build, test"
    assert summarize_local("notes.txt", "First line.\n\nSecond line.\n").summary == "First line. Second line."


def test_detect_language_by_name() -> None:
    cases = {
        "a/b.py": "python",
        "x.PYI": "python",
        "app.jsx": "javascript",
        "m.mjs": "javascript",
        "c.ts": "typescript",
        "v.tsx": "tsx",
        "main.go": "go",
        "lib.rs": "rust",
        "A.java": "java",
        "x.c": "c",
        "x.h": "c",
        "x.hpp": "cpp",
        "x.cc": "cpp",
        "x.rb": "ruby",
        "x.sh": "bash",
        "x.zsh": "bash",
        "README.md": "markdown",
        "c.yml": "yaml",
        "Makefile": "make",
        "docker/Dockerfile": "dockerfile",
        "Dockerfile.prod": "dockerfile",
        "Gemfile": "ruby",
        "CMakeLists.txt": "cmake",
        ".bashrc": "bash",
        "notes.txt": "text",
    }
    assert {path: detect_language(path, "") for path in cases} == cases
    assert detect_language("data.unknownext", "") is None
    assert LANGUAGES[".py"] == "python" and LANGUAGES["Makefile"] == "make"


def test_detect_language_by_shebang(tmp_path: Path) -> None:
    shebangs = {
        "#!/usr/bin/env python3": "python",
        "#!/usr/bin/python3.11 -u": "python",
        "#!/bin/bash -e": "bash",
        "#!/bin/sh": "bash",
        "#!/usr/bin/env -S node --no-warnings": "javascript",
        "#! /usr/bin/ruby": "ruby",
        "#!/usr/bin/env zsh": "bash",
        "#!/usr/bin/env FOO=1 node": "javascript",
        "no shebang": None,
        "#!/usr/bin/env unknown-tool": None,
    }
    assert {line: detect_language("bin/tool", line + "\nrest") for line in shebangs} == shebangs
    script = tmp_path / "deploy"
    script.write_text("#!/usr/bin/env bash\necho hi\n")
    assert detect_language(str(script)) == "bash"  # read from the file when no first line is given
    assert detect_language(str(tmp_path / "missing")) is None
    assert detect_language(str(script), "#!/usr/bin/env python\n") == "python"  # the given line wins


def test_summary_cap_keeps_names_and_cuts_at_a_word() -> None:
    funcs = "".join(
        f'def handler_{i}():\n    """Handle case {i} with a long explanation that goes on and on. More."""\n\n'
        for i in range(300)
    )
    result = summarize_local("big.py", '"""' + "Long module doc without periods " * 40 + '"""\n' + funcs)
    assert len(result.symbols) == 200  # capped
    assert result.symbols[:2] == ["handler_0", "handler_1"]
    assert len(result.summary) <= SUMMARY_LIMIT and result.summary.endswith("…")
    lead, defines = result.summary.split(" Defines: ")
    assert len(lead) <= 400 and lead.endswith("…")
    assert not defines.rstrip("…").endswith(("handler_", "def"))  # cut at a word boundary
    assert defines.startswith("def handler_0; def handler_1; def handler_2;")  # names win over descriptions
    assert "def handler_40;" in defines and "Handle case" not in defines

    one_word = summarize_local("min.txt", "x" * 5000).summary
    assert len(one_word) <= SUMMARY_LIMIT


def test_many_small_definitions_all_listed_without_descriptions() -> None:
    src = "".join(f"# Does thing {i}.\ndef f{i}(): pass\n\n" for i in range(60))
    result = summarize_local("many.py", src)
    assert result.symbols == [f"f{i}" for i in range(60)]
    assert "def f0 — Does thing 0.;" in result.summary and result.summary.endswith("def f59")


@pytest.mark.slow
def test_a_200kb_file_takes_linear_time() -> None:
    """A guard against super-linear work, not a benchmark (the speed itself is bench/crawl_speed.py's):
    well under 0.1 s each on a quiet machine, so the 1 s bound fails on a blow-up, not on load."""
    summarize_local("warm.py", PYTHON_SRC)
    big = PYTHON_SRC * (200_000 // len(PYTHON_SRC) + 1)
    js = JS_SRC * (200_000 // len(JS_SRC) + 1)
    for path, text in (("big.py", big), ("big.js", js), ("min.js", js.replace("\n", " "))):
        summarize_local(path, text)
        best = min(_timed(path, text) for _ in range(3))
        assert best < 1.0, (path, best)


def _timed(path: str, text: str) -> float:
    """CPU time, so that other processes busy on the machine do not make the test flaky."""
    start = time.process_time()
    summarize_local(path, text)
    return time.process_time() - start


def test_threads_get_their_own_parsers() -> None:
    results: list[list[str]] = []

    def work() -> None:
        for _ in range(5):
            results.append(summarize_local("store.py", PYTHON_SRC).symbols)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [PYTHON_SYMBOLS] * 20
