# Programs driven through a pty the sandbox opens (/dev/ptmx): script(1),
# tmux (a server, send-keys, capture-pane) and expect.
script -qec 'tty; stty size' typescript </dev/null | grep -q /dev/pts/
export TMUX_TMPDIR="$WS/tmux"
mkdir -p "$TMUX_TMPDIR"
tmux new-session -d -s compat -x 80 -y 24 'sh'
tmux send-keys -t compat 'echo tmux-says-$((40+2))' Enter
i=0
until tmux capture-pane -p -t compat | grep -q tmux-says-42; do
	i=$((i + 1)); [ "$i" -le 100 ] || exit 1; sleep 0.1
done
tmux kill-server
expect -c 'spawn sh -c "read -p {name? } n; echo hi \$n"; expect "name?"; send "agent\r"; expect "hi agent"; expect eof'
