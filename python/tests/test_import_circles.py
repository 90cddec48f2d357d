"""scripts/import-circles, the CI rule that no two files of a crate import each other.

The checker reads Rust as text, so these tests hand it small crates and check that it finds the
circles that count, and none where a parent is only the facade of its children.
"""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import-circles"


def crate(tmp_path, files):
    root = tmp_path / "src"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, check=False)


def test_siblings_that_import_each_other_are_a_circle(tmp_path):
    root = crate(tmp_path, {
        "lib.rs": "pub mod a;\npub mod b;\n",
        "a.rs": "use crate::b::B;\npub struct A;\n",
        # An inline path counts as much as a `use`; a string or a comment does not.
        "b.rs": "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n// crate::a\n",
    })
    out = run(root)
    assert out.returncode == 1, out.stdout
    assert "a.rs -> " in out.stdout and "b.rs -> " in out.stdout
    assert "1 import circle(s)" in out.stdout


def test_a_facade_over_its_children_is_not_a_circle(tmp_path):
    root = crate(tmp_path, {
        "lib.rs": "pub mod robot;\npub mod geometry;\n",
        "geometry.rs": "pub struct Pose;\n",
        "robot/mod.rs": "mod mjcf;\npub use mjcf::load;\npub use crate::geometry::Pose;\n",
        "robot/mjcf.rs": "use crate::geometry::Pose;\npub fn load() -> Pose { Pose }\n",
    })
    out = run(root)
    assert out.returncode == 0, out.stdout
    assert "no import circle" in out.stdout


def test_a_child_that_takes_from_its_parents_code_is_part_of_it(tmp_path):
    # The parent's own code uses the child, and the child takes a type the parent defines: as in
    # Rust's module system, the child is part of its parent, not an import circle.
    root = crate(tmp_path, {
        "lib.rs": "pub mod config;\n",
        "config/mod.rs": "mod checker;\nuse checker::*;\npub struct Scene;\n"
                         "pub fn parse() { check(); }\n",
        "config/checker.rs": "use super::*;\npub fn check() -> Option<Scene> { None }\n",
    })
    out = run(root)
    assert out.returncode == 0, out.stdout


def test_siblings_under_one_parent_that_import_each_other_are_a_circle(tmp_path):
    # Naming the parent is free; two children that need each other are still a circle.
    root = crate(tmp_path, {
        "lib.rs": "pub mod config;\n",
        "config/mod.rs": "mod a;\nmod b;\npub struct Scene;\n",
        "config/a.rs": "use super::Scene;\nuse super::b::g;\npub fn f() -> Scene { g() }\n",
        "config/b.rs": "pub fn g() -> super::Scene { super::a::f() }\n",
    })
    out = run(root)
    assert out.returncode == 1, out.stdout
    assert "config/a.rs -> " in out.stdout and "config/b.rs -> " in out.stdout


def test_an_inline_test_module_reads_its_own_file_as_super(tmp_path):
    root = crate(tmp_path, {
        "lib.rs": "pub mod a;\npub mod b;\n",
        "a.rs": "use crate::b::g;\npub fn f() { g() }\n"
                "#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() { f() }\n}\n",
        "b.rs": "pub fn g() {}\n",
    })
    out = run(root)
    assert out.returncode == 0, out.stdout


def test_the_graph_lists_modules_lowest_first(tmp_path):
    root = crate(tmp_path, {
        "lib.rs": "pub mod geometry;\npub mod robot;\npub mod camera;\n",
        "geometry.rs": "pub struct Pose;\n",
        "robot.rs": "use crate::geometry::Pose;\n",
        "camera.rs": "use crate::robot;\nuse crate::geometry::Pose;\n",
    })
    out = run("--graph", root)
    assert out.returncode == 0, out.stdout
    lines = [line.split() for line in out.stdout.splitlines() if "->" in line]
    assert [line[0] for line in lines] == ["geometry", "robot", "camera"]
    assert lines[2][2:] == ["geometry,", "robot"]


def test_a_missing_folder_is_a_clear_error(tmp_path):
    out = run(tmp_path / "nope")
    assert out.returncode == 2
    assert "is not a folder" in out.stderr


def test_this_repository_has_no_import_circle():
    out = run()
    assert out.returncode == 0, out.stdout


def test_the_architecture_doc_shows_the_module_graph_as_it_stands():
    out = run("--graph")
    graph = "\n".join(line for line in out.stdout.splitlines() if "import circle" not in line)
    doc = (SCRIPT.parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    assert graph in doc, (
        "docs/ARCHITECTURE.md's module graph is out of date; paste in "
        "`scripts/import-circles --graph`:\n" + graph)
