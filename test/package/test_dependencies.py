"""Every import of an entry point is declared where its users install from
(DESIGN.md, Layout; issue 47, item 5).

For each console script (node, demo, replay, certify) the package's own
modules are walked by AST from the script's module: module-level and
function-level imports alike, following the imports of robot_dynamics_ros.*
transitively (and the packages whose ``__init__`` an import runs). The
standard library is left out (``sys.stdlib_module_names``); an import of the
generated ``robot_dynamics_ros.msg``/``.srv`` counts as the imports of those
interfaces: the packages their .msg/.srv files name and rosidl's runtime.
``importlib.metadata.distribution("X")`` counts too: it needs X installed.

Each third-party top-level name is mapped to its distributions by the table
DISTRIBUTIONS below, and each use must be declared, for that entry point:

- pip: in the requirement sets ``scripts/run.sh`` installs for its command
  (the node has no command of its own: the demo's, whose demo runs the node),
  and pinned in requirements/constraints.txt;
- rosdep: in package.xml as an <exec_depend>/<depend> key or, for a
  distribution with no rosdep key, in the ``pip install ...`` step that an
  XML comment of package.xml names (and the README repeats);
- setup.py: non-ROS distributions in ``install_requires`` plus the extras
  named for the entry point (ROS itself comes from a ROS installation or the
  ros-jazzy-* wheels of requirements/ros.txt, never from setup.py).

A use that is optional (guarded by try/except with a message saying what to
install) may be allowed in OPTIONAL, with the reason; the guard is checked.
"""
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "robot_dynamics_ros"
SOURCES = REPO / PACKAGE
INTERFACES = ("robot_dynamics_ros.msg", "robot_dynamics_ros.srv")


@dataclass(frozen=True)
class EntryPoint:
    module: str
    run_sh: str  # the scripts/run.sh command whose requirement sets it runs on
    extras: tuple  # setup.py's extras it needs beside install_requires


ENTRY_POINTS = {
    # scripts/run.sh has no command of the node's own: `run.sh demo` installs
    # what the demo runs, which is the node (and a stream and a monitor)
    "node": EntryPoint("robot_dynamics_ros.node.cli", "demo", ()),
    "demo": EntryPoint("robot_dynamics_ros.demo.cli", "demo", ()),
    "replay": EntryPoint("robot_dynamics_ros.replay.cli", "replay", ("replay",)),
    "certify": EntryPoint("robot_dynamics_ros.certify.cli", "certify", ("certify",)),
}


@dataclass(frozen=True)
class Distribution:
    pip: str  # the distribution in requirements/ (PyPI)
    rosdep: str  # package.xml's key; None: no rosdep key, the pip step names `pip`
    setup: bool  # declared by setup.py (False: ROS, from the ROS installation or ros.txt)


def ros(package, pip=None):
    """A ROS package: its rosdep key is its name, its wheel ros-jazzy-NAME."""
    return Distribution(pip or "ros-jazzy-" + package.replace("_", "-"), package, False)


# Top-level import name (or, for importlib.metadata.distribution, the
# distribution's name) -> where it is declared.
DISTRIBUTIONS = {
    "numpy": Distribution("numpy", "python3-numpy", True),
    "numba": Distribution("numba", "python3-numba", True),
    # urdf_parser_py is released in ROS as urdfdom_py (python3-urdf-parser-py
    # is no rosdep key)
    "urdf_parser_py": Distribution("urdf-parser-py", "urdfdom_py", True),
    "scipy": Distribution("scipy", "python3-scipy", True),
    "matplotlib": Distribution("matplotlib", "python3-matplotlib", True),
    "tqdm": Distribution("tqdm", "python3-tqdm", True),
    # no system package: rosdep's key installs it with pip (ros/rosdistro#37795)
    "rosbags": Distribution("rosbags", "python3-rosbags-pip", True),
    # no rosdep key at all: package.xml's pip step
    "dask": Distribution("dask", None, True),
    "distributed": Distribution("distributed", None, True),
    "rclpy": ros("rclpy"),
    "rcl_interfaces": ros("rcl_interfaces"),
    "builtin_interfaces": ros("builtin_interfaces"),
    "std_msgs": ros("std_msgs"),
    "sensor_msgs": ros("sensor_msgs"),
    "geometry_msgs": ros("geometry_msgs"),
    "diagnostic_msgs": ros("diagnostic_msgs"),
    "nav_msgs": ros("nav_msgs"),
    # what the generated interfaces import besides the message packages they
    # name: rosidl's runtime (type support, a service's event messages)
    "rosidl_generator_py": ros("rosidl_default_runtime"),
    "service_msgs": ros("rosidl_default_runtime"),
    # solo12's URDF for `robot_dynamics_demo --robot solo12` (OPTIONAL)
    "example-robot-data": Distribution("example-robot-data", "example-robot-data", False),
}

