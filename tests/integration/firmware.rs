//! Firmware with no board and no network (issue 43): `uses: esp32` with
//! `chip: esp32c3` builds `examples/esp32-c3` offline into a flash image
//! for its chip, and `cache: true` serves every step of an ESP32-C3 and
//! an STM32 job whose manifests say nothing about the network (the
//! `embedded` profile has it on by default).

use std::path::Path;

use crate::cache::{apply, with_status, CacheImages};
use crate::common::{copy_dir, repo, TestProject};

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// esptool's image header: the magic (byte 0) and, in the extended
/// header, the chip id (bytes 12-13, little-endian).
fn magic_and_chip(image: &[u8]) -> (u8, u16) {
    assert!(image.len() > 24, "{} bytes", image.len());
    (image[0], u16::from_le_bytes([image[12], image[13]]))
}

/// The ELF header's machine (e_machine, bytes 18-19).
fn elf_machine(elf: &[u8]) -> u16 {
    assert!(elf.starts_with(b"\x7fELF"), "not an ELF");
    u16::from_le_bytes([elf[18], elf[19]])
}

#[tokio::test]
async fn the_esp32_c3_example_builds_offline_and_applies_again_from_the_cache() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "esp32c3");
    let _images = CacheImages::new(&engine, &dir);
    copy_dir(&repo().join("examples/esp32-c3"), dir.path());

    let first = apply(&dir, &[]);
    assert_eq!(with_status(&first, "succeeded").len(), 3, "{first:?}");
    let image = read(&dir.path().join("out/firmware.bin"));
    // 0xE9 is an ESP image; 5 is the ESP32-C3's chip id.
    assert_eq!(magic_and_chip(&image), (0xE9, 5));
    // EM_RISCV.
    assert_eq!(
        elf_machine(&read(&dir.path().join("out/firmware.elf"))),
        243
    );

    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let second = apply(&dir, &[]);
    assert_eq!(with_status(&second, "cached").len(), 3, "{second:?}");
    assert_eq!(read(&dir.path().join("out/firmware.bin")), image);

    // A prune of everything takes the project's compiler cache volume too.
    dir.pd()
        .args(["cache", "prune"])
        .code(0)
        .stdout_has(", the compiler cache volume;");
}

/// `uses: stm32` on the `embedded` profile, as a user writes it first:
/// `cache: true` and no `network:` key.
const STM32: &str = r"version: 1
cache: true
sandboxes:
  fw:
    profile: embedded
    build: auto
steps:
  fw:
    uses: stm32
    with: { src: board, target: build, out: out }
";

#[tokio::test]
async fn an_stm32_job_that_says_nothing_of_the_network_is_cached() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "stm32cache");
    let _images = CacheImages::new(&engine, &dir);
    copy_dir(
        &repo().join("examples/stm32/boards/hello"),
        &dir.path().join("board"),
    );
    std::fs::write(dir.path().join("job.yaml"), STM32).unwrap();

    let started = std::time::Instant::now();
    let first = apply(&dir, &[]);
    let cold = started.elapsed();
    assert_eq!(with_status(&first, "succeeded").len(), 3, "{first:?}");
    let bin = read(&dir.path().join("out/firmware.bin"));

    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let started = std::time::Instant::now();
    let second = apply(&dir, &[]);
    let warm = started.elapsed();
    assert_eq!(with_status(&second, "cached").len(), 3, "{second:?}");
    assert_eq!(read(&dir.path().join("out/firmware.bin")), bin);
    eprintln!("stm32: first apply {cold:?}, second (cached) {warm:?}");
}
