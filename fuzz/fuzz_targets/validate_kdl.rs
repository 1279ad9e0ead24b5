#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use pocketdock::manifest::Format;

fuzz_target!(|data: &[u8]| common::validate(data, Format::Kdl, "/fuzz/job.kdl"));
