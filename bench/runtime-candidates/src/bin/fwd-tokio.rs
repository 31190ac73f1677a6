//! Candidate (a): one tokio `current_thread` runtime per worker.
//!
//! One task per client connection (spawn_local, no Send bound, no work
//! stealing). The task connects to the backend and runs both copy directions
//! concurrently inside the same task with `try_join!` over borrowed halves, so
//! there is no Arc and no second task. Buffers come from a thread-local pool.

use std::cell::RefCell;
use std::io;

use runtime_candidates::{args, reuseport_listener, BufPool};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};

thread_local! {
    static POOL: RefCell<BufPool> = RefCell::new(BufPool::default());
}

/// Buffer borrowed from the thread-local pool, returned on drop.
struct PooledBuf(Option<Box<[u8]>>);

impl PooledBuf {
    fn take() -> Self {
        PooledBuf(Some(POOL.with(|p| p.borrow_mut().get())))
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            POOL.with(|p| p.borrow_mut().put(b));
        }
    }
}

/// Copy src -> dst until EOF, then half-close dst.
async fn pump(mut src: ReadHalf<'_>, mut dst: WriteHalf<'_>) -> io::Result<()> {
    let mut guard = PooledBuf::take();
    let buf = guard.0.as_mut().unwrap();
    loop {
        let n = src.read(buf).await?;
        if n == 0 {
            // EOF from src: forward as FIN (shutdown(SHUT_WR)) to dst.
            dst.shutdown().await?;
            return Ok(());
        }
        dst.write_all(&buf[..n]).await?;
    }
}

async fn serve(mut client: TcpStream, backend_addr: std::net::SocketAddrV4) -> io::Result<()> {
    let mut backend = TcpStream::connect(backend_addr).await?;
    backend.set_nodelay(true)?;
    let (cr, cw) = client.split();
    let (br, bw) = backend.split();
    // Either direction failing tears down the whole connection (both sockets
    // are dropped when this function returns).
    tokio::try_join!(pump(cr, bw), pump(br, cw))?;
    Ok(())
}

fn main() -> io::Result<()> {
    let a = args();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let std_l = reuseport_listener(&a.listen, true)?;
        let listener = TcpListener::from_std(std_l)?;
        let backend = a.backend;
        loop {
            let (client, _) = match listener.accept().await {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE/ENFILE/ECONNABORTED: keep serving.
                    eprintln!("accept: {e}");
                    tokio::task::yield_now().await;
                    continue;
                }
            };
            let _ = client.set_nodelay(true);
            tokio::task::spawn_local(async move {
                let _ = serve(client, backend).await;
            });
        }
    })
}
