# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# python3 -m venv and pip install from a local wheel directory, no index.
# The venv has no pip of its own (--without-pip: ensurepip is a pip install
# of pip's wheel from /usr/share/python-wheels, the same work as the install
# below at three times its cost under TCG); the system's pip installs into
# it (--system-site-packages: the venv's python finds pip, and pip installs
# into the venv's prefix).
python3 -m venv --without-pip --system-site-packages venv
./venv/bin/python -m pip install -q --no-index --find-links "$FIX/wheels" compatdemo
./venv/bin/python -c 'import compatdemo, sys; assert compatdemo.answer() == 42; assert compatdemo.__file__.startswith(sys.prefix + "/")'
