# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# python3 -m venv (ensurepip installs pip from /usr/share/python-wheels)
# and pip install from a local wheel directory, no index.
python3 -m venv venv
./venv/bin/pip install -q --no-index --find-links "$FIX/wheels" compatdemo
./venv/bin/python -c 'import compatdemo; assert compatdemo.answer() == 42'
./venv/bin/pip list 2>/dev/null | grep -q compatdemo
