"""Local, model-free file summaries for the code index: language, symbols and a paragraph for search.

Symbols come from tree-sitter (bundled grammars, imported lazily), with Python's ``ast`` as a fallback.
Members are qualified by their enclosing type with "." in every language (Go ``Type.Method``, Rust
``Type.method``, C++ ``Class::f`` as ``Class.f``); namespaces (C++, Rust and Ruby modules, TS) are symbols
but do not qualify what they contain, as whole files are commonly wrapped in one. Nothing here raises.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

from contextware.codeindex.languages import GRAMMARS, detect_language
from contextware.core.text import cut_at_word as _cut

SUMMARY_LIMIT = 1200
MAX_SYMBOLS = 200
_LEAD_LIMIT = 400
_DOC_LIMIT = 160
_MAX_PARSE_CHARS = 1_000_000


@dataclass
class LocalSummary:
    language: str | None
    summary: str
    symbols: list[str]
    questions: list[str] = field(default_factory=list)  # what the file answers (Gemini only)


# Patterns stay strings: compiling them at import costs milliseconds; re caches them on first use.
_DIRECTIVE = (
    r"(?i)(!|-\*-|vim?:|ex:|eslint[- ](disable|enable)|eslint\s+[\w@/-]+\s*:|@ts-|go:build|\+build"
    r"|shellcheck|frozen_string_literal|(en)?coding[:=]|pylint:|type:\s*ignore|noqa|prettier-ignore|jshint"
    r"|(?-i:global)\s+\w+(\s*,\s*\w+)*\s*$|#(end)?region\b|clang-format|NOLINT|@flow|@jsx|istanbul ignore"
    r"|c8 ignore|nolint|rubocop:|fmt:\s*(on|off)|isort:|<reference\s|[-=*#~_+/ ]+$)"
)
_LICENSE = (
    r"(?i)copyright\b|spdx-license|all rights reserved|licen[cs]ed under|licen[cs]e(, version|:)|free software"
    r"|permission is hereby granted|\(c\) \d{4}"
)
_SECTION = (
    r"^(@\w+|:param|:return|(Args|Arguments|Returns?|Raises|Parameters|Yields|Examples?"
    r"|Usage|Notes?|Attributes|See Also)\s*:?\s*$|-{3,}$)"
)
_CONST = r"_*[A-Z][A-Z0-9_]+"
_PREAMBLE = r"(#|import\b|from\b|package\b|use\b|require|using\b|extern\b|set\s+-|['\"]use (strict|client|server))"
_HASH_COMMENTS = {
    "python",
    "ruby",
    "bash",
    "yaml",
    "toml",
    "ini",
    "dotenv",
    "make",
    "dockerfile",
    "perl",
    "r",
    "cmake",
    "starlark",
    "hcl",
    "powershell",
    "elixir",
    "graphql",
    "julia",
}


def _clean_comment(raw: str) -> str:
    out = []
    for line in raw.splitlines():
        s = re.sub(r"^(/\*+!?|\*+/|\*+(?!/)|//[/!]?|#+|--|;+|%+)", "", line.strip())
        s = re.sub(r"\*+/$|^[\\@](brief|file|fileoverview|overview|summary|module)\b", "", s.strip()).strip()
        if not (s and re.match(_DIRECTIVE, s)):
            out.append(s)
    return "\n".join(out).strip()


def _sentences(text: str, count: int, limit: int, first_paragraph: bool = False) -> str:
    kept: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if re.match(_SECTION, s) or (first_paragraph and not s and kept):
            break
        kept.append(s)
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`\[])", " ".join(" ".join(kept).split()))
    return _cut(" ".join(parts[:count]), limit)


def _q(container: str | None, name: str) -> str:
    return f"{container}.{name}" if container else name


@dataclass
class _Def:
    name: str
    kind: str  # "const" definitions are symbols only, never listed under "Defines"
    container: str | None  # the enclosing type; None at top level and inside namespaces
    node: "Node | None" = None  # outer node, where a preceding comment attaches
    doc: str | None = None  # None: look for a comment above ``node``


_C_TYPES = {f"{kind}_specifier": kind for kind in ("struct", "class", "union", "enum")}
_RUST_KINDS = {
    "function_item": "fn",
    "function_signature_item": "fn",
    "struct_item": "struct",
    "enum_item": "enum",
    "union_item": "union",
    "type_item": "type",
    "trait_item": "trait",
    "mod_item": "mod",
    "macro_definition": "macro",
    "const_item": "const",
    "static_item": "const",
}
_JAVA_KINDS = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "record_declaration": "record",
    "annotation_type_declaration": "@interface",
}
_parsers = threading.local()  # a tree-sitter Parser must not be used by two threads at once


class _Extractor:
    def __init__(self, grammar: str, text: str) -> None:
        cache = _parsers.__dict__.setdefault("cache", {})
        if grammar not in cache:
            from tree_sitter_language_pack import get_parser

            cache[grammar] = get_parser(grammar)  # type: ignore[arg-type]  # a grammar name from GRAMMARS
        self.grammar, self.lines = grammar, text.split("\n")  # rows as tree-sitter counts them
        self.root = cache[grammar].parse(text.encode("utf-8", "replace")).root_node
        self.defs: list[_Def] = []

    def text(self, node: "Node | None") -> str:
        return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""

    def name(self, node: "Node | None", field: str = "name") -> str:
        return self.text(node.child_by_field_name(field)) if node is not None else ""

    def body(self, node: "Node | None", field: str = "body") -> list["Node"]:
        child = node.child_by_field_name(field) if node is not None else None
        return child.named_children if child is not None else []

    def add(self, name: str, kind: str, node: "Node", cont: str | None = None, doc: str | None = None) -> str:
        if name:  # a qualified name outside its type (C++ "Shape::area") still belongs to the type
            self.defs.append(_Def(_q(cont, name), kind, cont or (name.rpartition(".")[0] or None), node, doc))
        return _q(cont, name)

    def run(self) -> list[_Def]:
        # definitions inside a top-level ERROR node (a syntax error) are still worth having
        nodes = [c for n in self.root.named_children for c in (n.named_children if n.type == "ERROR" else [n])]
        {
            "python": self.python,
            "go": self.go,
            "rust": self.rust,
            "java": self.java,
            "ruby": self.ruby,
            "bash": self.bash,
            "c": self.c,
            "cpp": self.c,
        }.get(self.grammar, self.js)(nodes, None)
        return self.defs

    def python(self, nodes: list["Node"], cls: str | None) -> None:
        for outer in nodes:
            n = outer.child_by_field_name("definition") if outer.type == "decorated_definition" else outer
            t = n.type if n is not None else ""
            if t == "class_definition":
                self.python(self.body(n), self.add(self.name(n), "class", outer, cls, self.py_docstring(n)))
            elif t == "function_definition":
                self.add(self.name(n), "def", outer, cls, self.py_docstring(n))
            elif cls is None and t == "assignment":
                while n is not None and n.type == "assignment":  # A = B = 1 nests on the right
                    left, n = n.child_by_field_name("left"), n.child_by_field_name("right")
                    if left is not None and left.type == "identifier" and re.fullmatch(_CONST, self.text(left)):
                        self.add(self.text(left), "const", outer)
            elif cls is None and n is not None and t in ("if_statement", "try_statement", "with_statement"):
                for c in n.named_children:  # definitions under "if TYPE_CHECKING:", "try: ... except ImportError:"
                    for block in [c] if c.type == "block" else [b for b in c.named_children if b.type == "block"]:
                        self.python(block.named_children, None)

    def py_docstring(self, node: "Node | None") -> str | None:
        if node is None:
            return None
        body = node.named_children if node.type == "module" else self.body(node)
        first = next((c for c in body if c.type != "comment"), None)
        if first is not None and first.type == "expression_statement" and first.named_child_count:
            first = first.named_children[0]
        if first is None or first.type != "string":
            return None
        return "".join(self.text(c) for c in first.named_children if c.type == "string_content") or None

    def js(self, nodes: list["Node"], _: str | None) -> None:
        for outer in nodes:
            n: Node | None = outer
            if n is not None and n.type == "export_statement":
                n = n.child_by_field_name("declaration") or n.child_by_field_name("value")
            if n is not None and n.type in ("ambient_declaration", "expression_statement") and n.named_child_count:
                n = n.named_children[0]  # "declare ...", and "namespace X {}" parsed as an expression
            if n is None:
                continue
            t = n.type
            if t in ("class_declaration", "abstract_class_declaration", "class", "interface_declaration"):
                name = self.add(self.name(n) or "default", "interface" if "interface" in t else "class", outer)
                self.js_members(self.body(n), name)
            elif t in ("function_declaration", "generator_function_declaration", "function_signature"):
                self.add(self.name(n), "function", outer)
            elif t in ("type_alias_declaration", "enum_declaration"):
                self.add(self.name(n), t.split("_")[0], outer)
            elif t in ("internal_module", "module"):
                self.add(self.name(n).strip("'\""), "namespace", outer)
                self.js(self.body(n), None)
            elif t in ("lexical_declaration", "variable_declaration"):
                for d in n.named_children:
                    name, value = self.name(d), d.child_by_field_name("value")
                    vt = value.type if value is not None else ""
                    if vt in ("arrow_function", "function_expression", "function", "generator_function"):
                        self.add(name, "function", outer)
                    elif vt in ("class", "class_expression"):
                        self.js_members(self.body(value), self.add(name, "class", outer))
                    elif re.fullmatch(_CONST, name):
                        self.add(name, "const", outer)

    def js_members(self, members: list["Node"], cls: str) -> None:
        for m in members:
            value = m.child_by_field_name("value")
            if m.type in ("method_definition", "method_signature", "abstract_method_signature") or (
                m.type in ("field_definition", "public_field_definition")
                and value is not None
                and value.type in ("arrow_function", "function_expression")
            ):
                self.add(self.name(m) or self.name(m, "property"), "method", m, cls)

    def go(self, nodes: list["Node"], _: str | None) -> None:
        for n in nodes:
            t = n.type
            if t == "function_declaration":
                self.add(self.name(n), "func", n)
            elif t == "method_declaration":
                params = self.body(n, "receiver")
                rtype = self.name(params[0], "type") if params else ""
                self.add(self.name(n), "func", n, rtype.lstrip("*").split("[")[0].strip() or None)
            elif t == "type_declaration":
                for spec in n.named_children:
                    ty = spec.child_by_field_name("type")
                    kind = {"struct_type": "struct", "interface_type": "interface"}.get(ty.type if ty else "", "type")
                    name = self.add(self.name(spec), kind, n if n.named_child_count == 1 else spec)
                    for m in ty.named_children if ty is not None and kind == "interface" else []:
                        if m.type in ("method_elem", "method_spec"):
                            self.add(self.name(m), "method", m, name)
            elif t in ("const_declaration", "var_declaration"):
                for spec in n.named_children:
                    for ident in spec.children_by_field_name("name"):
                        if t == "const_declaration" or self.text(ident)[:1].isupper():  # exported vars only
                            self.add(self.text(ident), "const", n)

    def rust(self, nodes: list["Node"], cont: str | None) -> None:
        for n in nodes:
            t = n.type
            if t == "impl_item" and cont is None:  # impl<T> fmt::Display for &'a Foo<T>  ->  Foo
                words = re.findall(r"[A-Za-z_]\w*", re.sub(r"<.*", "", self.name(n, "type")))
                self.rust(self.body(n), words[-1] if words else None)
            elif t in _RUST_KINDS:
                name = self.add(self.name(n), _RUST_KINDS[t], n, cont)
                if t == "trait_item":
                    self.rust(self.body(n), name)
                elif t == "mod_item" and self.name(n) not in ("tests", "test"):
                    self.rust(self.body(n), None)

    def java(self, nodes: list["Node"], cont: str | None) -> None:
        for n in nodes:
            t = n.type
            if t in _JAVA_KINDS:
                name = self.add(self.name(n), _JAVA_KINDS[t], n, cont)
                self.java(
                    [
                        c
                        for m in self.body(n)  # enum members sit in an enum_body_declarations node
                        for c in (m.named_children if m.type == "enum_body_declarations" else [m])
                    ],
                    name,
                )
            elif cont and t in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
                self.add(self.name(n), "method", n, cont)
            elif cont and t in ("field_declaration", "constant_declaration"):
                for d in n.children_by_field_name("declarator"):
                    if re.fullmatch(_CONST, self.name(d)):
                        self.add(self.name(d), "const", n, cont)

    def c_name(self, d: "Node | None", want_function: bool) -> str:
        """Follow a declarator chain down to its name; "" when a function is wanted and this is not one."""
        is_fn = False
        while d is not None and d.type not in (
            "identifier",
            "field_identifier",
            "qualified_identifier",
            "destructor_name",
            "operator_name",
            "type_identifier",
        ):
            is_fn = is_fn or d.type == "function_declarator"
            if d.type == "parenthesized_declarator" or (d.type == "init_declarator" and want_function):
                return ""  # a function pointer, or a variable
            d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_child_count else None)
        if d is None or (want_function and not is_fn):
            return ""
        # "ns::Shape::area" defined outside its class is the member "Shape.area": keep Type.member only
        return ".".join(re.sub(r"<[^<>]*>", "", self.text(d)).split("::")[-2:])

    def c(self, nodes: list["Node"], cont: str | None) -> None:
        for n in nodes:
            t = n.type
            if t in (
                "preproc_if",
                "preproc_ifdef",
                "preproc_else",
                "preproc_elif",
                "preproc_elifdef",
                "template_declaration",
                "declaration_list",
            ):
                self.c(n.named_children, cont)
            elif t == "linkage_specification":  # extern "C": the body is one declaration or a declaration_list
                self.c([c for c in [n.child_by_field_name("body")] if c is not None], cont)
            elif t == "namespace_definition":
                self.add(self.name(n).replace("::", "."), "namespace", n)
                self.c(self.body(n), cont)
            elif t in _C_TYPES:
                self.c_type(n, cont, n)
            elif t == "function_definition":
                self.add(self.c_name(n.child_by_field_name("declarator"), True), "function", n, cont)
            elif t in ("declaration", "field_declaration", "type_definition"):
                ty = n.child_by_field_name("type")
                spec = ty if ty is not None and ty.type in _C_TYPES and ty.child_by_field_name("body") else None
                if spec is not None:
                    alias = self.c_name(n.child_by_field_name("declarator"), False) if t == "type_definition" else ""
                    self.c_type(spec, cont, n, alias)
                for d in n.children_by_field_name("declarator"):
                    fn = self.c_name(d, True)
                    var = "" if fn or t != "declaration" or cont else self.c_name(d, False)
                    if fn:
                        self.add(fn, "function", n, cont)
                    elif t == "type_definition" and cont is None and spec is None:
                        self.add(self.c_name(d, False), "typedef", n)
                    elif var and re.fullmatch(_CONST, var):
                        self.add(var, "const", n)
            elif (
                cont is None
                and t in ("preproc_def", "preproc_function_def")
                and n.child_by_field_name("value")
                and (not re.search(r"_(H|HH|HPP|INCLUDED)_*$", self.name(n)))
            ):  # not a header guard
                self.add(self.name(n), "macro" if "function" in t else "const", n)
            elif t == "alias_declaration":
                self.add(self.name(n), "using", n, cont)

    def c_type(self, spec: "Node", cont: str | None, outer: "Node", alias: str = "") -> None:
        name, kind = self.text(spec.child_by_field_name("name")).replace("::", ".") or alias, _C_TYPES[spec.type]
        if spec.child_by_field_name("body") is None or not name:
            return  # a forward declaration or a use of the type
        qualified = self.add(name, kind, outer, cont)
        if alias and alias != name:
            self.add(alias, "typedef", outer, cont)
        if kind != "enum":
            self.c(self.body(spec), qualified)

    def ruby(self, nodes: list["Node"], cont: str | None) -> None:
        for n in nodes:
            t = n.type
            if t in ("class", "module"):
                self.ruby(self.body(n), self.add(self.name(n).replace("::", "."), t, n))
            elif t in ("method", "singleton_method"):
                self.add(self.name(n), "def", n, cont)
            elif t == "singleton_class":  # class << self
                self.ruby(self.body(n), cont)
            elif t == "assignment" and getattr(n.child_by_field_name("left"), "type", "") == "constant":
                self.add(self.name(n, "left"), "const", n, cont)

    def bash(self, nodes: list["Node"], _: str | None) -> None:
        for n in nodes:
            if n.type == "function_definition":
                self.add(self.name(n), "function", n)
            for a in (
                [n]
                if n.type == "variable_assignment"
                else (n.named_children if n.type == "declaration_command" else [])
            ):  # export X=1, readonly X=1
                if a.type == "variable_assignment" and re.fullmatch(_CONST, self.name(a)):
                    self.add(self.name(a), "const", n)


def _python_ast(text: str) -> tuple[str, list[_Def]] | None:
    """The same Python extraction with the standard library, for when tree-sitter is missing or fails."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines, defs, definitions = text.split("\n"), [], (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

    def start_row(node: ast.stmt) -> int:
        return min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno]) - 1

    def walk(body: list[ast.stmt], cls: str | None) -> None:
        for n in body:
            if isinstance(n, definitions):
                doc = ast.get_docstring(n, clean=False)
                kind = "class" if isinstance(n, ast.ClassDef) else "def"
                doc = _comment_above(lines, start_row(n), ("#",)) if doc is None else doc
                defs.append(_Def(_q(cls, n.name), kind, cls, doc=doc))
                if kind == "class":
                    walk(n.body, _q(cls, n.name))
            elif cls is None and isinstance(n, (ast.Assign, ast.AnnAssign)):
                for target in n.targets if isinstance(n, ast.Assign) else [n.target]:
                    if isinstance(target, ast.Name) and re.fullmatch(_CONST, target.id):
                        defs.append(_Def(target.id, "const", None, doc=""))
            elif cls is None and isinstance(n, (ast.If, ast.Try, ast.With)):
                walk(n.body + getattr(n, "orelse", []) + getattr(n, "finalbody", []), None)
                for handler in getattr(n, "handlers", []):
                    walk(handler.body, None)

    walk(tree.body, None)
    lead = ast.get_docstring(tree, clean=False)
    row = next((start_row(n) for n in tree.body if isinstance(n, definitions)), None)
    return (_lead_comment(lines, ("#",), row) if lead is None else lead), defs


