# proc.sh: what /proc says of one process (all its threads), for the benchmarks that
# report CPU or thread switches a request next to a rate (sourced; sql_lib.sh and
# resp_seq_ab.sh). Taken before and after a run, the difference is that run's.
#   pid_cpu_ms PID      user + system CPU so far, in ms
#   pid_cpu_split PID   "USER KERNEL", in ms
#   pid_switches PID    context switches so far, voluntary and not
pid_cpu_ms() {
  echo $(($(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0) * 1000 / $(getconf CLK_TCK)))
}
pid_cpu_split() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%d %d\n", $14 * 1000 / hz, $15 * 1000 / hz }' "/proc/$1/stat" 2>/dev/null || echo "0 0"
}
pid_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'
}
