"""pip's build of the package's messages and service: rosidl's generators in
this process, then the C and C++ compilers, without CMake.

colcon builds the package with CMakeLists.txt (``rosidl_generate_interfaces``:
C, C++ and Python). pip's route (setup.py) needs only what rclpy uses, the C
type supports and the Python classes, and builds them the way that CMake
function does for them: the ``.msg`` and ``.srv`` files adapted to IDL
(rosidl_adapter), the type hashes, then the C structures, the Fast DDS and
introspection C type supports, the type support dispatch and the Python
classes (each generator called with the arguments file CMake would write
it), compiled with the flags and libraries CMake gives each target. Done in
one process, the generators' interpreter, imports and IDL grammar are paid
once instead of six times, and there is no CMake configure (whose
FindPython alone starts Python 17 times): about 9 s of CPU instead of 15,
what a first demo waits for (docs/benchmarks-archive.md, "The messages without
CMake").

The IDL the generators read has the ``.msg`` comments taken out: Python's
classes carry none, and rosidl's parser spends most of its time on those
string annotations. The type hashes do not cover comments (a test compares
them with colcon's build), and ``ros2 interface show`` reads the ``.msg``
files, which are installed as they are.

What pip's wheel installs of it, under ``stage``: the message libraries in
``lib/``, the generated ``msg`` and ``srv`` packages and the type support
extension modules in the Python package, the ament index entries, the
interface files, ``package.xml``, the launch and config files, and the
``lib/<package>`` launchers of ``ros2 run``. The C headers and CMake exports
for C and C++ packages that build against these messages come with colcon's
build.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# rosidl_generate_interfaces' DEPENDENCIES (CMakeLists.txt), then theirs and a
# service's: every package whose interfaces ours may name
DEPENDENCIES = ("std_msgs", "geometry_msgs")
INDIRECT_DEPENDENCIES = ("builtin_interfaces", "service_msgs")
# the C type supports behind rclpy's messages (rosidl_typesupport_c dispatches to them)
TYPESUPPORTS = ("rosidl_typesupport_fastrtps_c", "rosidl_typesupport_introspection_c")
# what rosidl_adapter carries a .msg comment into the IDL as
_COMMENT = re.compile(r'@verbatim \(language="comment", text=(\s*"([^"\\]|\\.)*")*\)\s*')


def build(root: Path, prefix: Path, build_dir: Path, stage: Path, launchers: dict[str, str], jobs: int) -> None:
    """Generate, compile and stage the interfaces of the package at ``root``
    against the ROS packages installed under ``prefix``; ``launchers``: the
    console entry points (name: module) to give ``lib/<package>/`` launchers.
    What is compiled in ``build_dir`` is kept for the next build with the same
    interfaces, prefix and Python (scripts/run.sh reinstalls the package
    after every change to its code)."""
    package = ET.parse(root / "package.xml").getroot().findtext("name")
    interfaces = sorted(p.relative_to(root) for p in [*root.glob("msg/*.msg"), *root.glob("srv/*.srv")])
    key = hashlib.sha256("|".join([str(prefix), sys.executable, Path(__file__).read_text()] + [
        f"{interface}:{(root / interface).read_text()}" for interface in interfaces]).encode()).hexdigest()
    marker = build_dir / "built"
    if not (marker.exists() and marker.read_text() == key):
        if build_dir.exists():
            shutil.rmtree(build_dir)
        build_dir.mkdir(parents=True)
        _adapt(root, package, interfaces, _adapted(build_dir, package))
        _generate(package, prefix, build_dir, interfaces)
        _compile(package, prefix, build_dir, jobs)
        marker.write_text(key)
    _stage(root, package, prefix, build_dir, stage, interfaces, launchers)


def _adapted(build_dir, package):
    """Where ``_adapt`` puts the interfaces' IDL: msg/X.msg -> <this>/msg/X.idl."""
    return build_dir / "rosidl_adapter" / package


def _libraries(package, build_dir):
    """The message libraries ``_compile`` links, by kind, and the Python
    extension modules, by the type support they reach."""
    libraries = {kind: build_dir / f"lib{package}__{kind}.so" for kind in (
        "rosidl_generator_c", "rosidl_typesupport_c", "rosidl_generator_py", *TYPESUPPORTS)}
    modules = {typesupport: build_dir / f"{package}_s__{typesupport}.so"
               for typesupport in ("rosidl_typesupport_c", *TYPESUPPORTS)}
    return libraries, modules