def _lead_comment(lines: list[str], markers: tuple[str, ...], first_def_row: int | None) -> str:
    """The file's first comment block, skipping licences and the comment documenting the first definition."""
    run: list[str] = []
    block = False  # inside a /* ... */ comment
    for row, line in enumerate([*lines[:300], ""]):
        s, closed = line.strip(), False
        if row != first_def_row and (block or s.startswith(markers) or (row == 0 and s.startswith("#!"))):
            run.append(s)
            closed = (block or s.startswith("/*")) and "*/" in s  # a block comment ends a run (licence first)
            block = (block or s.startswith("/*")) and not closed
            if not closed:
                continue
            s = ""
        attached = row + closed == first_def_row and bool(run) and not run[0].startswith(("//!", "/*!"))
        text = "" if attached else _clean_comment("\n".join(run))
        licence = re.search(_LICENSE, text)
        text = text[: text.rfind("\n", 0, licence.start()) + 1].strip() if licence else text  # keep what precedes
        if text:
            return text
        if row == first_def_row or (s and not re.match(_PREAMBLE, s)):
            return ""  # past the imports, includes and package lines that may precede a file comment
        run = []
    return ""


def _comment_above(lines: list[str], row: int, markers: tuple[str, ...]) -> str:
    """The comment lines right above a definition; Rust attributes (#[derive]) in between are stepped over."""
    buf, i = [], row - 1
    markers += ("*",) if "/*" in markers else ()
    while i >= 0 and row - i < 100:
        s = lines[i].strip()
        if s.startswith(markers) and not s.startswith(("//!", "/*!")):
            buf.append(s)
            if s.startswith("/*"):
                break  # the start of the nearest block comment
        elif buf or not s.startswith("#[") or "#" in markers:
            break
        i -= 1
    return _clean_comment("\n".join(reversed(buf)))


