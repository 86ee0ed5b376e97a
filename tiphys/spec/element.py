"""Spec elements: one dataclass per MJCF element, generated from the schema.

Attribute values are kept as the text written in the file (``None`` when absent),
so a Spec round-trips to XML unchanged; the compiler converts and checks them and
reports errors with the element's file and line.
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Iterator, Optional

from .schema import SCHEMA


_KEYWORD_FIELDS = {kw: kw + "_" for kw in keyword.kwlist}


def pyname(attr: str) -> str:
    """Python field name of an MJCF attribute (``class`` -> ``class_``)."""
    return _KEYWORD_FIELDS.get(attr, attr)


@dataclass(eq=False)
class Element:
    """Base of every spec element."""

    tag = ""
    attr_names = ()
    _fields_of = {}  # schema attribute -> Python field name, per element class
    _attr_of = {}  # Python field name -> schema attribute

    def attr(self, name: str) -> Optional[str]:
        return getattr(self, _KEYWORD_FIELDS.get(name, name))  # (pyname, inlined)

    def get_attr(self, name: str) -> Optional[str]:
        """The attribute's text; None when absent or not an attribute of this element."""
        py = self._fields_of.get(name)
        return None if py is None else getattr(self, py)

    def set(self, name: str, value) -> None:
        py = self._fields_of.get(name)
        if py is None:
            raise AttributeError(f"<{self.tag}> has no attribute '{name}'")
        setattr(self, py, None if value is None else str(value))

    def items(self) -> Iterator[tuple[str, str]]:
        """Attributes that are set, in schema order."""
        values = self.__dict__  # (an attribute not set is not there: see new_element)
        for name, field_name in self._fields_of.items():
            value = values.get(field_name)
            if value is not None:
                yield name, value

    def find(self, tag: str) -> list:
        return [c for c in self.children if c.tag == tag]

    def first(self, tag: str):
        for c in self.children:
            if c.tag == tag:
                return c
        return None

    def allowed_children(self) -> dict:
        """tag -> schema node of the children this element may have (as the reader
        allows them)."""
        node = getattr(type(self), "_schema", None)
        if node is None:
            raise TypeError(f"<{self.tag}> was not made by the MJCF reader or add()")
        allowed = schema_children(node, self.tag)
        if self.tag == "mujoco":
            allowed = dict(allowed)
            allowed.pop("body", None)
            allowed["worldbody"] = SCHEMA["children"]["body"]
        return allowed

    def add(self, tag: str, **attrs) -> "Element":
        """A new child <tag> with the given attributes (``class_=`` for class), last
        among this element's children; checked against MuJoCo's schema as the reader
        checks a file."""
        allowed = self.allowed_children()
        if tag not in allowed:
            raise ValueError(f"<{self.tag}> cannot contain <{tag}>; it takes "
                             f"{', '.join(sorted(allowed))}")
        sub = allowed[tag]
        if sub["mult"] in ("?", "!") and self.first(tag) is not None:
            raise ValueError(f"<{tag}> may appear only once inside <{self.tag}>")
        if sub["children"] is None:  # frame/replicate: children as a body's
            sub = dict(sub, children={})
        path = getattr(type(self), "_path", (self.tag,)) + (tag,)
        cls = element_class(path, () if tag == "worldbody" else sub["attrs"])
        cls._schema = sub
        cls._path = path
        el = new_element(cls, None, None)
        el.__dict__["xml_incdir"] = ""
        for name, value in attrs.items():
            el.set(self._attr_name(cls, name), value)
        self.children.append(el)
        return el

    @staticmethod
    def _attr_name(cls, name: str) -> str:
        attr = cls._attr_of.get(name, name)
        if attr not in cls._fields_of:
            raise AttributeError(f"<{cls.tag}> has no attribute '{attr}'; it has "
                                 f"{', '.join(cls.attr_names)}")
        return attr

    def remove(self, child: "Element") -> None:
        """Take ``child`` (and everything inside it) out of this element."""
        for i, c in enumerate(self.children):
            if c is child:
                del self.children[i]
                return
        raise ValueError(f"<{child.tag}> is not a child of this <{self.tag}>")

    def iter(self, tag: Optional[str] = None) -> Iterator["Element"]:
        """Depth-first pre-order over this element and its descendants."""
        if tag is None or self.tag == tag:
            yield self
        for c in self.children:
            yield from c.iter(tag)