def _adapt(root, package, interfaces, out):
    """The IDL of each interface, without its comments (module docstring)."""
    from rosidl_adapter import convert_to_idl

    for interface in interfaces:
        with contextlib.redirect_stdout(io.StringIO()):  # its "Reading input file" lines
            idl = convert_to_idl(root, package, interface, out)
        idl.write_text(_COMMENT.sub("", idl.read_text()))


def _generate(package, prefix, build_dir, interfaces):
    """rosidl's generators, each with the arguments file CMake writes it."""
    from rosidl_generator_c import generate_c
    from rosidl_generator_py import generate_py
    from rosidl_generator_type_description import generate_type_hash
    from rosidl_typesupport_c import generate_c as generate_typesupport_c
    from rosidl_typesupport_fastrtps_c import generate_typesupport_fastrtps_c
    from rosidl_typesupport_introspection_c import generate_c as generate_introspection_c

    share = prefix / "share"
    base = _adapted(build_dir, package)
    idls = [interface.with_suffix(".idl") for interface in interfaces]
    idl_tuples = [f"{base}:{relative}" for relative in idls]
    dependencies = [f"{dep}:{idl}" for dep in DEPENDENCIES + INDIRECT_DEPENDENCIES
                    for kind in ("msg", "srv", "action") for idl in sorted((share / dep / kind).glob("*.idl"))]
    hashes = build_dir / "rosidl_generator_type_description" / package
    description_tuples = [f"{relative}:{hashes / relative.with_suffix('.json')}" for relative in idls]

    def arguments(generator, **extra):
        path = build_dir / f"{generator}__arguments.json"
        path.write_text(json.dumps(dict(package_name=package, output_dir=str(build_dir / generator / package),
                                        template_dir=str(share / generator / "resource"), idl_tuples=idl_tuples,
                                        ros_interface_dependencies=dependencies, target_dependencies=[],
                                        **extra), indent=2))
        return str(path)

    generate_type_hash(arguments("rosidl_generator_type_description", include_paths=[
        f"{dep}:{share / dep}" for dep in DEPENDENCIES + INDIRECT_DEPENDENCIES]))
    generate_c(arguments("rosidl_generator_c", type_description_tuples=description_tuples))
    generate_typesupport_fastrtps_c(arguments("rosidl_typesupport_fastrtps_c"))
    generate_introspection_c(arguments("rosidl_typesupport_introspection_c"))
    generate_typesupport_c(arguments("rosidl_typesupport_c"), list(TYPESUPPORTS))
    generate_py(arguments("rosidl_generator_py"), ["rosidl_typesupport_c", *TYPESUPPORTS])
    # the visibility macros, which CMake configures from each generator's template
    for generator in ("rosidl_generator_c", *TYPESUPPORTS):
        template = (share / generator / "resource" / f"{generator}__visibility_control.h.in").read_text()
        header = build_dir / generator / package / "msg" / f"{generator}__visibility_control.h"
        header.write_text(template.replace("@PROJECT_NAME_UPPER@", package.upper()).replace("@PROJECT_NAME@", package))


