#!/usr/bin/env bash
# The Python package (python/): its abi3 wheel, its pytest suite on an
# engine, and the checks that need no particular engine.
#
#   scripts/test-python.sh build    # the wheel, and a fresh virtualenv with it
#   scripts/test-python.sh pytest   # pytest on the engine POCKETDOCK_SOCKET names
#   scripts/test-python.sh checks   # auditwheel, mypy --strict, stubtest,
#                                   # examples/python, a smoke test on every CPython 3.9+
#   scripts/test-python.sh          # all three
#
# pytest and checks build first when this clone has no wheel yet. The gate
# (scripts/test.sh) runs pytest once per engine and the checks once.
# Exits non-zero on any failure. Installs what it needs from PyPI (maturin,
# pytest, mypy, auditwheel) into a virtualenv in the machine's cache
# (scripts/cache.sh); the Rust build's target directory is there too.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
# shellcheck source=scripts/cache.sh
source scripts/cache.sh
# Its own workspace and lockfile (docs/testing.md says why), so its own target.
export CARGO_TARGET_DIR=$POCKETDOCK_CACHE/target-python
TOOLS=$POCKETDOCK_CACHE/py-tools
SMOKE=$ROOT/target/py-smoke
WHEELS=$ROOT/target/wheels
failed=()
step() { printf '\n== python: %s\n' "$*" >&2; }
check() { local label=$1; shift; "$@" || failed+=("$label"); }
pip_q=(-m pip install -q --disable-pip-version-check)
wheel() { ls "$WHEELS"/pocketdock-*.whl 2>/dev/null | head -n 1; }

build() {
  # Debian's python3 has no venv module without python3-venv (as scripts/provision.sh installs it).
  if ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
    step "installing python3-venv"
    { apt-get update -q && apt-get install -y -q python3-venv; } >/dev/null ||
      { echo "python3-venv is missing and could not be installed" >&2; return 1; }
  fi
  step "build tools in $TOOLS"
  if ! "$TOOLS/bin/python" -c 'import maturin, mypy, pytest, auditwheel' 2>/dev/null; then
    rm -rf "$TOOLS"
    if ! { /usr/bin/python3 -m venv "$TOOLS" && "$TOOLS/bin/python" "${pip_q[@]}" maturin mypy pytest auditwheel; }; then
      echo "could not install maturin, mypy, pytest and auditwheel" >&2
      return 1
    fi
  fi
  # The wheel carries the command line: `pip install` gives `pocketdock`.
  # It is the release tarball's binary (stripped, glibc 2.17 symbols, so
  # within the wheel's manylinux tag), built in the main target directory:
  # after the gate's release suite, a rebuild with nothing changed.
  step "the pocketdock command line of the release tarball, for the wheel"
  env -u CARGO_TARGET_DIR bash scripts/release.sh || { echo "scripts/release.sh failed" >&2; return 1; }
  local tarball
  tarball=$(ls -t dist/pocketdock-*-x86_64-unknown-linux-gnu.tar.gz | head -n 1)
  mkdir -p python/pocketdock/_bin
  tar -xzf "$tarball" -O --wildcards '*/pocketdock' >python/pocketdock/_bin/pocketdock &&
    chmod 0755 python/pocketdock/_bin/pocketdock ||
    { echo "no pocketdock binary in $tarball" >&2; return 1; }
  step "maturin build --release"
  rm -f "$WHEELS"/pocketdock-*.whl
  (cd python && "$TOOLS/bin/maturin" build --release -o "$WHEELS") || { echo "maturin build failed" >&2; return 1; }
  ls -l "$(wheel)" >&2
  step "a fresh virtualenv with the wheel"
  rm -rf "$SMOKE"
  if ! { /usr/bin/python3 -m venv "$SMOKE" && "$SMOKE/bin/python" "${pip_q[@]}" "$(wheel)" pytest mypy; }; then
    echo "pip install of the wheel failed" >&2
    return 1
  fi
}

built() { [[ -n $(wheel) && -x $SMOKE/bin/python ]] || build; }

run_pytest() {
  built || return 1
  step "pytest on ${POCKETDOCK_SOCKET:-the first engine found}"
  # PYTEST_MARK: which tests, as `pytest -m` takes it (the kube suite's
  # `not engine_only`).
  (cd python/tests && "$SMOKE/bin/python" -m pytest -q -p no:cacheprovider ${PYTEST_MARK:+-m "$PYTEST_MARK"}) || failed+=("pytest")
}

# The same package and stubs whatever the engine: these run once.
checks() {
  built || return 1
  local whl tag shown
  whl=$(wheel)
  # A manylinux tag is claimed only when auditwheel agrees with it.
  step "auditwheel: the platform tag is true"
  tag=$(basename "$whl" .whl | awk -F- '{print $NF}')
  shown=$("$TOOLS/bin/auditwheel" show "$whl" 2>&1)
  case $tag in
    manylinux*) grep -q "${tag%%_x86_64*}" <<<"$shown" || { echo "$shown" >&2; failed+=("auditwheel: $tag"); } ;;
  esac

  step "mypy --strict (examples and package) and stubtest"
  check "mypy examples" "$SMOKE/bin/python" -m mypy --strict --cache-dir "$POCKETDOCK_CACHE/mypy-cache" examples/python
  check "mypy package" "$SMOKE/bin/python" -m mypy --strict --cache-dir "$POCKETDOCK_CACHE/mypy-cache" -p pocketdock
  check "stubtest" "$SMOKE/bin/python" -m mypy.stubtest pocketdock

  step "examples/python on ${POCKETDOCK_SOCKET:-the first engine found}"
  local ex
  for ex in examples/python/*.py; do
    (cd /tmp && timeout 600 "$SMOKE/bin/python" "$ROOT/$ex") >/dev/null || failed+=("example $ex")
  done
  smoke "$whl"
}

# abi3: one wheel for every CPython from 3.9 on: those on PATH, and pyenv's.
smoke() {
  step "smoke test on every CPython 3.9+ on the machine"
  local py version dir
  declare -A seen=()
  for py in $(interpreters); do
    version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2]) if sys.version_info >= (3, 9) else None' 2>/dev/null) || continue
    [[ -n $version && $version != None && -z ${seen[$version]:-} ]] || continue
    seen[$version]=1
    dir=$ROOT/target/py-smoke-$version
    rm -rf "$dir"
    if "$py" -m venv "$dir" && "$dir/bin/python" "${pip_q[@]}" "$1" &&
        "$dir/bin/python" -c 'import pocketdock
with pocketdock.create_new_container() as c:
    assert c.run("echo ok").stdout == "ok\n"'; then
      echo "CPython $version ($py): ok" >&2
    else
      failed+=("smoke CPython $version")
    fi
  done
  ((${#seen[@]})) || failed+=("smoke: no CPython 3.9+ found")
}

interpreters() {
  local p
  for p in $(compgen -c python3. | grep -E '^python3\.[0-9]+$' | sort -u); do command -v "$p"; done
  if command -v pyenv >/dev/null; then ls "$(pyenv root)"/versions/*/bin/python3 2>/dev/null; fi
}

case ${1:-all} in
  build) build || failed+=("build") ;;
  pytest) run_pytest || failed+=("build") ;;
  checks) checks || failed+=("build") ;;
  all) { build && run_pytest && checks; } || failed+=("build") ;;
  *) echo "usage: scripts/test-python.sh [build | pytest | checks]" >&2; exit 2 ;;
esac

if ((${#failed[@]})); then
  printf 'python package: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "python package: ${1:-all}: all checks passed" >&2