def _markers(language: str | None) -> tuple[str, ...]:
    return ("#",) if language in _HASH_COMMENTS else ("--",) if language in ("sql", "lua") else ("//", "/*")


def _compose(language: str, lead: str | None, defs: list[_Def], ex: _Extractor | None) -> str:
    parts = [p for p in [_sentences(lead or "", 3, _LEAD_LIMIT)] if p]
    names, entries, size = {d.name for d in defs}, {}, 0
    for d in defs:  # members appear only when their type is defined elsewhere (Go methods, C++ Foo::bar)
        if d.kind == "const" or (d.container and d.container in names) or d.name in entries:
            continue
        size += len(d.kind) + len(d.name) + 3
        if size > SUMMARY_LIMIT:
            break  # the rest would be cut anyway
        doc = d.doc
        if doc is None and ex is not None and d.node is not None:
            doc = _comment_above(ex.lines, d.node.start_point[0], _markers(language))
        entries[d.name] = (f"{d.kind} {d.name}", _sentences(doc or "", 1, _DOC_LIMIT, first_paragraph=True))
    if entries:
        prefix = " ".join([*parts, "Defines: "])
        spare = SUMMARY_LIMIT - len(prefix) - len("; ".join(e for e, _ in entries.values()))
        out = []
        for entry, doc in entries.values():  # describe definitions in order while the budget allows
            if doc and len(doc) + 3 <= spare:
                entry, spare = f"{entry} — {doc}", spare - len(doc) - 3
            out.append(entry)
        parts.append("Defines: " + "; ".join(out))
    elif defs:
        parts.append("Symbols: " + ", ".join(dict.fromkeys(d.name for d in defs)))
    return _cut(" ".join(parts), SUMMARY_LIMIT)


