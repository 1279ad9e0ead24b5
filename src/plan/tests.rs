//! Plan tests.
