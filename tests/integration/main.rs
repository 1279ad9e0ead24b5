//! Integration and end-to-end tests, one binary: a module per area, one
//! harness: `common` for engines, projects (`TestProject`), cleanup and
//! counted skips, `pd` (`Pd`) for every run of the built CLI.
//!
//! Tests run against the engine `POCKETDOCK_SOCKET` names; without one they
//! skip, except under `CI=true`, where a missing engine fails them.

#[macro_use]
mod common;
#[cfg(feature = "kubernetes")]
#[path = "../kube_api/mod.rs"]
mod kube_api;
mod pd;
#[path = "../support/mod.rs"]
mod support;

mod agent;
mod airgap;
mod apply;
mod artifacts;
mod backend_handle;
mod background;
mod bench_job;
mod blocking;
mod cache;
mod cache_housekeeping;
mod cache_results;
mod cache_resume;
mod cli;
mod containment;
mod contract;
mod dashboard;
mod doctor;
mod engine;
mod engine_choice;
mod everyday;
mod examples;
mod files;
mod firmware;
mod fork;
mod fork_step;
mod function_size;
mod fuzz_corpus;
mod github;
mod glossary;
mod idle;
mod images;
mod kernel;
#[cfg(feature = "kubernetes")]
mod kubernetes;
#[cfg(feature = "kubernetes")]
mod kubernetes_apply;
#[cfg(feature = "kubernetes")]
mod kubernetes_bench;
#[cfg(feature = "kubernetes")]
mod kubernetes_cluster;
#[cfg(feature = "kubernetes")]
mod kubernetes_cluster_fork;
#[cfg(feature = "kubernetes")]
mod kubernetes_cluster_pool;
#[cfg(feature = "kubernetes")]
mod kubernetes_cluster_verbs;
#[cfg(feature = "kubernetes")]
mod kubernetes_lost;
#[cfg(feature = "kubernetes")]
mod kubernetes_verbs;
mod layers;
mod library;
mod library_traps;
mod list;
mod logs;
mod loopback;
mod lost_sandbox;
mod manifests;
mod mcp;
mod mcp_clients;
mod newcomer;
mod official_base;
mod op_log;
mod pool;
mod ports_network;
mod profiles;
mod projects;
mod protocol;
mod recipes;
mod records;
mod recycle;
mod release;
mod remote;
mod rootless;
mod run_history;
mod safety;
mod sandbox;
mod sandbox_facets;
mod scratch_fs;
mod seed003;
mod seed_settings;
mod serve;
mod serve_openapi;
mod serve_security;
mod serve_seed004;
mod session;
mod session_carried;
mod shell;
mod stray_processes;
mod systemd;
mod template_home;
mod terminal;
mod usage;
