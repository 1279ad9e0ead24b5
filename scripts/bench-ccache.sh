#!/usr/bin/env bash
# ccache's hit rate on a one-file rebuild in the `embedded` profile:
# a generated Cortex-M project of 24 C files, one object per rule, built
# by `uses: stm32`; ccache's directory is the project's volume, which
# outlives the job. The second build has one file's content changed and
# runs from another copy of the project (same name, another host
# directory, another directory in the sandbox), with the step cache off;
# its `ccache -s` is printed, and its hit rate checked against 90 %.
#
#   scripts/bench-ccache.sh [PD=target/debug/pocketdock]
#
# ENGINES=podman or docker runs one engine only.
set -euo pipefail

pd=$(realpath "${1:-target/debug/pocketdock}")
read -r -a engines <<<"${ENGINES:-podman docker}"
declare -A socket=([podman]=unix:///run/podman/podman.sock [docker]=unix:///var/run/docker.sock)
files=24
work=$(mktemp -d /tmp/pd-bench-ccache-XXXXXX)
trap 'rm -rf "$work"' EXIT

# The project: f0.c … f23.c, each a few functions, and main.c calling them.
mkdir -p "$work/src"
for ((i = 0; i < files; i++)); do
  {
    echo "#include <stdint.h>"
    for ((j = 0; j < 8; j++)); do
      echo "uint32_t f${i}_$j(uint32_t x) { for (int k = 0; k < $((j + 3)); k++) x = x * $((2 * i + 3)) + $j; return x; }"
    done
  } >"$work/src/f$i.c"
done
{
  echo "#include <stdint.h>"
  for ((i = 0; i < files; i++)); do echo "uint32_t f${i}_0(uint32_t);"; done
  echo "volatile uint32_t out;"
  echo "int main(void) { uint32_t x = 1;"
  for ((i = 0; i < files; i++)); do echo "  x = f${i}_0(x);"; done
  echo "  out = x; for (;;) ; }"
} >"$work/src/main.c"
cat >"$work/src/Makefile" <<'MK'
CC = arm-none-eabi-gcc
CFLAGS = -mcpu=cortex-m3 -mthumb -O2 -g -Wall -ffreestanding
OBJS = $(patsubst %.c,%.o,$(wildcard *.c))
build: firmware.elf
firmware.elf: $(OBJS)
	$(CC) $(CFLAGS) -nostdlib -Wl,--entry=main $(OBJS) -lgcc -o $@
%.o: %.c
	$(CC) $(CFLAGS) -c $< -o $@
MK

job() {
  cat <<YAML
version: 1
sandboxes:
  fw:
    profile: embedded
    network: false
steps:
  zero:
    run: ccache -z >/dev/null
  fw:
    uses: stm32
    with: { src: src, target: build, artifacts: [firmware.elf], out: out, dir: "$1" }
  stats:
    run: ccache -s
YAML
}

for engine in "${engines[@]}"; do
  export POCKETDOCK_SOCKET=${socket[$engine]}
  name=bench-ccache-$$
  volume=pocketdock-ccache-$name
  cli=$engine
  for run in first second; do
    d=$work/$engine-$run
    mkdir -p "$d" && cp -r "$work/src" "$d/src"
    if [[ $run == second ]]; then
      echo "uint32_t f7_extra(uint32_t x) { return x ^ 0x5a5a5a5a; }" >>"$d/src/f7.c"
    fi
    printf 'version: 1\nproject:\n  name: %s\n' "$name" >"$d/pocketdock.yaml"
    job "proj-$run" >"$d/job.yaml"
    t0=$(date +%s.%N)
    (cd "$d" && "$pd" apply job.yaml --no-cache --output plain >"$d/log" 2>&1) ||
      { tail -n 30 "$d/log" >&2; "$cli" volume rm -f "$volume" >/dev/null; exit 1; }
    t1=$(date +%s.%N)
    printf '%s %s apply: %.1f s; %s\n' "$engine" "$run" "$(echo "$t1 - $t0" | bc)" \
      "$(grep -o 'ccache: [0-9]* of [0-9]* compilations hit' "$d/log" || echo 'no ccache line')"
  done
  grep -E '\] +(Hits|Misses|Cacheable)' "$d/log" | sed "s/^/$engine second: /"
  rate=$(grep -E '\] +Hits:' "$d/log" | head -1 | sed -E 's/.*\(\s*([0-9.]+)%\).*/\1/')
  "$cli" volume rm -f "$volume" >/dev/null
  echo "$engine: one-file rebuild, ccache hit rate $rate %"
  awk -v r="$rate" 'BEGIN { exit !(r >= 90) }' || { echo "bench-ccache: below 90 %" >&2; exit 1; }
done
