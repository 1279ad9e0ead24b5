//! `apply --resume`: the resumed job's arguments put back in place of the
//! command line's.

use crate::job::CacheSwitch;
use crate::manifest::LoadOptions;
use crate::store::Applied;

/// Set `load`, `env_vars` and `only` as `applied` records them; the cache
/// switch the job ran with.
pub(super) fn apply_as(
    applied: &Applied,
    load: &mut LoadOptions,
    env_vars: &mut Vec<String>,
    only: &mut Vec<String>,
) -> CacheSwitch {
    load.vars.clone_from(&applied.vars);
    load.vars_file = applied.vars_file.as_ref().map(Into::into);
    env_vars.clone_from(&applied.env_vars);
    only.clone_from(&applied.only);
    match applied.cache_switch.as_str() {
        "on" => CacheSwitch::On,
        "off" => CacheSwitch::Off,
        _ => CacheSwitch::Manifest,
    }
}
