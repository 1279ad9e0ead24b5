//! `pocketdock-agent serve SOCKET`: the helper pocketdock starts in each
//! sandbox. (Skeleton: the server lands next.)

fn main() {
    eprintln!("pocketdock-agent: not built yet");
    std::process::exit(2);
}
