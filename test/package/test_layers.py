"""The rooms of the package and their order (docs/design.md, "The rooms"):
every module of robot_dynamics_ros is parsed, its imports of the package's
own modules resolved (relative ones too), and each import checked against
the levels that docs/design.md writes down: a room imports only rooms on
lower levels, the rooms marked "no ROS" import nothing of ROS, and the graph
has no circle. Imports inside functions count as well: they are how a
circle or a back-import is dodged."""
import ast
import re
import pytest
from paths import REPO

PACKAGE = REPO / "robot_dynamics_ros"
DESIGN = REPO / "docs" / "design.md"
# what "no ROS" excludes: the client library, bags, and every message package
ROS = re.compile(r"^(rclpy|rosbags|rcl_interfaces|builtin_interfaces|launch|launch_ros|rosidl_\w+|"
                 r"\w+_msgs|\w+_srvs|robot_dynamics_ros\.(msg|srv))(\.|$)")


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_statements(path):
    """(module named, names imported from it or None) for each import
    statement of ``path``, anywhere in its body, relative ones made absolute."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            yield base, [alias.name for alias in node.names]


def imported_modules(path, modules):
    """The package's modules that ``path`` imports and Python runs for it:
    importing a.b.c runs a and a.b too, and in ``from x import y`` y may be
    a module of package x."""
    found = set()
    for base, names in import_statements(path):
        for target in [base] + [f"{base}.{name}" for name in names or ()]:
            pieces = target.split(".")
            found.update(".".join(pieces[:end]) for end in range(1, len(pieces) + 1))
    return {module for module in found if module in modules and module != module_name(path)}


def import_graph():
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imported_modules(path, paths) for name, path in paths.items()}


def direct_imports(path, modules) -> set:
    """The package's modules that ``path`` names in its imports: for ``from
    x import y`` the module x.y where y is one, else x (not the packages
    that Python runs on the way, as ``imported_modules`` counts them)."""
    found = set()
    for base, names in import_statements(path):
        if names is None:
            found.add(base)
        for name in names or ():
            found.add(f"{base}.{name}" if f"{base}.{name}" in modules else base)
    return {module for module in found if module in modules and module != module_name(path)}


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


def design_table(marker: str) -> list:
    """The rows of the table that follows ``<!-- marker`` in docs/design.md:
    (level, [room, ...], cells)."""
    text = DESIGN.read_text()
    start = text.index("<!-- " + marker)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if not line.strip():
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not cells[0].isdigit():
            continue  # the header and its rule
        rooms = re.findall(r"`([\w.]+)`", cells[1])
        rows.append((int(cells[0]), rooms, cells))
    assert rows, f"no table after <!-- {marker} in {DESIGN}"
    return rows


def room_levels() -> dict:
    """Every room, top-level and inside dynamics, -> (level path, ROS-free)."""
    levels = {}
    for level, rooms, cells in design_table("rooms:"):
        for room in rooms:
            levels["robot_dynamics_ros." + room] = ((level,), cells[2] == "yes")
    for level, rooms, _ in design_table("dynamics:"):
        for room in rooms:
            levels["robot_dynamics_ros." + room] = ((1, level), True)
    return levels


def room_of(module: str, levels: dict) -> str:
    """The most specific room that holds ``module``."""
    best = ""
    for room in levels:
        if (module == room or module.startswith(room + ".")) and len(room) > len(best):
            best = room
    assert best, f"{module} is in no room of docs/design.md: add it to the table of rooms"
    return best


def may_import(importer: str, imported: str, levels: dict) -> bool:
    """Rooms on lower levels only; a dynamics room compares with its siblings first."""
    a, b = levels[importer][0], levels[imported][0]
    if a[0] != b[0]:
        return b[0] < a[0]
    return len(a) == len(b) == 2 and b[1] < a[1]


def test_every_module_is_in_a_room_and_imports_only_rooms_below():
    levels = room_levels()
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {name: direct_imports(path, paths) for name, path in paths.items()}
    assert graph["robot_dynamics_ros.node.dynamics_node"]  # the walk reads imports at all
    wrong = []
    for module, imports in graph.items():
        if module == "robot_dynamics_ros":
            continue
        mine = room_of(module, levels)
        for target in imports - {"robot_dynamics_ros"}:
            theirs = room_of(target, levels)
            if theirs != mine and not may_import(mine, theirs, levels):
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert not wrong, "imports that run up or sideways:\n" + "\n".join(sorted(wrong))


def ros_imports(path) -> set:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name for name in names if ROS.match(name))
    return found


def test_the_rooms_without_ros_import_none():
    levels = room_levels()
    offending = []
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        if module != "robot_dynamics_ros" and levels[room_of(module, levels)][1]:
            offending += [f"{module}: {name}" for name in sorted(ros_imports(path))]
    assert not offending, "ROS imported by a room marked no ROS:\n" + "\n".join(offending)


def test_the_top_levels_stay_small():
    """At most 10 entries in the package and in dynamics/ (caches aside)."""
    for folder in (PACKAGE, PACKAGE / "dynamics"):
        entries = [p.name for p in folder.iterdir() if p.name not in ("__pycache__", "__kernel_cache__")
                   and not p.name.endswith((".so", ".pyc")) and p.name not in ("msg", "srv")]
        assert len(entries) <= 10, (folder, sorted(entries))


def test_every_room_says_what_it_is_and_what_it_may_import():
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent.name in ("msg", "srv"):
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init} has no docstring"
        if init.parent != PACKAGE:
            assert "import" in doc.lower(), f"{init}'s docstring does not say what the room may import"


@pytest.mark.parametrize("importer, imported, allowed", [
    ("robot_dynamics_ros.node", "robot_dynamics_ros.messages", True),
    ("robot_dynamics_ros.messages", "robot_dynamics_ros.node", False),
    ("robot_dynamics_ros.node", "robot_dynamics_ros.replay", False),  # beside it
    ("robot_dynamics_ros.dynamics.kc", "robot_dynamics_ros.dynamics.bounds", True),
    ("robot_dynamics_ros.dynamics.model", "robot_dynamics_ros.dynamics.algorithms", False),
    ("robot_dynamics_ros.dynamics.bounds", "robot_dynamics_ros.served", False),
])
def test_the_rule_itself(importer, imported, allowed):
    assert may_import(importer, imported, room_levels()) is allowed


def test_ros_is_recognised():
    assert all(ROS.match(name) for name in ("rclpy.node", "std_msgs.msg", "robot_dynamics_ros.msg",
                                            "rosbags.rosbag2", "diagnostic_msgs"))
    assert not any(ROS.match(name) for name in ("numpy", "robot_dynamics_ros.messages", "rosidl"))
