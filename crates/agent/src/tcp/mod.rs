//! tcp-server and tcp-client: bulk upload/download, sequential objects and paced records
//! (received ordered, or unordered through a packet tap) over kernel TCP, with TCP_INFO
//! sampled in a background thread.
//!
//! Everything here is blocking: one thread per connection, and every blocking call times
//! out every [`POLL`] so a stop request is noticed (see `transfer`).

mod client;
mod page;
pub(crate) mod records;
mod sampler;
mod segment;
mod series;
mod server;
mod tap;
mod transfer;

use std::time::Duration;

pub use client::client;
pub use page::PageFraming;
pub use records::Delivery;
pub use server::server;

/// Size of every read and write on bulk paths.
const BUF_LEN: usize = 128 * 1024;
/// Blocking calls time out this often to check the stop flag.
const POLL: Duration = Duration::from_millis(100);
