//! A static file server on 127.0.0.1 for download tests: `GET <prefix>/<name>`
//! answers the file `<root>/<name>`, anything else 404. It stops (and its
//! thread ends) when dropped. Shared with tests/rehearsal.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The running server.
pub struct Loopback {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Serve the files directly in `root` under the URL path `prefix` (e.g. `""`
    /// or `/owner/repo/releases/download/v1.0.0`).
    pub fn serve(root: &Path, prefix: &str) -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let (root, prefix, flag) = (root.to_path_buf(), prefix.to_string(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    answer(conn, &root, &prefix);
                }
            }
        });
        Loopback {
            url: format!("http://127.0.0.1:{port}"),
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The file a request path names: a plain name under `prefix`, nothing else.
fn file_for(root: &Path, prefix: &str, path: &str) -> Option<PathBuf> {
    let name = path.strip_prefix(prefix)?.strip_prefix('/')?;
    let plain = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
    plain.then(|| root.join(name)).filter(|p| p.is_file())
}

fn answer(mut conn: TcpStream, root: &Path, prefix: &str) {
    let mut request = String::new();
    let mut reader = BufReader::new(&conn);
    if reader.read_line(&mut request).is_err() {
        return;
    }
    // The headers are read and ignored.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let reply = match file_for(root, prefix, path).and_then(|p| std::fs::read(p).ok()) {
        Some(body) => [
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes(),
            body,
        ]
        .concat(),
        None => {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n"
                .to_vec()
        }
    };
    let _ = conn.write_all(&reply);
    let _ = conn.shutdown(Shutdown::Write);
}
