"""Where hfuse finds the CUDA toolkit's headers."""
import subprocess
import sys


def test_the_front_end_finds_the_toolkit_without_importing_cupy():
    # importing CuPy costs a CPU-only 'hfuse fuse' 0.1-1 s, and preprocessing needs none of it
    code = ("import sys; from hfuse.frontend.preprocess import preprocess; "
            "preprocess('__global__ void k() {}\\n', 'k.cu'); print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"



def _project(tmp_path):
    """A project checkout with its own include folder and kernels."""
    root = tmp_path / "proj"
    (root / "csrc").mkdir(parents=True)
    (root / "include").mkdir()
    (root / ".git").mkdir()
    return root, [root / "csrc" / "a.cu"]


def test_a_projects_own_include_folder_is_its_own(tmp_path):
    from hfuse.toolkit import another_projects_dir

    root, inputs = _project(tmp_path)
    assert not another_projects_dir(root / "include", inputs)
    assert not another_projects_dir(root / "csrc", inputs)


def test_a_submodule_a_clone_beside_and_a_vendoring_folder_are_another_projects(tmp_path):
    from hfuse.toolkit import another_projects_dir

    root, inputs = _project(tmp_path)
    submodule = root / "csrc" / "cutlass" / "include"  # as FlashAttention keeps CUTLASS
    submodule.mkdir(parents=True)
    (root / "csrc" / "cutlass" / ".git").write_text("gitdir: ../../.git/modules/cutlass\n")
    clone = tmp_path / "cutlass" / "include"
    clone.mkdir(parents=True)
    (tmp_path / "cutlass" / ".git").mkdir()
    vendored = root / "third_party" / "cub"  # a copy, no checkout of its own
    fetched = root / "build" / "_deps" / "cutlass-src" / "include"
    for folder in (vendored, fetched):
        folder.mkdir(parents=True)
    assert all(another_projects_dir(d, inputs) for d in (submodule, clone, vendored, fetched))


def test_a_project_that_itself_lies_in_a_vendoring_folder_or_a_submodule_keeps_its_own(tmp_path):
    # the kernels' own project checked out as a submodule of a larger one, under third_party
    from hfuse.toolkit import another_projects_dir

    (tmp_path / ".git").mkdir()
    root = tmp_path / "third_party" / "lib"
    (root / "src").mkdir(parents=True)
    (root / "include").mkdir()
    (root / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert not another_projects_dir(root / "include", [root / "src" / "k.cu"])
    assert another_projects_dir(root / "include", [tmp_path / "k.cu"])  # from the larger project: a library's


def test_a_file_of_no_checkout_beside_a_clone_reads_the_clone_as_its_own(tmp_path):
    # a file written to use a library's kernel templates (its headers define them): nothing
    # says the clone is another project's, and hfuse must read it to find the kernel
    from hfuse.toolkit import another_projects_dir

    clone = tmp_path / "lib" / "include"
    clone.mkdir(parents=True)
    (tmp_path / "lib" / ".git").mkdir()
    (tmp_path / "scratch").mkdir()
    assert not another_projects_dir(clone, [tmp_path / "scratch" / "mine.cu"])