def _markdown(text: str) -> str:
    """The title, the first paragraph's first sentences, then the other headings."""
    body = re.sub(r"(?ms)^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", "", text)  # fenced code
    body = re.sub(r"(?s)\A---\n.*?\n(---|\.\.\.)\n", "", body)  # front matter
    heading = r"^#{1,6}[ \t]+(.+?)[ \t#]*$|^([^\s*-].*)\n(?:={3,}|-{3,}|~{3,}|\^{3,})[ \t]*$"
    headings = [(m.group(1) or m.group(2)).strip("*_` ") for m in re.finditer(heading, body, re.M)]
    para = next(
        (
            b
            for b in re.split(r"\n\s*\n", re.sub(heading, "\n\n", body, flags=re.M))
            if b.strip() and not b.lstrip().startswith(("<", "!", "|", ">", "[!", "---"))
        ),
        "",
    )
    parts = [headings[0].rstrip(".") + "."] if headings else []
    if para:  # links and emphasis reduced to their text
        parts.append(_sentences(re.sub(r"[*_`]|\[([^\]]*)\]\([^)]*\)", r"\1", para), 2, _LEAD_LIMIT))
    if len(headings) > 1:
        parts.append("Sections: " + "; ".join(headings[1:]))
    return _cut(" ".join(parts), SUMMARY_LIMIT) if parts else _plain(text, None)


