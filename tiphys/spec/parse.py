"""MJCF text -> Spec, and Spec -> MJCF text."""
from __future__ import annotations

import os
import warnings
from typing import Optional

from lxml import etree

from ..errors import ModelError
from ..io.resources import ResourceReader
from .element import Element, element_class, schema_children
from .schema import SCHEMA


class Spec:
    """An editable MJCF model: a tree of elements rooted at ``<mujoco>``.

    ``filename`` and ``basedir`` say where relative asset names are resolved;
    ``assets`` is the in-memory VFS (name -> bytes) given at load time.
    """

    def __init__(self, root: Element, filename: Optional[str], basedir: str,
                 assets: Optional[dict] = None):
        self.root = root
        self.filename = filename
        self.basedir = basedir
        self.assets = dict(assets or {})

    @property
    def model_name(self) -> str:
        return self.root.attr("model") or "MuJoCo Model"

    def sections(self, tag: str) -> list:
        return self.root.find(tag)

    def to_xml(self) -> str:
        return etree.tostring(_to_lxml(self.root), pretty_print=True, encoding="unicode")

    def reader(self) -> ResourceReader:
        return ResourceReader(self.basedir, self.assets)


def _to_lxml(el: Element):
    node = etree.Element(el.tag)
    for name, value in el.items():
        node.set(name, value)
    for c in el.children:
        node.append(_to_lxml(c))
    return node


_PARSER = etree.XMLParser(remove_comments=True, remove_pis=True, resolve_entities=False,
                          huge_tree=False, no_network=True)


def _parse_tree(data: bytes, filename: Optional[str]):
    try:
        return etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else None
        raise ModelError(f"XML syntax error: {exc.msg}", file=filename, line=line) from None
    except ValueError as exc:
        raise ModelError(f"XML error: {exc}", file=filename) from None


def parse_xml(text, filename: Optional[str] = None, assets: Optional[dict] = None,
              basedir: Optional[str] = None) -> Spec:
    """Parse MJCF text (str or bytes) into a Spec, expanding ``<include>``."""
    if basedir is None:
        basedir = os.path.dirname(os.path.abspath(filename)) if filename else os.getcwd()
    reader = ResourceReader(basedir, assets)
    data = text.encode() if isinstance(text, str) else bytes(text)
    node = _parse_tree(data, filename)
    label = os.path.basename(filename) if filename else None
    if not isinstance(node.tag, str) or node.tag != "mujoco":
        raise ModelError(f"root element must be <mujoco>, not <{node.tag}>", file=label,
                         line=node.sourceline, element=str(node.tag))
    root = _convert(node, ("mujoco",), SCHEMA, label, reader, [filename or "<string>"])
    return Spec(root, filename, basedir, assets)


def _convert(node, path, schema_node, label, reader, stack) -> Element:
    tag = path[-1]
    attrs = schema_node["attrs"]
    if tag == "worldbody":
        attrs = ()
    cls = element_class(path, attrs)
    el = cls(xml_file=label, xml_line=node.sourceline)
    for name, value in node.attrib.items():
        if not isinstance(name, str) or name.startswith("{"):
            raise ModelError(f"unknown attribute '{name}'", file=label, line=node.sourceline,
                             element=tag, attribute=str(name))
        if name not in attrs:
            raise ModelError("unknown attribute", file=label, line=node.sourceline,
                             element=tag, attribute=name)
        el.set(name, value)
    allowed = schema_children(schema_node, tag)
    if tag == "mujoco":
        allowed = dict(allowed)
        allowed.pop("body")
        allowed["worldbody"] = SCHEMA["children"]["body"]
    seen_once = set()
    for cnode, clabel in _expanded_children(node, label, reader, stack):
        ctag = cnode.tag
        if ctag not in allowed:
            raise ModelError("unknown element", file=clabel, line=cnode.sourceline, element=ctag)
        sub = allowed[ctag]
        if sub["mult"] in ("?", "!"):
            if ctag in seen_once:
                raise ModelError(f"element may appear only once inside <{tag}>", file=clabel,
                                 line=cnode.sourceline, element=ctag)
            seen_once.add(ctag)
        if sub["children"] is None:  # frame/replicate: children as a body's
            sub = dict(sub, children={})
        el.children.append(_convert(cnode, path + (ctag,), sub, clabel, reader, stack))
    if node.text and node.text.strip():
        _stray_text(label, node.sourceline, f"<{tag}>: text content ignored")
    return el


def _stray_text(label, line, what):
    """Text inside or after an element means nothing in MJCF. MuJoCo ignores it (the
    dm_control suite's stacker.xml has a stray '>' after </visual>), so tiphys loads
    such a model too, and warns naming where the text is."""
    warnings.warn(f"{label or '<string>'}:{line}: {what} (MJCF elements hold no text)",
                  stacklevel=4)


def _expanded_children(node, label, reader, stack):
    """Children of an lxml node with <include file> replaced by the file's contents."""
    for child in node:
        if not isinstance(child.tag, str):
            continue
        if child.tail and child.tail.strip():
            _stray_text(label, child.sourceline,
                        f"<{child.tag}>: text after the element ignored")
        if child.tag != "include":
            yield child, label
            continue
        for name in child.attrib:
            if name != "file":
                raise ModelError("unknown attribute", file=label, line=child.sourceline,
                                 element="include", attribute=name)
        fname = child.get("file")
        if not fname:
            raise ModelError("missing required attribute", file=label, line=child.sourceline,
                             element="include", attribute="file")
        if fname in stack:  # MuJoCo: a file may be included only once (no recursion)
            raise ModelError(f"file '{fname}' already included (recursive or repeated "
                             f"include)", file=label,
                             line=child.sourceline, element="include", attribute="file")
        if len(child):
            raise ModelError("<include> cannot have children", file=label,
                             line=child.sourceline, element="include")
        where = _Where(label, child.sourceline, "include")
        data = reader.read(fname, where=(where, "file"))
        inc = _parse_tree(data, fname)
        if inc.tag != "mujoco":
            raise ModelError("included file must have a <mujoco> root", file=fname,
                             line=inc.sourceline, element=str(inc.tag))
        sub_label = os.path.basename(fname)
        stack.append(fname)  # kept for the whole parse: see the check above
        for item in _expanded_children(inc, sub_label, reader, stack):
            yield item


class _Where:
    def __init__(self, file, line, tag):
        self.xml_file, self.xml_line, self.tag = file, line, tag
