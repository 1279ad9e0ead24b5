//! The key's properties: what must not change it, and what must.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use super::*;
use crate::cache::{content_digest, SecretKey};

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn step() -> StepKeyInput {
    StepKeyInput {
        prev: Some(Key([7; 32])),
        kind: "run".into(),
        fields: pairs(&[("cmd", "make"), ("lang", "sh"), ("cwd", "/src")]),
        env: pairs(&[("A", "1"), ("B", "2")]),
        ..StepKeyInput::default()
    }
}

/// A small tree: a file, an executable, a directory and a symlink.
fn tree(root: &Path) {
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("main.c"), "int main(){}").unwrap();
    fs::write(root.join("src/run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("src/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("main.c", root.join("link")).unwrap();
}

fn two_trees() -> (tempfile::TempDir, tempfile::TempDir) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    tree(&a.path().join("proj"));
    tree(&b.path().join("elsewhere/proj"));
    (a, b)
}

#[test]
fn key_is_64_hex_digits_and_round_trips() {
    let k = step().key();
    assert_eq!(k.hex().len(), 64);
    assert_eq!(Key::from_hex(&k.hex()), Some(k));
    assert_eq!(Key::from_hex("xyz"), None);
}

#[test]
fn map_order_does_not_change_the_key() {
    let mut s = step();
    s.env.reverse();
    s.fields.reverse();
    assert_eq!(s.key(), step().key());
    let env = pairs(&[("X", "1"), ("Y", "2")]);
    let rev: Vec<_> = env.iter().rev().cloned().collect();
    let base = |env| {
        BaseState {
            image_digest: "sha256:a",
            env,
            ..BaseState::default()
        }
        .key()
    };
    assert_eq!(base(&env), base(&rev));
}

#[test]
fn command_env_and_previous_state_change_the_key() {
    let k = step().key();
    let mut s = step();
    s.fields[0].1 = "make all".into();
    assert_ne!(s.key(), k);
    let mut s = step();
    s.env[0].1 = "2".into();
    assert_ne!(s.key(), k);
    let mut s = step();
    s.prev = Some(Key([8; 32]));
    assert_ne!(s.key(), k);
    let mut s = step();
    s.extra.push("toolchain-13".into());
    assert_ne!(s.key(), k);
}

#[test]
fn fields_cannot_be_shifted_into_each_other() {
    let mut a = step();
    a.fields = pairs(&[("cmd", "ab"), ("cwd", "c")]);
    let mut b = step();
    b.fields = pairs(&[("cmd", "a"), ("cwd", "bc")]);
    assert_ne!(a.key(), b.key());
}

#[test]
fn image_digest_user_and_workdir_change_the_base_state() {
    let env = pairs(&[("A", "1")]);
    let b = BaseState {
        image_digest: "sha256:a",
        user: None,
        workdir: None,
        env: &env,
    };
    let k = b.key();
    assert_ne!(
        BaseState {
            image_digest: "sha256:b",
            ..b.clone()
        }
        .key(),
        k
    );
    assert_ne!(
        BaseState {
            user: Some("root"),
            ..b.clone()
        }
        .key(),
        k
    );
    assert_ne!(
        BaseState {
            workdir: Some("/w"),
            ..b.clone()
        }
        .key(),
        k
    );
    // An unset user is not the empty one.
    assert_ne!(
        BaseState {
            user: Some(""),
            ..b.clone()
        }
        .key(),
        k
    );
}

#[test]
fn project_path_and_mtime_do_not_change_the_content_digest() {
    let (a, b) = two_trees();
    let pa = a.path().join("proj");
    let pb = b.path().join("elsewhere/proj");
    let old = fs::File::options()
        .write(true)
        .open(pb.join("main.c"))
        .unwrap();
    old.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(content_digest(&pa).unwrap(), content_digest(&pb).unwrap());
}

#[test]
fn content_mode_and_symlink_target_change_the_content_digest() {
    let (a, _) = two_trees();
    let p = a.path().join("proj");
    let k = content_digest(&p).unwrap();
    fs::write(p.join("main.c"), "int main(){return 1;}").unwrap();
    let k2 = content_digest(&p).unwrap();
    assert_ne!(k2, k);
    fs::set_permissions(p.join("main.c"), fs::Permissions::from_mode(0o600)).unwrap();
    let k3 = content_digest(&p).unwrap();
    assert_ne!(k3, k2);
    fs::remove_file(p.join("link")).unwrap();
    symlink("src/run.sh", p.join("link")).unwrap();
    assert_ne!(content_digest(&p).unwrap(), k3);
}

#[test]
fn a_renamed_file_changes_the_content_digest() {
    let (a, _) = two_trees();
    let p = a.path().join("proj");
    let k = content_digest(&p).unwrap();
    fs::rename(p.join("main.c"), p.join("main2.c")).unwrap();
    assert_ne!(content_digest(&p).unwrap(), k);
}

#[test]
fn secret_value_changes_the_key_and_is_not_in_it() {
    let sk = SecretKey::from_bytes([3; 32]);
    let with = |v: &str| {
        let mut s = step();
        s.secrets = vec![("TOKEN".into(), sk.mac("TOKEN", v))];
        s.key()
    };
    assert_eq!(with("hunter2"), with("hunter2"));
    assert_ne!(with("hunter2"), with("hunter3"));
    // Another project's key gives another MAC for the same value.
    let other = SecretKey::from_bytes([4; 32]);
    assert_ne!(sk.mac("TOKEN", "hunter2"), other.mac("TOKEN", "hunter2"));
    assert!(!format!("{sk:?}").contains('3'));
}

#[test]
fn the_secret_key_file_is_0600_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache/secret.key");
    let a = SecretKey::load_or_create(&path).unwrap();
    let b = SecretKey::load_or_create(&path).unwrap();
    assert_eq!(a.mac("x", "y"), b.mac("x", "y"));
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    assert!(SecretKey::load_or_create(&path).is_err());
}
