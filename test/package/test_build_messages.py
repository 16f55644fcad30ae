"""pip's build of the messages (build_messages.py) builds what colcon's
(CMakeLists.txt) does for Python: the same interfaces against the same
dependencies. That both give the same type hashes is test_launch.py's."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import build_messages  # noqa: E402


def _rosidl_call():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"rosidl_generate_interfaces\(\$\{PROJECT_NAME\}(.*?)\)", text, re.S).group(1)


def test_the_same_interfaces_as_cmakelists():
    listed = sorted(re.findall(r'"((?:msg|srv|action)/[^"]+)"', _rosidl_call()))
    found = sorted(str(p.relative_to(ROOT)) for p in [*ROOT.glob("msg/*.msg"), *ROOT.glob("srv/*.srv")])
    assert listed == found


def test_the_same_dependencies_as_cmakelists():
    dependencies = re.search(r"DEPENDENCIES\s+([\w\s]+)", _rosidl_call()).group(1).split()
    assert tuple(dependencies) == build_messages.DEPENDENCIES


def test_the_comments_are_taken_out_of_the_idl_and_nothing_else():
    idl = '''module m {
  module msg {
    @verbatim (language="comment", text=
      "A \\"quoted\\" line" "\\n"
      "another")
    struct S {
      @verbatim (language="comment", text=
        "field")
      double x;
      @key
      double y;
    };
  };
};
'''
    stripped = build_messages._COMMENT.sub("", idl)
    assert "verbatim" not in stripped
    assert "double x;" in stripped and "@key" in stripped and "struct S {" in stripped