# Uses left undeclared for an entry point on purpose: (entry point, name) -> why.
OPTIONAL = {
    ("demo", "example-robot-data"):
        "only `--robot solo12` reads solo12's URDF from it (demo/quadruped.py); without it "
        "ExampleRobotDataMissing says `pip install example-robot-data` and the PUMA demo runs",
}
GUARDS = {"module": {"ImportError", "ModuleNotFoundError"}, "distribution": {"PackageNotFoundError"}}


# ---------------------------------------------------------------- the walk


@dataclass(frozen=True)
class Use:
    name: str  # top-level module, or a distribution's name
    kind: str  # "module" or "distribution"
    module: str  # the package's module that has the import
    line: int
    statement: str
    guarded: bool  # inside a try whose handlers catch GUARDS[kind]

    def where(self):
        if not self.line:  # what the generated interfaces import
            return f"{self.module} (`{self.statement}`)"
        return f"{self.module} (line {self.line}: `{self.statement}`)"


def package_modules():
    modules = {}
    for path in SOURCES.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def interface_imports():
    """What importing the generated interfaces imports: the packages their
    .msg/.srv files name, and rosidl's runtime."""
    named = set()
    for path in sorted((REPO / "msg").glob("*.msg")) + sorted((REPO / "srv").glob("*.srv")):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*([a-z][a-z0-9_]*)/[A-Z]\w*", line.split("#")[0])
            if match:
                named.add(match.group(1))
    named.discard(PACKAGE)
    return named | {"rosidl_generator_py", "service_msgs"}


def _handler_names(handler):
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {ast.unparse(t).rsplit(".", 1)[-1] for t in types if t is not None}


def _context(node, parents):
    """(guarded by, skipped): the exception names of the try bodies around
    ``node``, and whether it sits under ``if TYPE_CHECKING`` (never runs)."""
    caught, child = set(), node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.Try) and child in parent.body:
            for handler in parent.handlers:
                caught |= _handler_names(handler)
        if isinstance(parent, ast.If) and child in parent.body and "TYPE_CHECKING" in ast.unparse(parent.test):
            return caught, True
        child = parent
    return caught, False


