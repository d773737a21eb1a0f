# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# pytest on a small module; its cache (.pytest_cache) lands in the workspace.
mkdir -p pt
cat >pt/test_sample.py <<'PY'
import os, tempfile

def test_add():
    assert 1 + 1 == 2

def test_tmp_path(tmp_path):
    p = tmp_path / "x"
    p.write_text("y")
    assert p.read_text() == "y"

def test_tempfile():
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"z")
PY
cd pt
python3 -m pytest -q
