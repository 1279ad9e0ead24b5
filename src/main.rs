//! The `pocketdock` binary: everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    pocketdock::cli::main()
}
