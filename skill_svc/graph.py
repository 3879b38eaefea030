"""The skill dependency graph: cycle detection and dependency-first ordering.

Pure functions over an adjacency map ``{skill_id: [depends_on_skill_id, ...]}`` so they are
unit-testable without a database. ``find_cycle`` answers "would adding this edge close a
cycle, and which one"; ``dependencies_first`` is a post-order walk used by LoadSkill so a
skill's prerequisites (and their tools) come before the skill itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def find_path(edges: Mapping[str, Sequence[str]], start: str, goal: str) -> list[str] | None:
    """A path start → … → goal following edges, or None (iterative DFS)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        if node == goal:
            return path
        if node in seen:
            continue
        seen.add(node)
        for nxt in reversed(edges.get(node, ())):
            if nxt not in seen:
                stack.append((nxt, [*path, nxt]))
    return None


def find_cycle(edges: Mapping[str, Sequence[str]], skill: str, depends_on: str) -> list[str] | None:
    """The cycle that the new edge skill → depends_on would close, as a node list starting and
    ending with ``skill``; None when the edge is safe."""
    if skill == depends_on:
        return [skill, skill]
    back = find_path(edges, depends_on, skill)
    if back is None:
        return None
    return [skill, *back]


def dependencies_first(edges: Mapping[str, Sequence[str]], root: str) -> list[str]:
    """Every node reachable from root, each once, dependencies before dependents, root last.
    Edges are followed in their given order; an existing cycle is cut, never looped."""
    order: list[str] = []
    done: set[str] = set()
    on_path: set[str] = set()

    def visit(node: str) -> None:
        if node in done or node in on_path:
            return
        on_path.add(node)
        for nxt in edges.get(node, ()):
            visit(nxt)
        on_path.discard(node)
        done.add(node)
        order.append(node)

    visit(root)
    return order
