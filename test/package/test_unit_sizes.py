"""Units a reader can hold (CONTRIBUTING.md): no class of the package over
200 lines and no function over 80, but for compiled kernels (``@njit``),
whose length is the algorithm they write out. Lines from ``def``/``class``
to the unit's last line; ``pytest -s`` prints the largest of each kind."""
import ast

from paths import REPO

MAX_CLASS, MAX_FUNCTION = 200, 80


def is_kernel(node) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if getattr(target, "id", getattr(target, "attr", None)) == "njit":
            return True
    return False


def units():
    """(lines, kind, where, name) of every class and function of the package."""
    for path in sorted((REPO / "robot_dynamics_ros").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                kind = "class"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kind = "kernel" if is_kernel(node) else "function"
            else:
                continue
            lines = node.end_lineno - node.lineno + 1
            yield lines, kind, f"{path.relative_to(REPO)}:{node.lineno}", node.name


def test_no_class_or_function_is_over_its_limit():
    found = sorted(units(), reverse=True)
    for kind in ("class", "function", "kernel"):
        print(f"the largest of kind {kind}:", *[f"{n} {where} {name}" for n, k, where, name in found if k == kind][:3],
              sep="\n  ")
    over = [f"{kind} {name} ({where}): {n} lines" for n, kind, where, name in found
            if kind == "class" and n > MAX_CLASS or kind == "function" and n > MAX_FUNCTION]
    assert not over, "\n".join(over)


def test_kernels_are_told_apart():
    source = "@njit(cache=True)\ndef a(): pass\n@numba.njit\ndef b(): pass\ndef c(): pass\n"
    kinds = [is_kernel(node) for node in ast.parse(source).body]
    assert kinds == [True, True, False]
