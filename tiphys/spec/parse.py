"""MJCF text -> Spec, and Spec -> MJCF text."""
from __future__ import annotations

import os
import re
import warnings
from typing import Optional

from lxml import etree

from .._gc import gc_paused
from ..errors import ModelError
from ..io.resources import ResourceReader, is_abs, join_path, missing, reduce_path
from .element import Element, element_class, schema_children
from .schema import SCHEMA


class Spec:
    """An editable MJCF model: a tree of elements rooted at ``<mujoco>``.

    ``filename`` and ``basedir`` say where the model came from; ``modeldir`` is the
    directory relative asset names start from ("" for text given without a file
    name or a basedir: the working directory, as MuJoCo's ``from_xml_string``);
    ``assets`` is the in-memory VFS (name -> bytes) given at load time.
    """

    def __init__(self, root: Element, filename: Optional[str], basedir: str,
                 assets: Optional[dict] = None, modeldir: Optional[str] = None):
        self.root = root
        self.filename = filename
        self.basedir = basedir
        self.modeldir = basedir if modeldir is None else modeldir
        self.assets = dict(assets or {})

    @property
    def model_name(self) -> str:
        return self.root.attr("model") or "MuJoCo Model"

    def sections(self, tag: str) -> list:
        return self.root.find(tag)

    def find(self, tag: str, name: str) -> Optional[Element]:
        """The element <tag name="name"> anywhere in the model, or None."""
        for el in self.root.iter(tag):
            if el.get_attr("name") == name:
                return el
        return None

    @property
    def worldbody(self) -> Element:
        """The <worldbody> (made when the model has none)."""
        wb = self.root.first("worldbody")
        return wb if wb is not None else self.root.add("worldbody")

    def to_xml(self) -> str:
        return etree.tostring(_to_lxml(self.root), pretty_print=True, encoding="unicode")

    def reader(self) -> ResourceReader:
        return ResourceReader(self.modeldir, self.assets)

    def copy(self) -> "Spec":
        """A deep copy (mj_copySpec): its own element tree, where it came from and
        its in-memory assets; editing one leaves the other as it was."""
        import copy
        return Spec(copy.deepcopy(self.root), self.filename, self.basedir,
                    dict(self.assets), self.modeldir)


def _to_lxml(el: Element):
    node = etree.Element(el.tag)
    for name, value in el.items():
        node.set(name, value)
    for c in el.children:
        node.append(_to_lxml(c))
    return node


_PARSER = etree.XMLParser(remove_comments=True, remove_pis=True, resolve_entities=False,
                          huge_tree=False, no_network=True)


_DECLARATION = re.compile(rb"\s*<\?xml[^>]*\?>")


def _tinyxml_tidy(data: bytes) -> bytes:
    """What MuJoCo's XML reader (tinyxml2) reads and lxml refuses: text after a NUL
    byte is not read, and the XML declaration is skipped whatever it says (its
    version, or whitespace before it). Lines stay where they were."""
    cut = data.find(b"\0")
    if cut >= 0:
        data = data[:cut]
    m = _DECLARATION.match(data)
    if m:
        decl = m.group(0)
        data = re.sub(rb"[^\n]", b" ", decl) + data[m.end():]
    return data


def _parse_tree(data: bytes, filename: Optional[str]):
    try:
        return etree.fromstring(_tinyxml_tidy(data), _PARSER)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else None
        raise ModelError(f"XML syntax error: {exc.msg}", file=filename, line=line) from None
    except ValueError as exc:
        raise ModelError(f"XML error: {exc}", file=filename) from None


