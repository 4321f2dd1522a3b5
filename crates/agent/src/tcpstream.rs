//! The byte stream of a TCP connection: plain, or TLS 1.3 over it (`--tls`, rustls over
//! the blocking socket). The transfer code reads and writes through this and never needs
//! to know which; TCP_INFO is still read from the underlying socket.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

use rustls::{ClientConnection, ServerConnection, StreamOwned};

use crate::{sys, tls};

pub enum Stream {
    Plain(TcpStream),
    TlsClient(Box<StreamOwned<ClientConnection, TcpStream>>),
    TlsServer(Box<StreamOwned<ServerConnection, TcpStream>>),
}

/// The handshake was interrupted by a stop request.
pub struct Stopped;

impl Stream {
    /// Runs the client side of a TLS handshake on a connected socket (whose 100 ms
    /// timeouts let it notice a stop request).
    pub fn tls_client(sock: TcpStream) -> anyhow::Result<Result<Stream, Stopped>> {
        let cfg = std::sync::Arc::new(tls::client_config()?);
        let mut conn = ClientConnection::new(cfg, tls::server_name())?;
        conn.set_buffer_limit(None);
        let mut s = StreamOwned::new(conn, sock);
        if handshake(&mut s.conn, &mut s.sock)?.is_err() {
            return Ok(Err(Stopped));
        }
        Ok(Ok(Stream::TlsClient(Box::new(s))))
    }

    pub fn tls_server(
        sock: TcpStream,
        cfg: std::sync::Arc<rustls::ServerConfig>,
    ) -> anyhow::Result<Result<Stream, Stopped>> {
        let mut conn = ServerConnection::new(cfg)?;
        // The transfer code bounds its own writes (128 KiB); with a limit rustls would
        // accept 0 bytes while its buffer is full, which reads like a closed connection.
        conn.set_buffer_limit(None);
        let mut s = StreamOwned::new(conn, sock);
        if handshake(&mut s.conn, &mut s.sock)?.is_err() {
            return Ok(Err(Stopped));
        }
        Ok(Ok(Stream::TlsServer(Box::new(s))))
    }

    pub fn is_tls(&self) -> bool {
        !matches!(self, Stream::Plain(_))
    }

    /// Ends our direction: with TLS a close_notify alert first (so the peer's read sees a
    /// clean end of data), then the TCP FIN.
    pub fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.shutdown(Shutdown::Write),
            Stream::TlsClient(s) => {
                s.conn.send_close_notify();
                flush_tls(&mut s.conn, &mut s.sock)?;
                s.sock.shutdown(Shutdown::Write)
            }
            Stream::TlsServer(s) => {
                s.conn.send_close_notify();
                flush_tls(&mut s.conn, &mut s.sock)?;
                s.sock.shutdown(Shutdown::Write)
            }
        }
    }
}

fn handshake<C, D>(conn: &mut C, sock: &mut TcpStream) -> io::Result<Result<(), Stopped>>
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>,
    D: rustls::SideData,
{
    while conn.is_handshaking() {
        if sys::stop_requested() {
            return Ok(Err(Stopped));
        }
        match conn.complete_io(sock) {
            Ok(_) => {}
            Err(e) if sys::is_retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Ok(()))
}

fn flush_tls<C, D>(conn: &mut C, sock: &mut TcpStream) -> io::Result<()>
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>,
    D: rustls::SideData,
{
    while conn.wants_write() {
        if sys::stop_requested() {
            return Ok(());
        }
        match conn.write_tls(sock) {
            Ok(_) => {}
            Err(e) if sys::is_retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::TlsClient(s) => s.read(buf),
            Stream::TlsServer(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::TlsClient(s) => s.write(buf),
            Stream::TlsServer(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::TlsClient(s) => s.flush(),
            Stream::TlsServer(s) => s.flush(),
        }
    }
}
