"""YAML as netsim reads what a user wrote (scenarios, sweeps, ``--set`` values): PyYAML's safe
loader, plus two refusals. A key given twice in one mapping is an error naming the key and its
line (PyYAML silently keeps the last value). Aliases (``*name``) stay allowed, as netsim's own
config.yaml files use them for shared sections, but a document whose aliases expand to more than
:data:`MAX_VALUES` values is refused before anything expands it (a "billion laughs" alias bomb
of 2 kB would otherwise be a value of gigabytes once printed or copied).
"""
from __future__ import annotations

from typing import Any

import yaml

#: the most values (scalars, lists and mappings) a document may hold with its aliases expanded
MAX_VALUES = 1_000_000


class Refused(yaml.MarkedYAMLError):
    """A document netsim does not accept; ``problem`` says why, ``problem_mark`` where."""


class StrictLoader(yaml.SafeLoader):
    """:class:`yaml.SafeLoader` refusing duplicate keys and alias bombs (module doc)."""

    def compose_document(self):
        node = super().compose_document()
        if expanded_size(node) > MAX_VALUES:
            raise Refused(problem=f"its aliases expand to more than {MAX_VALUES:,} values")
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    if key in seen:
                        raise Refused(problem=f"duplicate key {key!r}",
                                      problem_mark=key_node.start_mark)
                    seen.add(key)
        return super().construct_mapping(node, deep)


def expanded_size(node: yaml.Node) -> int:
    """Values ``node`` holds with every alias expanded (counted once per distinct node, so a bomb
    is measured without expanding it); more than :data:`MAX_VALUES` for a recursive alias."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(n: yaml.Node) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:                       # an alias inside its own anchor
            return MAX_VALUES + 1
        open_nodes.add(key)
        if isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(item) for item in n.value)
        elif isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        else:
            total = 1
        open_nodes.discard(key)
        sizes[key] = min(total, MAX_VALUES + 1)
        return sizes[key]
    return size(node)


def load(text: str) -> Any:
    """The YAML document ``text`` (:class:`StrictLoader`); raises :class:`yaml.YAMLError`."""
    return yaml.load(text, Loader=StrictLoader)


def problem(exc: Exception) -> str:
    """One line saying what is wrong with a document and where: ``duplicate key 'x' at line 3``."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"{exc.problem}{where}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