def _compile(package, prefix, build_dir, jobs):
    """Every generated source compiled (``jobs`` at a time), then linked with
    the libraries each target of rosidl's CMake functions links, in their
    order (``_libraries``)."""
    include, lib = prefix / "include", prefix / "lib"
    deps = DEPENDENCIES + INDIRECT_DEPENDENCIES
    runtime = ["rosidl_runtime_c", "rcutils"]
    system = [include] + [include / name for name in (
        *deps, "rosidl_runtime_c", "rcutils", "rosidl_typesupport_interface", "rosidl_typesupport_c",
        "rosidl_runtime_cpp", "rosidl_typesupport_fastrtps_cpp", "rmw", "rosidl_dynamic_typesupport",
        "rosidl_typesupport_fastrtps_c", "rosidl_typesupport_introspection_c",
        "rosidl_typesupport_introspection_cpp")]
    generated = {name: build_dir / name for name in (
        "rosidl_generator_c", "rosidl_typesupport_c", "rosidl_generator_py", *TYPESUPPORTS)}
    python_includes = [Path(sysconfig.get_paths()["include"]), Path(__import__("numpy").get_include())]
    own, modules = _libraries(package, build_dir)

    def of(kind, names):  # the dependencies' libraries of one kind
        return [lib / f"lib{dep}__{kind}.so" for dep in names]

    fastcdr = sorted(lib.glob("libfastcdr.so.*.*.*"))[-1:]
    # target: (sources, C++, defines, own include folders, libraries)
    targets = {
        "rosidl_generator_c": (
            sorted(generated["rosidl_generator_c"].rglob("*.c")), False,
            [f"ROSIDL_GENERATOR_C_BUILDING_DLL_{package}"], [generated["rosidl_generator_c"]],
            of("rosidl_generator_c", deps) + [lib / f"lib{n}.so" for n in runtime]),
        "rosidl_typesupport_fastrtps_c": (
            sorted(generated["rosidl_typesupport_fastrtps_c"].rglob("*.cpp")), True,
            ["FASTCDR_DYN_LINK", f"ROSIDL_TYPESUPPORT_FASTRTPS_C_BUILDING_DLL_{package}"],
            [generated["rosidl_typesupport_fastrtps_c"], generated["rosidl_generator_c"]],
            [own["rosidl_generator_c"]] + of("rosidl_typesupport_fastrtps_c", deps) + of("rosidl_generator_c", deps)
            + [lib / f"lib{n}.so" for n in ("rosidl_typesupport_fastrtps_cpp", "rmw", "rosidl_dynamic_typesupport",
                                            "rosidl_typesupport_fastrtps_c")] + fastcdr
            + [lib / f"lib{n}.so" for n in runtime]),
        "rosidl_typesupport_introspection_c": (
            sorted(generated["rosidl_typesupport_introspection_c"].rglob("*.c")), False,
            [f"ROSIDL_TYPESUPPORT_INTROSPECTION_C_BUILDING_DLL_{package}"],
            [generated["rosidl_typesupport_introspection_c"], generated["rosidl_generator_c"]],
            [own["rosidl_generator_c"]] + of("rosidl_typesupport_introspection_c", deps)
            + of("rosidl_generator_c", deps) + [lib / "librosidl_typesupport_introspection_c.so"]
            + [lib / f"lib{n}.so" for n in runtime]),
        "rosidl_typesupport_c": (
            sorted(generated["rosidl_typesupport_c"].rglob("*.cpp")), True,
            [f"ROSIDL_GENERATOR_C_BUILDING_DLL_{package}"], [generated["rosidl_generator_c"]],
            [own["rosidl_generator_c"]] + of("rosidl_typesupport_c", deps) + of("rosidl_generator_c", deps)
            + [lib / "librosidl_typesupport_c.so"] + [lib / f"lib{n}.so" for n in runtime]),
        "rosidl_generator_py": (
            sorted(p for p in generated["rosidl_generator_py"].rglob("*_s.c") if ".ep." not in p.name), False,
            ["FASTCDR_DYN_LINK", f"{package}__rosidl_generator_py_EXPORTS"],
            python_includes + [generated["rosidl_generator_c"], generated["rosidl_generator_py"]],
            [own["rosidl_typesupport_c"], own["rosidl_generator_c"]] + of("rosidl_generator_py", deps)
            + of("rosidl_typesupport_c", deps) + of("rosidl_generator_c", deps)
            + [lib / f"lib{n}.so" for n in runtime]),
    }
    for typesupport, module in modules.items():
        source = generated["rosidl_generator_py"] / package / f"_{package}_s.ep.{typesupport}.c"
        targets[module.stem] = (
            [source], False, ["FASTCDR_DYN_LINK"],
            python_includes + [generated["rosidl_generator_c"], generated["rosidl_generator_py"]],
            [own["rosidl_generator_py"], own[typesupport], own["rosidl_typesupport_c"], lib / "librmw.so",
             own["rosidl_generator_c"]] + of("rosidl_typesupport_c", deps) + of("rosidl_generator_c", deps)
            + [lib / "librosidl_typesupport_c.so", lib / "librosidl_dynamic_typesupport.so"]
            + [lib / f"lib{n}.so" for n in runtime])

    def compile_one(job):
        source, cpp, defines, includes, obj = job
        command = ["c++" if cpp else "cc", *(f"-D{d}" for d in defines), f'-DROS_PACKAGE_NAME="{package}"',
                   *(f"-I{d}" for d in includes), *(arg for d in system for arg in ("-isystem", str(d))),
                   "-fPIC", "-std=gnu++17" if cpp else "-std=gnu11", "-o", str(obj), "-c", str(source)]
        _run(command)
        return obj

    jobs_of = {}
    for name, (sources, cpp, defines, includes, _) in targets.items():
        jobs_of[name] = [(source, cpp, defines, includes, build_dir / "objects" / name / f"{i}_{source.name}.o")
                         for i, source in enumerate(sources)]
        (build_dir / "objects" / name).mkdir(parents=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # every object at once, then the links
        futures = {name: [pool.submit(compile_one, job) for job in work] for name, work in jobs_of.items()}
        objects = {name: [future.result() for future in work] for name, work in futures.items()}
    for name, (_, cpp, _, _, libraries) in targets.items():
        output = own[name] if name in own else build_dir / f"{name}.so"
        soname = [f"-Wl,-soname,{output.name}"] if name in own else []
        _run(["c++" if cpp else "cc", "-fPIC", "-shared", *soname, "-o", str(output),
              *map(str, objects[name]), *map(str, libraries), "-ldl", f"-Wl,-rpath-link,{lib}",
              f"-Wl,-rpath-link,{build_dir}"])


def _run(command):
    """A compiler's command; its output only when it fails, with the error."""
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode:
        sys.stderr.write(result.stdout)
        raise subprocess.CalledProcessError(result.returncode, command)


def _stage(root, package, prefix, build_dir, stage, interfaces, launchers):
    """What the wheel installs, laid out as CMake's install would (module docstring)."""
    libraries, modules = (list(d.values()) for d in _libraries(package, build_dir))
    if stage.exists():
        shutil.rmtree(stage)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python_package = stage / "lib" / version / "site-packages" / package
    shutil.copytree(build_dir / "rosidl_generator_py" / package, python_package,
                    ignore=shutil.ignore_patterns("*.c"))
    for module in modules:
        shutil.copy2(module, python_package / module.name)
    for library in libraries:  # lib/ exists: the Python package is below it
        shutil.copy2(library, stage / "lib" / library.name)
    share = stage / "share" / package
    for interface in interfaces:
        relative = interface.with_suffix(".idl")
        idl = _adapted(build_dir, package) / relative
        (share / interface.parent).mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / interface, share / interface)
        shutil.copy2(idl, share / relative)
        description = build_dir / "rosidl_generator_type_description" / package / relative.with_suffix(".json")
        shutil.copy2(description, share / relative.with_suffix(".json"))
        if interface.suffix == ".msg":  # beside the generated classes too: the replay registers them in bags
            shutil.copy2(root / interface, python_package / interface)
    shutil.copy2(root / "package.xml", share / "package.xml")
    for folder in ("launch", "config"):
        shutil.copytree(root / folder, share / folder, ignore=shutil.ignore_patterns("__pycache__"))
    index = stage / "share" / "ament_index" / "resource_index"
    entries = {
        "packages": "",
        "rosidl_interfaces": "\n".join(sorted(
            [str(interface.with_suffix(".idl")) for interface in interfaces] + [str(i) for i in interfaces])),
        "parent_prefix_path": str(prefix),
        "package_run_dependencies": ";".join(_run_dependencies(root / "package.xml")),
    }
    for kind, text in entries.items():
        (index / kind).mkdir(parents=True, exist_ok=True)
        (index / kind / package).write_text(text)
    bin_dir = stage / "lib" / package
    bin_dir.mkdir(parents=True)
    for name, module in launchers.items():
        launcher = bin_dir / name
        launcher.write_text(f"#!/usr/bin/env python3\nimport sys\n\nfrom {module} import main\n\nsys.exit(main())\n")
        launcher.chmod(0o755)


def _run_dependencies(package_xml: Path) -> list[str]:
    """The packages package.xml says the package runs with, in its order, as
    ament_package indexes them."""
    names = []
    for element in ET.parse(package_xml).getroot():
        if element.tag in ("depend", "build_export_depend", "exec_depend", "test_depend") and element.text:
            if element.text not in names:
                names.append(element.text)
    return names
