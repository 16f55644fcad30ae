"""No import circle anywhere in the package (DESIGN.md, Layout): every module
of robot_dynamics_ros is parsed, its imports of the package's own modules
resolved (relative ones too), and the graph searched for a cycle. Imports
inside functions count as well: they are how a circle used to be dodged."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "robot_dynamics_ros"


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path, modules):
    """The package's modules that ``path`` imports, anywhere in its body."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from x import y": y may be a module of package x
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            # importing a.b.c runs a and a.b too
            pieces = target.split(".")
            for end in range(1, len(pieces) + 1):
                candidate = ".".join(pieces[:end])
                if candidate in modules and candidate != name:
                    found.add(candidate)
    return found


def import_graph():
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imported_modules(path, paths) for name, path in paths.items()}


def find_cycle(graph):
    """One cycle of ``graph`` as a list of modules, or None (depth-first search)."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for child in sorted(graph[node]):
            if state.get(child) == "open":
                return stack[stack.index(child):] + [child]
            if child not in state:
                cycle = visit(child)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def is_package_init_edge(a, b):
    """a imports b where b is a module inside package a (an __init__ re-export),
    or a is inside package b (importing a submodule runs its package first):
    Python runs these in a fixed order, never as a circle of definitions."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "robot_dynamics_ros.dynamics.kc.search" in graph
    # edges between a package and its own submodules are how Python loads
    # packages, not imports between jobs: left out
    graph = {a: {b for b in bs if not is_package_init_edge(a, b)} for a, bs in graph.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