@gc_paused
def parse_xml(text, filename: Optional[str] = None, assets: Optional[dict] = None,
              basedir: Optional[str] = None) -> Spec:
    """Parse MJCF text (str or bytes) into a Spec, expanding ``<include>``.

    Relative names (included files, assets) start from ``basedir`` when given, else
    from the directory of ``filename``, else from the working directory.
    """
    if basedir is not None:
        modeldir = basedir
    elif filename:
        # MuJoCo keeps the directory as the caller wrote it; an absolute one is the
        # same directory, and keeps include-relative asset names working (MuJoCo
        # 3.4.0 joins the model directory twice to those when it is relative)
        modeldir = os.path.dirname(os.path.abspath(filename))
    else:
        modeldir = ""
    reader = ResourceReader(modeldir, assets)
    data = text.encode() if isinstance(text, str) else bytes(text)
    node = _parse_tree(data, filename)
    label = os.path.basename(filename) if filename else None
    if isinstance(node.tag, str) and node.tag == "robot":  # URDF, as mj_loadXML reads it
        from .urdf import urdf_to_mjcf
        node = urdf_to_mjcf(node, label)
    if not isinstance(node.tag, str) or node.tag != "mujoco":
        raise ModelError(f"root element must be <mujoco> (MJCF) or <robot> (URDF), not "
                         f"<{node.tag}>", file=label, line=node.sourceline,
                         element=str(node.tag))
    state = _IncludeState(reader, filename or "<string>")
    root = _convert(node, ("mujoco",), SCHEMA, label, "", state)
    return Spec(root, filename, modeldir or os.getcwd(), assets, modeldir=reader.modeldir)


class _IncludeState:
    """What include expansion shares across the whole model (MuJoCo's IncludeXML)."""

    def __init__(self, reader: ResourceReader, model_name: str):
        self.reader = reader
        self.included = {model_name}


def _convert(node, path, schema_node, label, incdir, state) -> Element:
    tag = path[-1]
    cls = element_class(path, () if tag == "worldbody" else schema_node["attrs"])
    if cls.__dict__.get("_schema") is not schema_node:
        # (written once per class: each write to a class empties Python's attribute
        # caches of it, which every element of the class then refills)
        cls._schema = schema_node  # what add() checks new children against
        cls._path = path
    el = object.__new__(cls)  # (new_element, inlined)
    values = el.__dict__
    values["children"] = []
    values["xml_file"] = label
    values["xml_line"] = node.sourceline
    # directory of the file that included this element ("" in the main file): MuJoCo
    # looks there for an asset not found in the asset directories
    values["xml_incdir"] = incdir
    fields_of = cls._fields_of
    for name, value in node.attrib.items():
        field = fields_of.get(name)
        if field is None:
            if not isinstance(name, str) or name.startswith("{"):
                raise ModelError(f"unknown attribute '{name}'", file=label,
                                 line=node.sourceline, element=tag, attribute=str(name))
            raise ModelError("unknown attribute", file=label, line=node.sourceline,
                             element=tag, attribute=name)
        values[field] = value
    if len(node):
        allowed = schema_children(schema_node, tag)
        if tag == "mujoco":
            allowed = dict(allowed)
            allowed["worldbody"] = SCHEMA["children"]["body"]
        seen_once = set()
        children = el.children
        for cnode, ctag, clabel, cdir in _expanded_children(node, label, incdir, state):
            sub = allowed.get(ctag)
            if sub is None:
                raise ModelError("unknown element", file=clabel, line=cnode.sourceline,
                                 element=ctag)
            if sub["mult"] in ("?", "!"):
                if ctag in seen_once:
                    raise ModelError(f"element may appear only once inside <{tag}>",
                                     file=clabel, line=cnode.sourceline, element=ctag)
                seen_once.add(ctag)
            if sub["children"] is None:  # frame/replicate: children as a body's
                sub = _body_like(sub)
            child = _convert(cnode, path + (ctag,), sub, clabel, cdir, state)
            if tag == "mujoco" and ctag == "body":
                # MuJoCo's schema takes a <body> directly under <mujoco> (its worldbody
                # entry is named "body") and its reader never reads it: checked, then
                # dropped (gymnasium-robotics' fetch/robot.xml has one)
                warnings.warn(f"{clabel or '<string>'}:{cnode.sourceline}: <body> directly "
                              f"under <mujoco> is ignored, as MuJoCo ignores it (bodies "
                              f"belong in <worldbody>)", stacklevel=4)
                continue
            children.append(child)
    text = node.text
    if text and text.strip():
        _stray_text(label, node.sourceline, f"<{tag}>: text content ignored")
    return el


_BODY_LIKE_NODES: dict = {}  # id(schema node) -> (the node, its copy with children {})