_KEYS = {
    "toml": ("Sections", r"^[ \t]*\[+[ \t]*([^\]\n]+?)[ \t]*\]+"),
    "ini": ("Sections", r"^[ \t]*\[([^\]\n]+)\]"),
    "yaml": ("Keys", r"^([A-Za-z_][\w.-]*)[ \t]*:(?:\s|$)"),
    "dotenv": ("Keys", r"^(?:export\s+)?([A-Za-z_]\w*)="),
    "make": ("Targets", r"^([A-Za-z_][\w./-]*)[ \t]*:(?![:=])"),
}


def _plain(text: str, language: str | None, lead: str | None = None) -> str:
    """Files without definitions: the leading comment, then keys, sections or targets, else the first lines."""
    prose, markers = language in (None, "text", "csv"), _markers(language)
    if lead is None and not prose:
        lead = _lead_comment(text.split("\n", 300), markers, None)
    parts = [_sentences(lead or "", 3, _LEAD_LIMIT)]
    head, keys, label = text[:_MAX_PARSE_CHARS], [], "Keys"
    if language == "json" and head.lstrip().startswith("{"):
        import json

        try:
            keys = [str(k) for k in json.loads(head)]
        except ValueError:
            pass
    elif language in _KEYS:
        label, pattern = _KEYS[language]
        keys = re.findall(pattern, head, re.M)
        if not keys and language in ("toml", "ini"):
            label, keys = "Keys", re.findall(r"^([A-Za-z_][\w.-]*)[ \t]*=", head, re.M)
    if keys:
        parts.append(f"{label}: " + ", ".join(list(dict.fromkeys(keys))[:200]))
    else:
        if "/*" in markers or language == "python":  # block comments and docstrings are not code lines
            head = re.sub(r"(?s)/\*.*?\*/|(\"\"\"|''').*?\1", "", head[:50000])
        lines = [" ".join(ln.split())[:160] for ln in head.splitlines()[:400] if re.search(r"\w", ln)]
        lines = [ln for ln in lines if not re.match(_DIRECTIVE, ln) and (prose or not ln.startswith(markers))]
        parts.append((" " if prose else "; ").join(lines[:8]))
    return _cut(" ".join(p for p in parts if p), SUMMARY_LIMIT)


