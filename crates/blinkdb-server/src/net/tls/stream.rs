//! A TLS session over a socket, served by the same connection code as a plain
//! one (`socket::Socket`). tokio-rustls does the handshakes; the session is
//! then driven here, because the connection code waits on the socket's
//! readiness and writes without awaiting, which needs two things tokio-rustls'
//! stream does not give:
//! - readiness: plaintext the session already decrypted makes it readable
//!   although the socket has nothing more. Only once a read found nothing
//!   (the session asked the socket for more, and the socket had none) does
//!   waiting on the socket's readiness mean waiting for the client.
//! - output: a write hands plaintext to the session, which may not get all of
//!   its records out at once. What is left goes out before the next write is
//!   taken, and whenever the connection waits (`poll_read_ready`), so a reply
//!   never sits in the session while the connection waits for the client.

use crate::net::socket::Socket;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct TlsSocket<IO> {
    io: IO,
    conn: rustls::Connection,
    /// The last read found nothing decrypted and the socket empty: only the
    /// socket's readiness can bring more.
    drained: bool,
    /// Decrypted bytes waiting in the session (as the last
    /// `process_new_packets` counted them, less what was read since).
    plaintext: usize,
}

impl<IO: AsyncRead + AsyncWrite + Unpin> TlsSocket<IO> {
    /// A session whose handshake is done (or under way: reads and writes
    /// drive it on).
    pub fn new(io: IO, conn: impl Into<rustls::Connection>) -> Self {
        let mut conn = conn.into();
        // What the peer sent right after its handshake may already be
        // decrypted in the session: counted, it is read before the socket.
        let plaintext = conn
            .process_new_packets()
            .map_or(0, |s| s.plaintext_bytes_to_read());
        TlsSocket {
            io,
            conn,
            drained: false,
            plaintext,
        }
    }

    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// The socket and the session, to move them to another thread's
    /// runtime (`new` takes them back).
    pub fn into_parts(self) -> (IO, rustls::Connection) {
        (self.io, self.conn)
    }

    /// Writes the session's pending records; Ready(Ok) once none is left.
    fn poll_send_records(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.conn.wants_write() {
            let mut w = Adapter {
                io: &mut self.io,
                cx,
            };
            match self.conn.write_tls(&mut w) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Reads records from the socket into the session and decrypts them.
    /// Ready(Ok(false)) at the socket's end.
    fn poll_receive_records(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        let mut r = Adapter {
            io: &mut self.io,
            cx,
        };
        let n = match self.conn.read_tls(&mut r) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match self.conn.process_new_packets() {
            Ok(state) => self.plaintext = state.plaintext_bytes_to_read(),
            Err(e) => {
                // The alert rustls queued tells the peer why, if it can go now.
                let _ = self.poll_send_records(cx);
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
            }
        }
        // Handshake messages after the handshake (key updates, tickets)
        // may want an answer; it goes with the next write if not now.
        if let Poll::Ready(Err(e)) = self.poll_send_records(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n > 0))
    }
}

/// The session's blocking-style reads and writes over a polled socket:
/// Pending becomes WouldBlock (the waker is registered meanwhile).
struct Adapter<'a, 'b, IO> {
    io: &'a mut IO,
    cx: &'a mut Context<'b>,
}

impl<IO: AsyncRead + Unpin> Read for Adapter<'_, '_, IO> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut buf = ReadBuf::new(buf);
        match Pin::new(&mut *self.io).poll_read(self.cx, &mut buf) {
            Poll::Ready(Ok(())) => Ok(buf.filled().len()),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl<IO: AsyncWrite + Unpin> Write for Adapter<'_, '_, IO> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write(self.cx, buf) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write_vectored(self.cx, bufs) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsSocket<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.plaintext > 0 {
                // Only what is there is zeroed, not the whole read buffer.
                let want = this.plaintext.min(buf.remaining());
                let dst = buf.initialize_unfilled_to(want);
                match this.conn.reader().read(dst) {
                    Ok(n) => {
                        this.plaintext -= n;
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => this.plaintext = 0,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            match this.poll_receive_records(cx) {
                Poll::Pending => {
                    this.drained = true;
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(true)) => {}
                Poll::Ready(Ok(false)) => {
                    // The socket's end: a clean one (close_notify) reads as
                    // 0 bytes, a truncated session as an error.
                    return match this.conn.reader().read(&mut []) {
                        Ok(_) => Poll::Ready(Ok(())),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Ready(Ok(())),
                        Err(e) => Poll::Ready(Err(e)),
                    };
                }
            }
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsSocket<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Records of earlier writes go first: the session takes no more
        // while the socket is full (the output queue keeps it then).
        ready!(this.poll_send_records(cx))?;
        let n = this.conn.writer().write_vectored(bufs)?;
        if let Poll::Ready(Err(e)) = this.poll_send_records(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send_records(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.conn.wants_write() {
            this.conn.send_close_notify();
        }
        ready!(this.poll_send_records(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

impl<IO: Socket> std::os::fd::AsRawFd for TlsSocket<IO> {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.io.as_raw_fd()
    }
}

impl<IO: Socket> Socket for TlsSocket<IO> {
    fn is_tls(&self) -> bool {
        true
    }

    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Records still to send go out as the socket takes them: the waker
        // is registered for that too.
        if let Poll::Ready(Err(e)) = self.poll_send_records(cx) {
            return Poll::Ready(Err(e));
        }
        if !self.drained || self.plaintext > 0 {
            return Poll::Ready(Ok(()));
        }
        ready!(self.io.poll_read_ready(cx))?;
        self.drained = false;
        Poll::Ready(Ok(()))
    }

    fn into_handoff(self) -> io::Result<crate::net::io_threads::Handoff> {
        // A session is served where its handshake ran (a connection thread):
        // network.rs never moves one.
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a TLS session stays on its thread",
        ))
    }
}