def _body_like(node: dict) -> dict:
    """A frame/replicate schema node whose children are a body's (one per node)."""
    entry = _BODY_LIKE_NODES.get(id(node))
    if entry is None or entry[0] is not node:
        entry = _BODY_LIKE_NODES[id(node)] = (node, dict(node, children={}))
    return entry[1]


def _stray_text(label, line, what):
    """Text inside or after an element means nothing in MJCF. MuJoCo ignores it (the
    dm_control suite's stacker.xml has a stray '>' after </visual>), so tiphys loads
    such a model too, and warns naming where the text is."""
    warnings.warn(f"{label or '<string>'}:{line}: {what} (MJCF elements hold no text)",
                  stacklevel=4)


def _expanded_children(node, label, incdir, state):
    """(child, its tag, file label, include directory) for the children of an lxml
    node, with each <include file> replaced by the children of the included file's
    root."""
    for child in node:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        tail = child.tail
        if tail and tail.strip():
            _stray_text(label, child.sourceline,
                        f"<{tag}>: text after the element ignored")
        if tag != "include":
            yield child, tag, label, incdir
            continue
        yield from _include(child, label, incdir, state)


def _include(child, label, incdir, state):
    """The children of the file an <include> names (MuJoCo 3.4.0 src/xml/xml.cc
    IncludeXML, and ResolveFilePath in src/xml/xml_util.cc).

    The name is looked up first relative to the main model's directory, then relative
    to the directory of the file holding this <include> (``incdir``). The included
    file's root element may have any name (``<mujoco>``, ``<mujocoinclude>``, ...):
    MuJoCo ignores it and its attributes, and splices in its child elements, of which
    there must be at least one. A file may be included only once.
    """
    for name in child.attrib:
        if name != "file":
            raise ModelError("unknown attribute", file=label, line=child.sourceline,
                             element="include", attribute=name)
    if len(child):
        raise ModelError("<include> cannot have children", file=label,
                         line=child.sourceline, element="include")
    fname = child.get("file")
    if not fname:
        raise ModelError("missing required attribute", file=label, line=child.sourceline,
                         element="include", attribute="file")
    where = _Where(label, child.sourceline, "include")
    reader = state.reader
    name = reduce_path(fname)
    note = ""
    if not is_abs(name):
        probe = join_path(reader.modeldir, name)
        if not reader.exists(probe):
            name = join_path(incdir, name)
            if incdir:
                note = (f"not found as '{probe}' (model directory), so taken relative to "
                        f"the including file's directory '{incdir}'")
    if name in state.included:  # MuJoCo: a file may be included only once (no recursion)
        raise ModelError(f"file '{fname}' already included (recursive or repeated "
                         f"include)", file=label,
                         line=child.sourceline, element="include", attribute="file")
    try:
        res, tried = reader.open(name)
        if res is None and not is_abs(name) and incdir:
            res, more = reader.open(join_path(incdir, name))
            tried += more
    except ModelError as exc:  # an ambiguous assets-dict name, a provider failing
        raise ModelError(exc.detail, file=label, line=child.sourceline, element="include",
                         attribute="file") from exc.__cause__
    if res is None:
        raise missing(fname, tried, (where, "file"), note)
    state.included.add(join_path(incdir, name))
    sub_label = os.path.basename(fname)
    if not res.content:
        raise ModelError(f"empty file '{fname}'", file=label, line=child.sourceline,
                         element="include", attribute="file")
    if not _has_element(res.content):
        raise ModelError(f"root element missing in file '{fname}'", file=label,
                         line=child.sourceline, element="include", attribute="file")
    inc = _parse_tree(res.content, sub_label)
    if not any(isinstance(c.tag, str) for c in inc):
        raise ModelError(f"empty include file '{fname}' (its root <{inc.tag}> has no "
                         f"child elements)", file=label, line=child.sourceline,
                         element="include", attribute="file")
    yield from _expanded_children(inc, sub_label, res.dir, state)


def _has_element(data: bytes) -> bool:
    """Whether XML bytes hold an element (not only a declaration, comments, space)."""
    try:
        etree.fromstring(data, _PARSER)
        return True
    except etree.XMLSyntaxError as exc:
        return not ("Document is empty" in exc.msg or "Start tag expected" in exc.msg)


class _Where:
    def __init__(self, file, line, tag):
        self.xml_file, self.xml_line, self.tag = file, line, tag
