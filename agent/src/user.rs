//! A run's user (`name`, `uid`, `name:group`, `uid:gid`, ...) resolved the way
//! `docker exec -u` resolves it: from the sandbox's own `/etc/passwd` and
//! `/etc/group`, parsed here (no NSS: the helper is static and must behave
//! the same in every image). A numeric uid needs no passwd entry (gid 0 and
//! HOME `/` then); supplementary groups come only with the implicit group.

use std::io::Read;

/// Files larger than this are not a real image's passwd or group.
const MAX_FILE: u64 = 4 << 20;

/// Who a command runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The uid.
    pub uid: u32,
    /// The primary gid.
    pub gid: u32,
    /// Supplementary gids.
    pub groups: Vec<u32>,
    /// HOME for the command.
    pub home: String,
}

/// Resolve `spec` against the sandbox's account files; the reason it
/// cannot be resolved otherwise.
pub fn resolve(spec: &str) -> Result<User, String> {
    resolve_in(spec, &read_small("/etc/passwd"), &read_small("/etc/group"))
}

/// [`resolve`] against the given file contents.
pub fn resolve_in(spec: &str, passwd: &str, group: &str) -> Result<User, String> {
    let (user_part, group_part) = match spec.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (spec, None),
    };
    if user_part.is_empty() {
        return Err(format!("user {spec:?}: empty user name"));
    }
    // A number is always a uid (it may still have an entry, for HOME).
    let entry = match user_part.parse::<u32>() {
        Ok(uid) => passwd_entries(passwd).find(|e| e.uid == uid),
        Err(_) => passwd_entries(passwd).find(|e| e.name == user_part),
    };
    let mut user = match (&entry, user_part.parse::<u32>()) {
        (Some(e), _) => User {
            uid: e.uid,
            gid: e.gid,
            groups: Vec::new(),
            home: e.home.to_string(),
        },
        (None, Ok(uid)) => User {
            uid,
            gid: 0,
            groups: Vec::new(),
            home: "/".into(),
        },
        (None, Err(_)) => return Err(format!("user {user_part:?} not found in /etc/passwd")),
    };
    match group_part {
        Some(g) => {
            user.gid = group_entries(group)
                .find(|e| e.name == g)
                .map(|e| e.gid)
                .or_else(|| g.parse().ok())
                .ok_or_else(|| format!("group {g:?} not found in /etc/group"))?;
        }
        None => {
            if let Some(e) = &entry {
                user.groups = group_entries(group)
                    .filter(|g| g.members.split(',').any(|m| m == e.name))
                    .map(|g| g.gid)
                    .collect();
            }
        }
    }
    Ok(user)
}

struct PasswdEntry<'a> {
    name: &'a str,
    uid: u32,
    gid: u32,
    home: &'a str,
}

struct GroupEntry<'a> {
    name: &'a str,
    gid: u32,
    members: &'a str,
}

/// Well-formed lines only: a broken line is skipped, as libc skips it.
fn passwd_entries(text: &str) -> impl Iterator<Item = PasswdEntry<'_>> {
    text.lines().filter_map(|line| {
        let mut f = line.split(':');
        let name = f.next()?;
        let _password = f.next()?;
        let uid = f.next()?.parse().ok()?;
        let gid = f.next()?.parse().ok()?;
        let _gecos = f.next();
        let home = f.next().unwrap_or("");
        (!name.is_empty() && !name.starts_with('#')).then_some(PasswdEntry {
            name,
            uid,
            gid,
            home,
        })
    })
}

fn group_entries(text: &str) -> impl Iterator<Item = GroupEntry<'_>> {
    text.lines().filter_map(|line| {
        let mut f = line.split(':');
        let name = f.next()?;
        let _password = f.next()?;
        let gid = f.next()?.parse().ok()?;
        let members = f.next().unwrap_or("");
        (!name.is_empty() && !name.starts_with('#')).then_some(GroupEntry { name, gid, members })
    })
}

/// A missing or unreadable file reads as empty (numeric users still work).
fn read_small(path: &str) -> String {
    let mut text = String::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(MAX_FILE).read_to_string(&mut text);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
        # a comment\n\
        broken line\n\
        app:x:1000:1000:App:/home/app:/bin/sh\n\
        nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
    const GROUP: &str = "root:x:0:\nwheel:x:10:root,app\napp:x:1000:\ndocker:x:999:app\n";

    fn user(spec: &str) -> Result<User, String> {
        resolve_in(spec, PASSWD, GROUP)
    }

    #[test]
    fn names_take_ids_home_and_groups_from_the_files() {
        assert_eq!(
            user("app").unwrap(),
            User {
                uid: 1000,
                gid: 1000,
                groups: vec![10, 999],
                home: "/home/app".into()
            }
        );
        let root = user("root").unwrap();
        assert_eq!((root.uid, root.gid, root.groups), (0, 0, vec![10]));
        // A uid with an entry is that entry.
        assert_eq!(user("1000").unwrap(), user("app").unwrap());
    }

    #[test]
    fn explicit_groups_replace_the_supplementary_ones() {
        let u = user("app:wheel").unwrap();
        assert_eq!((u.uid, u.gid, u.groups.len()), (1000, 10, 0));
        let u = user("1000:4242").unwrap();
        assert_eq!((u.uid, u.gid, u.home.as_str()), (1000, 4242, "/home/app"));
        let u = user("nobody:app").unwrap();
        assert_eq!((u.uid, u.gid), (65534, 1000));
    }

    #[test]
    fn numeric_users_without_entries_get_gid_0_and_root_home() {
        let u = user("4321").unwrap();
        assert_eq!(
            u,
            User {
                uid: 4321,
                gid: 0,
                groups: vec![],
                home: "/".into()
            }
        );
        assert_eq!(user("4321:7").unwrap().gid, 7);
        assert!(resolve_in("4321", "", "").is_ok());
    }

    #[test]
    fn unknown_names_are_errors() {
        assert!(user("ghost").unwrap_err().contains("ghost"));
        assert!(user("app:ghosts").unwrap_err().contains("/etc/group"));
        assert!(user("").is_err());
        assert!(user(":0").is_err());
        // "broken line" and the comment are not users.
        assert!(user("broken line").is_err());
        assert!(user("# a comment").is_err());
    }
}
