//! The run layer: executes a plan on tokio and tells what happens as events.

pub mod event;