def imports_of(name, path):
    """(package modules imported, third-party uses, problems) of one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    own, uses, problems = set(), [], []
    modules = package_modules()

    def use(top, kind, node):
        caught, skipped = _context(node, parents)
        if not skipped:
            uses.append(Use(top, kind, name, node.lineno, ast.unparse(node).splitlines()[0],
                            bool(caught & GUARDS[kind])))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("metadata.distribution") \
                and node.args and isinstance(node.args[0], ast.Constant):
            use(node.args[0].value, "distribution", node)
            continue
        if isinstance(node, ast.Import):
            targets = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [(base, [alias.name for alias in node.names])]
        else:
            continue
        for base, names in targets:
            top = base.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            if top != PACKAGE:
                use(top, "module", node)
                continue
            candidates = [base] + [f"{base}.{n}" for n in names]
            if any(c == i or c.startswith(i + ".") for c in candidates for i in INTERFACES):
                own.add("<interfaces>")
            elif base not in modules:
                problems.append(f"{name} (line {node.lineno}) imports {base}, no module of the package")
            own.update(c for c in candidates if c in modules)
    return own, uses, problems


def walk(entry):
    """Every third-party use reachable from the module ``entry``, and problems."""
    modules = package_modules()
    seen, todo, uses, problems = set(), [entry], [], []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name == "<interfaces>":
            uses += [Use(top, "module", "the generated robot_dynamics_ros.msg/srv", 0,
                         f"import {top} (msg/, srv/)", False) for top in sorted(interface_imports())]
            continue
        # importing a.b.c runs a/__init__ and a/b/__init__ first
        pieces = name.split(".")
        todo += [".".join(pieces[:end]) for end in range(1, len(pieces)) if ".".join(pieces[:end]) in modules]
        own, found, wrong = imports_of(name, modules[name])
        todo += sorted(own)
        uses += found
        problems += wrong
    return seen, uses, problems


WALKS = {}


def uses_of(entry_point):
    if entry_point not in WALKS:
        WALKS[entry_point] = walk(ENTRY_POINTS[entry_point].module)
    return WALKS[entry_point][1]


class Uses(list):
    """The uses of one name: where() names the first and counts the others."""

    def where(self):
        more = f" [+{len(self) - 1} more]" if len(self) > 1 else ""
        return self[0].where() + more


def needed(entry_point, uses=None):
    """{name: Uses} of what ``entry_point`` needs declared (OPTIONAL left out)."""
    result = {}
    for use in uses if uses is not None else uses_of(entry_point):
        if (entry_point, use.name) not in OPTIONAL:
            result.setdefault(use.name, Uses()).append(use)
    return result


# ---------------------------------------------------------- the declarations


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(text):
    names = set()
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.add(normalize(re.split(r"[\s<>=!~;\[@]", line)[0]))
    return names


def run_sh_sets():
    """{command: [requirement set, ...]} as scripts/run.sh's case says."""
    sets = {}
    for commands, names in re.findall(r'^\s*([\w|]+)\)\s*sets="([^"]*)"', (REPO / "scripts/run.sh").read_text(), re.M):
        for command in commands.split("|"):
            sets[command] = names.split()
    return sets


def pip_declared(sets):
    return set().union(*(requirement_names((REPO / f"requirements/{s}.txt").read_text()) for s in sets))


def package_xml(text):
    """(rosdep keys of exec_depend/depend, distributions of the pip step named in a comment)."""
    keys = set(re.findall(r"<(?:exec_depend|depend)(?:\s[^>]*)?>\s*([^<\s]+)\s*</", text))
    pip_step = set()
    for comment in re.findall(r"<!--(.*?)-->", text, re.S):
        for names in re.findall(r"pip install((?:[ \t]+[A-Za-z0-9][A-Za-z0-9._-]*)+)", comment):
            pip_step |= {normalize(n) for n in names.split()}
    return keys, pip_step


def pip_step_command(text):
    """package.xml's pip step as written (`pip install a b`), or None."""
    for comment in re.findall(r"<!--(.*?)-->", text, re.S):
        match = re.search(r"pip install(?:[ \t]+[A-Za-z0-9][A-Za-z0-9._-]*)+", comment)
        if match:
            return match.group(0)
    return None


