//! The tools' side of epcache; the gRPC client arrives with the MRI service, the `epcache` binary lives in `src/bin/epcache`.

#![forbid(unsafe_code)]
