"""Default classes: ``<default class>`` trees, ``class`` and ``childclass``."""
from __future__ import annotations

from ..errors import error_at


class DefaultTree:
    """Resolved attribute defaults: class name -> element tag -> {attr: text}."""

    def __init__(self, spec):
        self.classes: dict[str, dict[str, dict[str, str]]] = {"main": {}}
        self.parent: dict[str, str] = {}
        for section in spec.root.find("default"):
            name = section.attr("class") or "main"
            if name != "main":
                raise error_at(section, "top-level default class must be 'main' or unnamed",
                               "class")
            self._add(section, "main", None)
        # classes of <attach>ed models (attach.py): resolved already, prefixed names
        for name, tables in getattr(spec, "attached_defaults", {}).items():
            if name not in self.classes:
                self.classes[name] = {tag: dict(v) for tag, v in tables.items()}
                self.parent[name] = "main"

    def _add(self, section, name: str, parent):
        if parent is not None:
            if name in self.classes:
                raise error_at(section, f"repeated default class name '{name}'", "class")
            self.classes[name] = {tag: dict(v) for tag, v in self.classes[parent].items()}
            self.parent[name] = parent
        table = self.classes[name]
        for child in section.children:
            if child.tag == "default":
                cname = child.attr("class")
                if not cname:
                    raise error_at(child, "nested default needs a class name", "class")
                continue
            table.setdefault(child.tag, {}).update(dict(child.items()))
        for child in section.find("default"):
            self._add(child, child.attr("class"), name)

    def get(self, cls: str, tag: str, el=None) -> dict:
        if cls not in self.classes:
            raise error_at(el, f"unknown default class '{cls}'", "class")
        return self.classes[cls].get(tag, {})

    def check_class(self, cls, el, attribute="class"):
        if cls is not None and cls not in self.classes:
            raise error_at(el, f"unknown default class '{cls}'", attribute)
