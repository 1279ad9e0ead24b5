//! Handing a terminal to a person through the library: `Sandbox::shell_on`
//! and `Session::interactive_on` over in-memory streams (the real-terminal
//! path is `pocketdock shell`, tested through tmux in `shell`).

use std::time::Duration;

use pocketdock::{Handback, SessionOptions, ShellOptions, DETACH_KEY};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{sandbox, spec, Cleanup};

#[tokio::test]
async fn shell_on_runs_what_is_typed_and_returns_the_exit_code() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("shell-on")).await;
    let mut shown = Vec::new();
    let code = sb
        .sessions()
        .shell_on(
            &ShellOptions::default(),
            &b"echo typed-$((6*7)); tput cols; exit 3\n"[..],
            &mut shown,
        )
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&shown);
    assert_eq!(code, 3, "{shown}");
    assert!(shown.contains("typed-42"), "{shown}");
    assert!(shown.contains("\n80"), "a 80-column terminal: {shown}");

    // One string runs through `sh -c`; end of input ends `cat` as Ctrl-D would.
    let mut shown = Vec::new();
    let opts = ShellOptions {
        command: vec!["cat; echo after-eof; exit 7".into()],
        ..ShellOptions::default()
    };
    let code = sb
        .sessions()
        .shell_on(&opts, &b"fed\n"[..], &mut shown)
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&shown);
    assert_eq!(code, 7, "{shown}");
    assert!(
        shown.contains("fed") && shown.contains("after-eof"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_person_takes_a_session_over_and_hands_it_back_with_its_state() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("interactive")).await;
    let session = sb
        .session(SessionOptions {
            tty: true,
            ..SessionOptions::default()
        })
        .await
        .unwrap();
    session
        .send_and_wait("X=41", Duration::from_secs(10))
        .await
        .unwrap();

    let (mut keys, keys_in) = tokio::io::duplex(1024);
    let (screen_out, mut screen) = tokio::io::duplex(1 << 16);
    let s = session.clone();
    let person = tokio::spawn(async move { s.interactive_on(keys_in, screen_out).await });
    keys.write_all(b"echo got-$((X+1))\n").await.unwrap();
    let mut seen = Vec::new();
    let saw = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("got-42") {
            let n = screen.read(&mut buf).await.unwrap();
            assert!(n > 0, "the screen closed");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(saw.is_ok(), "{}", String::from_utf8_lossy(&seen));
    keys.write_all(&[DETACH_KEY]).await.unwrap();
    let back = person.await.unwrap().unwrap();
    assert_eq!(back, Handback::Detached);

    // The program has the shell again, state and all.
    let r = session
        .send_and_wait("echo still-$X", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0);
    assert!(r.stdout.contains("still-41"), "{r:?}");

    // A person who exits the shell ends the session.
    let mut screen = Vec::new();
    let back = session
        .interactive_on(&b"exit 5\n"[..], &mut screen)
        .await
        .unwrap();
    assert_eq!(back, Handback::Ended(Some(5)));
    assert!(!session.is_alive());
}