def setup_requirements(text):
    """(install_requires, {extra: [...]}) of setup.py's setup() call."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "setup":
            given = {k.arg: k.value for k in node.keywords}
            install = ast.literal_eval(given.get("install_requires", ast.List(elts=[])))
            extras = ast.literal_eval(given.get("extras_require", ast.Dict(keys=[], values=[])))
            return ({normalize(n) for n in install},
                    {extra: {normalize(n) for n in names} for extra, names in extras.items()})
    raise AssertionError("setup.py has no setup() call")


def console_scripts(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CONSOLE_SCRIPTS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no CONSOLE_SCRIPTS")


# ---------------------------------------------------------------- the checks


def pip_problems(entry_point, declared, pinned, uses=None):
    problems = []
    sets = " ".join(run_sh_sets()[ENTRY_POINTS[entry_point].run_sh])
    for name, use in needed(entry_point, uses).items():
        pip = normalize(DISTRIBUTIONS[name].pip)
        if pip not in declared:
            problems.append(f"{entry_point}: {use.where()} needs {pip}, which no requirement set that "
                            f"`scripts/run.sh {ENTRY_POINTS[entry_point].run_sh}` installs ({sets}) names")
        elif pip not in pinned:
            problems.append(f"{entry_point}: {pip} ({use.where()}) has no pin in requirements/constraints.txt")
    return problems


def rosdep_problems(entry_point, keys, pip_step, uses=None):
    problems = []
    for name, use in needed(entry_point, uses).items():
        dist = DISTRIBUTIONS[name]
        if dist.rosdep is not None and dist.rosdep not in keys:
            problems.append(f"{entry_point}: {use.where()} needs {dist.pip}, whose rosdep key "
                            f"{dist.rosdep} package.xml does not declare (<exec_depend>)")
        if dist.rosdep is None and normalize(dist.pip) not in pip_step:
            problems.append(f"{entry_point}: {use.where()} needs {dist.pip}, which has no rosdep key and "
                            "package.xml's pip step (a comment: pip install ...) does not name")
    return problems


def setup_problems(entry_point, install, extras, uses=None):
    problems = []
    entry = ENTRY_POINTS[entry_point]
    declared = set(install).union(*(extras.get(e, set()) for e in entry.extras))
    for extra in entry.extras:
        if extra not in extras:
            problems.append(f"{entry_point}: setup.py has no extra [{extra}]")
    for name, use in needed(entry_point, uses).items():
        dist = DISTRIBUTIONS[name]
        if dist.setup and normalize(dist.pip) not in declared:
            where = "install_requires" + "".join(f" or extras [{e}]" for e in entry.extras)
            problems.append(f"{entry_point}: {use.where()} needs {dist.pip}, which setup.py's {where} lacks")
    return problems


def test_every_console_script_has_a_row():
    scripts = console_scripts((REPO / "setup.py").read_text())
    rows = {e.module for e in ENTRY_POINTS.values()}
    assert set(scripts.values()) == rows, f"console scripts {scripts} against ENTRY_POINTS {rows}"
    assert set(run_sh_sets()) >= {e.run_sh for e in ENTRY_POINTS.values()}, run_sh_sets()


def test_the_walk_finds_what_is_known_to_be_there():
    seen, uses, problems = walk(ENTRY_POINTS["node"].module)
    assert {"robot_dynamics_ros.node.dynamics_node", "robot_dynamics_ros.messages.cdr",
            "robot_dynamics_ros", "<interfaces>"} <= seen
    by_name = {(u.name, u.module) for u in uses}
    assert ("rosbags", "robot_dynamics_ros.messages.cdr") in by_name  # at module level
    assert ("scipy", "robot_dynamics_ros.identification.residuals") in by_name  # inside a function
    assert ("std_msgs", "the generated robot_dynamics_ros.msg/srv") in by_name
    demo = {u.name: u for u in uses_of("demo")}
    assert demo["example-robot-data"].kind == "distribution" and demo["example-robot-data"].guarded
    assert "dask" in {u.name for u in uses_of("certify")}
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_every_import_is_in_the_table(entry_point):
    seen, uses, problems = walk(ENTRY_POINTS[entry_point].module)
    unknown = sorted({f"{u.name}: {u.where()}" for u in uses if u.name not in DISTRIBUTIONS})
    assert not unknown, ("third-party imports missing from DISTRIBUTIONS (say where each is declared):\n"
                         + "\n".join(unknown))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_the_requirement_sets_declare_every_import(entry_point):
    declared = pip_declared(run_sh_sets()[ENTRY_POINTS[entry_point].run_sh])
    pinned = requirement_names((REPO / "requirements/constraints.txt").read_text())
    problems = pip_problems(entry_point, declared, pinned)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_package_xml_declares_every_import(entry_point):
    keys, pip_step = package_xml((REPO / "package.xml").read_text())
    problems = rosdep_problems(entry_point, keys, pip_step)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_setup_py_declares_every_import(entry_point):
    install, extras = setup_requirements((REPO / "setup.py").read_text())
    problems = setup_problems(entry_point, install, extras)
    assert not problems, "\n".join(problems)


def test_the_pip_step_is_for_what_rosdep_cannot_install_and_the_readme_names_it():
    text = (REPO / "package.xml").read_text()
    keys, pip_step = package_xml(text)
    without_key = {normalize(d.pip) for d in DISTRIBUTIONS.values() if d.rosdep is None}
    assert pip_step == without_key, f"package.xml's pip step {sorted(pip_step)}, no rosdep key: {sorted(without_key)}"
    command = pip_step_command(text)
    assert command in (REPO / "README.md").read_text(), f"the README does not name package.xml's `{command}`"


def test_optional_uses_are_guarded_and_exist():
    for (entry_point, name), reason in OPTIONAL.items():
        assert reason and entry_point in ENTRY_POINTS
        uses = [u for u in uses_of(entry_point) if u.name == name]
        assert uses, f"OPTIONAL ({entry_point}, {name}): no such use any more"
        unguarded = [u.where() for u in uses if not u.guarded]
        assert not unguarded, (f"OPTIONAL ({entry_point}, {name}) is used without a try/except "
                               f"{'/'.join(sorted(GUARDS[uses[0].kind]))}: {unguarded}")


def test_nothing_is_declared_that_no_entry_point_imports():
    """setup.py's lists and the requirement sets of Python imports name only
    what the entry points that install them import (stale ones mislead)."""
    def imported(entry_points):
        return {normalize(DISTRIBUTIONS[n].pip) for e in entry_points for n in needed(e) if n in DISTRIBUTIONS}

    install, extras = setup_requirements((REPO / "setup.py").read_text())
    stale = [f"setup.py install_requires: {n}" for n in sorted(install - imported(ENTRY_POINTS))]
    for extra, names in extras.items():
        users = [e for e, row in ENTRY_POINTS.items() if extra in row.extras]
        stale += [f"setup.py extras [{extra}]: {n}" for n in sorted(names - imported(users))]
    commands = run_sh_sets()
    for set_name in ("dynamics", "runtime", "replay"):  # the sets of the package's own imports
        users = [e for e, row in ENTRY_POINTS.items() if set_name in commands[row.run_sh]]
        names = requirement_names((REPO / f"requirements/{set_name}.txt").read_text())
        stale += [f"requirements/{set_name}.txt: {n}" for n in sorted(names - imported(users))]
    assert not stale, "declared, imported by no entry point that installs it:\n" + "\n".join(stale)


def test_the_checks_name_what_is_missing():
    """Each check fails, naming the module and the import, when a declaration goes."""
    uses = [Use("rosbags", "module", "robot_dynamics_ros.messages.cdr", 28,
                "from rosbags.typesys import Stores", False),
            Use("dask", "module", "robot_dynamics_ros.certify.engine", 17, "from dask.distributed import Client",
                False)]
    text = (REPO / "package.xml").read_text()
    keys, pip_step = package_xml(text)
    assert rosdep_problems("node", keys, pip_step, uses) == []
    [problem] = rosdep_problems("node", keys - {"python3-rosbags-pip"}, pip_step, uses)
    assert "robot_dynamics_ros.messages.cdr (line 28: `from rosbags.typesys import Stores`)" in problem
    [problem] = rosdep_problems("certify", keys, pip_step - {"dask"}, uses)
    assert "robot_dynamics_ros.certify.engine" in problem and "pip step" in problem
    [problem] = pip_problems("node", {"dask"}, {"dask", "rosbags"}, uses)
    assert "rosbags" in problem and "scripts/run.sh demo" in problem
    [problem] = setup_problems("node", {"dask"}, {}, uses)
    assert "rosbags" in problem and "install_requires" in problem
    # the declared files parse as the checks expect
    assert {"rclpy", "python3-numpy"} <= keys
    assert "numpy" in pip_declared(["dynamics"])
    assert setup_requirements("setup(install_requires=['a_b'], extras_require={'x': ['C']})") == \
        ({"a-b"}, {"x": {"c"}})
