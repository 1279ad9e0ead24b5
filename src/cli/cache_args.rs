//! `--cache` / `--no-cache`, shared by `apply` and `plan`.

use crate::plan::CacheSwitch;

#[derive(Debug, Clone, clap::Args)]
pub struct CacheArgs {
    /// Cache step results (as if the manifest said `cache: true`); see docs/cache.md.
    #[arg(long, conflicts_with = "no_cache")]
    cache: bool,
    /// Cache nothing, whatever the manifest says.
    #[arg(long)]
    no_cache: bool,
}

impl CacheArgs {
    pub fn switch(&self) -> CacheSwitch {
        match (self.cache, self.no_cache) {
            (_, true) => CacheSwitch::Off,
            (true, _) => CacheSwitch::On,
            _ => CacheSwitch::Manifest,
        }
    }
}
