//! The Monitoring Request Interface (MRI), package `epcache.mri.v1`: messages, the `Mri` gRPC
//! service's client and server stubs, generated from `proto/epcache/mri/v1/mri.proto`.
//!
//! This crate holds no logic: conversions from the monitor's types live with the daemon, the
//! typed client with `epcache-client`.

#![forbid(unsafe_code)]

pub mod codec;

/// Version 1 of the MRI: the messages, `mri_client::MriClient` and `mri_server::{Mri, MriServer}`.
#[allow(missing_docs, unreachable_pub, clippy::all)]
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/epcache.mri.v1.rs"));
}

/// The encoded `FileDescriptorSet` of the package, for gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/mri_descriptor.bin"));

#[cfg(test)]
mod tests {
    use prost::Message;
    use prost_types::FileDescriptorSet;

    use super::*;

    fn package() -> prost_types::FileDescriptorProto {
        let fds = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("descriptor set decodes");
        fds.file
            .into_iter()
            .find(|f| f.package() == "epcache.mri.v1")
            .expect("package epcache.mri.v1 is in the descriptor set")
    }

    #[test]
    fn every_message_field_and_enum_is_documented() {
        // Paths in SourceCodeInfo: [4, i] is message i, [4, i, 2, j] its field j, [5, i] enum i.
        let file = package();
        let info = file
            .source_code_info
            .clone()
            .expect("compiled with source info");
        let documented: std::collections::HashSet<Vec<i32>> = info
            .location
            .iter()
            .filter(|l| !l.leading_comments().trim().is_empty())
            .map(|l| l.path.clone())
            .collect();
        let mut missing = Vec::new();
        for (i, m) in file.message_type.iter().enumerate() {
            if !documented.contains(&vec![4, i as i32]) {
                missing.push(m.name().to_owned());
            }
            for (j, f) in m.field.iter().enumerate() {
                if !documented.contains(&vec![4, i as i32, 2, j as i32]) {
                    missing.push(format!("{}.{}", m.name(), f.name()));
                }
            }
        }
        for (i, e) in file.enum_type.iter().enumerate() {
            if !documented.contains(&vec![5, i as i32]) {
                missing.push(e.name().to_owned());
            }
            // [5, i, 2, j] is value j of enum i.
            for (j, v) in e.value.iter().enumerate() {
                if !documented.contains(&vec![5, i as i32, 2, j as i32]) {
                    missing.push(format!("{}.{}", e.name(), v.name()));
                }
            }
        }
        // [4, i, 8, k] is oneof k of message i; an `optional` field's synthetic oneof has no
        // place in the source to document (the field's comment documents it).
        for (i, m) in file.message_type.iter().enumerate() {
            for (k, o) in m.oneof_decl.iter().enumerate() {
                let synthetic = m
                    .field
                    .iter()
                    .any(|f| f.oneof_index == Some(k as i32) && f.proto3_optional());
                if !synthetic && !documented.contains(&vec![4, i as i32, 8, k as i32]) {
                    missing.push(format!("{}.{} (oneof)", m.name(), o.name()));
                }
            }
        }
        // [6, i] is service i, [6, i, 2, j] its method j.
        assert!(!file.service.is_empty(), "the package declares its service");
        for (i, s) in file.service.iter().enumerate() {
            if !documented.contains(&vec![6, i as i32]) {
                missing.push(s.name().to_owned());
            }
            for (j, rpc) in s.method.iter().enumerate() {
                if !documented.contains(&vec![6, i as i32, 2, j as i32]) {
                    missing.push(format!("{}.{}", s.name(), rpc.name()));
                }
            }
        }
        assert!(missing.is_empty(), "undocumented in mri.proto: {missing:?}");
    }

    #[test]
    fn messages_round_trip_through_the_wire_format() {
        let model = v1::CacheModel {
            spec: "D1=32768,2,32".into(),
            levels: vec![v1::CacheLevel {
                name: "D1".into(),
                size_bytes: 32768,
                associativity: 2,
                line_size: 32,
                replacement: v1::Replacement::Lru as i32,
                write_policy: v1::WritePolicy::WriteBack as i32,
                ..Default::default()
            }],
            counters: 64,
            counter_bits: 32,
            cores: 2,
        };
        let bytes = model.encode_to_vec();
        assert_eq!(v1::CacheModel::decode(bytes.as_slice()).unwrap(), model);
    }
}
