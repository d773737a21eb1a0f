# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# tmux: a server on a pty the sandbox opens, its socket in the workspace,
# send-keys and capture-pane.
export TMUX_TMPDIR="$WS/tmux"
mkdir -p "$TMUX_TMPDIR"
tmux new-session -d -s compat -x 80 -y 24 'sh'
tmux send-keys -t compat 'echo tmux-says-$((40+2))' Enter
i=0
until tmux capture-pane -p -t compat | grep -q tmux-says-42; do
	i=$((i + 1))
	[ "$i" -le 300 ] || exit 1
	sleep 0.1
done
tmux kill-server