# Elements the table does not list: handled by the reader, schema given here.
_POSE = ("pos", "quat", "axisangle", "xyaxes", "zaxis", "euler")
EXTRA_CHILDREN = {
    "frame": {"mult": "*", "attrs": ("name", "childclass") + _POSE, "children": None},
    # 3.4.0's reader ignores <replicate prefix> (its schema checks no <replicate>
    # attribute): accepted here, and ignored with a warning by the compiler
    "replicate": {"mult": "*",
                  "attrs": ("count", "offset", "euler", "sep", "prefix", "childclass"),
                  "children": None},
}

_CLASSES: dict[tuple, type] = {}  # path -> class
_DATACLASSES: dict[tuple, type] = {}  # (last two tags of the path, attributes) -> dataclass


def _class_name(path: tuple) -> str:
    return "".join(p.capitalize() for p in path[-2:]) if len(path) > 1 else path[0].capitalize()


def element_class(path: tuple, attrs: tuple) -> type:
    """The dataclass for the element at schema ``path`` (tuple of tags)."""
    cls = _CLASSES.get(path)  # (made once per path: one lookup after that)
    if cls is not None:
        return cls
    key = (path[-2:], tuple(attrs))
    base = _DATACLASSES.get(key)
    if base is None:
        spec_fields = [(pyname(a), Optional[str], field(default=None)) for a in attrs]
        spec_fields += [("children", list, field(default_factory=list, repr=False)),
                        ("xml_file", Optional[str], field(default=None, repr=False)),
                        ("xml_line", Optional[int], field(default=None, repr=False))]
        base = make_dataclass(_class_name(path), spec_fields, bases=(Element,), eq=False)
        base.tag = path[-1]
        base.attr_names = tuple(attrs)
        base._fields_of = {a: pyname(a) for a in attrs}
        base._attr_of = {pyname(a): a for a in attrs}
        _DATACLASSES[key] = base
    # each path has a class of its own (the reader keeps the path's schema node on
    # it): a plain subclass of the dataclass of its last two tags, as make_dataclass
    # (a few hundred microseconds) would make the same class again for each depth of
    # a nested body
    cls = type(base.__name__, (base,), {"__qualname__": base.__qualname__})
    _CLASSES[path] = cls
    return cls


def new_element(cls: type, xml_file: Optional[str], xml_line: Optional[int]) -> Element:
    """``cls(xml_file=..., xml_line=...)`` without the dataclass __init__ (which takes
    every attribute as a keyword: slow for elements with dozens of attributes). The
    attributes not set are not in the instance's dict: they read as the class's None
    (the dataclass default), and the compiler's reads of an element's attributes
    walk only those written."""
    el = object.__new__(cls)
    d = el.__dict__
    d["children"] = []
    d["xml_file"] = xml_file
    d["xml_line"] = xml_line
    return el


_BODY_LIKE = ("body", "worldbody", "frame", "replicate")
_BODY_LIKE_CHILDREN: dict[str, dict] = {}  # the same for every such element: built once


def schema_children(node: dict, tag: str) -> dict:
    """Allowed children of a schema node; body-like nodes get frame/replicate too.
    The result is shared: callers copy it before changing it."""
    if tag in _BODY_LIKE:
        children = _BODY_LIKE_CHILDREN.get(tag)
        if children is None:
            body = SCHEMA["children"]["body"]
            children = dict(body["children"])
            children["body"] = body
            for k, v in EXTRA_CHILDREN.items():
                children[k] = v
            if tag == "worldbody":
                for k in ("inertial", "joint", "freejoint"):
                    children.pop(k)
            _BODY_LIKE_CHILDREN[tag] = children
        return children
    if tag == "default":
        children = dict(node["children"])
        children["default"] = node
        return children
    return node["children"]


def all_fields(el: Element) -> list[str]:
    return [f.name for f in fields(el)]
