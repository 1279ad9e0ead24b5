//! The host suite: pocketdock's user journey and its cgroup, containment and
//! engine checks on a host of the kind users have (systemd, cgroup v2,
//! Podman 5 rootful and rootless, Docker 26), through the shipped binary.
//!
//! Every test is `#[ignore]`d: the gate's host (cgroup v1, no systemd) is
//! not such a host. `scripts/vm.sh suite` runs them in a Debian 13 guest on
//! each setup (docs/vm.md); `scripts/vm.sh smoke` runs the smoke subset.
//! `POCKETDOCK_HOST_SETUP` names the setup (docker, podman, rootless) and
//! `POCKETDOCK_TEST_TIME_SCALE` stretches the tests' own waits (emulation
//! is 5 to 10 times slower).

#[path = "../support/mod.rs"]
mod support;

mod harness;

mod containment;
mod delegation;
mod fork;
mod journey;
mod limits;
mod paths;
mod socket;
mod stray;
mod usage;