def _extract(language: str, text: str) -> tuple[str | None, list[_Def], _Extractor | None]:
    grammar, head, ex, defs = language, text[:_MAX_PARSE_CHARS], None, []
    if language == "c" and re.search(r"^\s*(class|namespace|template\s*<)\b", head, re.M):
        grammar = "cpp"  # a C++ header named .h
    try:
        ex = _Extractor(grammar, head)
        defs = ex.run()
    except Exception:
        if language != "python":
            raise
    fallback = _python_ast(head) if language == "python" and (ex is None or ex.root.has_error) else None
    if fallback is not None or ex is None:
        return (fallback[0], fallback[1], None) if fallback else (None, [], None)
    lead = ex.py_docstring(ex.root) if grammar == "python" else None
    row = next((d.node.start_point[0] for d in defs if d.kind != "const" and d.node is not None), None)
    return lead or _lead_comment(ex.lines, _markers(language), row) or None, defs, ex


def summarize_local(path: str, text: str) -> LocalSummary:
    """Summarise one file with no network and no model; never raises."""
    return summarize_parsed(path, text)[0]


Parsed = tuple[list[_Def], "_Extractor | None"]  # definitions and the extraction they came from


def summarize_parsed(path: str, text: str) -> tuple[LocalSummary, Parsed | None]:
    """The summary and the tree-sitter extraction it came from, ``(definitions, extractor)`` or
    None when the file was not parsed: ``chunks`` builds the definition chunks from the same parse."""
    language = None
    parsed: Parsed | None = None
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
        language = detect_language(path, text[:256])
        head = text[:8192]
        if not text.strip():
            return LocalSummary(language, "Empty file.", []), None
        if "\x00" in head or len(re.findall(r"[\x01-\x08\x0e-\x1a\x1c-\x1f]", head)) > len(head) / 10:
            return LocalSummary(language, "Binary or non-text content.", []), None
        if language in ("markdown", "rst"):
            return LocalSummary(language, _markdown(text), []), None
        if language not in GRAMMARS:
            return LocalSummary(language, _plain(text, language), []), None
        try:
            lead, defs, ex = _extract(language, text)
            parsed = (defs, ex)
        except Exception:  # noqa: BLE001 - a parser surprise costs the summary its details, never the index
            lead, defs, ex = None, [], None
        symbols = list(dict.fromkeys(d.name for d in defs))[:MAX_SYMBOLS]
        summary = _compose(language, lead, defs, ex) if defs else _plain(text, language, lead)
        return LocalSummary(language, summary, symbols), parsed
    except Exception:  # noqa: BLE001 - a file the summariser cannot read is indexed without a summary
        return LocalSummary(language, "", []), None
