# Shared by the scripts that source it: `die` and `usage`. Set DIE_AS to
# the script's name first.
# die MESSAGE [LOGFILE...]: print MESSAGE and the tail of each LOGFILE, exit 1.
die() {
  local msg=$1
  shift
  printf '\n%s: ERROR: %s\n' "${DIE_AS:-${0##*/}}" "$msg" >&2
  local f
  for f in "$@"; do
    if [[ -s $f ]]; then
      printf -- '----- last 40 lines of %s -----\n' "$f" >&2
      tail -n 40 "$f" >&2 || true
      printf -- '----- end of %s -----\n' "$f" >&2
    fi
  done
  exit 1
}

# The script's header comment, as its help.
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
