//! `pocketdock cache list|show|prune`: the step cache's entries
//! (docs/cache.md). What goes is `maintenance::cache_prune`'s decision.

use std::time::{Duration, SystemTime};

use super::Context;
use crate::cache::{CacheDir, Listed};
use crate::error::Error;
use crate::maintenance::cache_prune::{self, CacheRule};
use crate::size::ByteSize;
use crate::store::Store;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    pocketdock cache list\n  \
    pocketdock cache show 4c5714\n  \
    pocketdock cache prune --older-than 7d\n  \
    pocketdock cache prune --max-size 5g")]
pub struct Args {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Debug, clap::Subcommand)]
enum CacheCommand {
    /// List the cached step results, least recently hit first.
    List {
        /// Print JSON (one object per entry).
        #[arg(long)]
        json: bool,
    },
    /// Show one entry: its image, exit code, outputs, stdout and stderr.
    Show {
        /// The key, or enough of its start to name one entry.
        #[arg(value_name = "KEY")]
        key: String,
    },
    /// Remove entries (every one, or those not hit for AGE), their images
    /// and the blobs no entry names any more.
    Prune {
        /// Only entries not hit for this long: 30m, 12h, 7d, 2w.
        #[arg(long, value_name = "AGE", value_parser = super::age::parse_age)]
        older_than: Option<Duration>,
        /// Then remove least recently hit entries until the rest take at
        /// most SIZE (their images' own layers and blobs): 500m, 10g.
        #[arg(long, value_name = "SIZE")]
        max_size: Option<ByteSize>,
    },
}

/// Run `cache`; exit 1 when `show` names no single entry.
pub async fn run(ctx: &Context, args: &Args) -> Result<u8, Error> {
    let dir = CacheDir::at(Store::open(ctx.project()?).cache_dir());
    match &args.command {
        CacheCommand::List { json } => {
            let all = dir.entries();
            if *json {
                let v: Vec<_> = all.iter().map(entry_json).collect();
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else if all.is_empty() {
                println!("no cached step results");
            }
            for l in all.iter().filter(|_| !json) {
                let image = l.entry.image.as_deref().map_or("-", |i| short(i));
                println!(
                    "{}  {:<4}  {:>6}s ago  {:>10}  image {image}",
                    &l.key.hex()[..16],
                    l.entry.kind,
                    age(l),
                    ByteSize(l.entry.size).to_string()
                );
            }
            Ok(0)
        }
        CacheCommand::Show { key } => match &dir.find(key)[..] {
            [one] => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&entry_json(one)).unwrap_or_default()
                );
                Ok(0)
            }
            [] => {
                eprintln!("error: no cached step result has a key starting `{key}` (hint: `pocketdock cache list`)");
                Ok(1)
            }
            many => {
                eprintln!("error: `{key}` starts {} keys; give more of it", many.len());
                Ok(1)
            }
        },
        CacheCommand::Prune {
            older_than,
            max_size,
        } => {
            let rule = CacheRule {
                older_than: *older_than,
                max_size: max_size.map(ByteSize::bytes),
            };
            let chosen = cache_prune::select(&dir, rule, SystemTime::now());
            let backend = ctx.backend().await?;
            let mut done = cache_prune::remove(&backend, &dir, &chosen).await;
            if older_than.is_none() && max_size.is_none() {
                done.compiler_cache =
                    cache_prune::remove_compiler_cache(&backend, &ctx.project()?.name).await;
            }
            let left = cache_prune::size_of(&dir.entries(), |sha| {
                std::fs::metadata(dir.blob_path(sha)).map_or(0, |m| m.len())
            });
            println!(
                "removed {} entries, {} images, {} blobs{}; {} left",
                done.entries.len(),
                done.images,
                done.blobs,
                if done.compiler_cache {
                    ", the compiler cache volume"
                } else {
                    ""
                },
                ByteSize(left)
            );
            Ok(0)
        }
    }
}

fn entry_json(l: &Listed) -> serde_json::Value {
    let mut v = serde_json::to_value(&l.entry).unwrap_or_default();
    v["age_s"] = age(l).into();
    v
}

fn age(l: &Listed) -> u64 {
    SystemTime::now()
        .duration_since(l.last_hit)
        .unwrap_or_default()
        .as_secs()
}

fn short(image: &str) -> &str {
    let id = image.strip_prefix("sha256:").unwrap_or(image);
    &id[..id.len().min(12)]
}
