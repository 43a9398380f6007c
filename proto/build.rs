//! Compiles the MRI protobuf package and its gRPC service in pure Rust (protox), so no protoc is needed.

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // protox and compile_fds do not announce their inputs; without this cargo would not rebuild
    // after an edit to a .proto file.
    println!("cargo:rerun-if-changed=proto");
    let mut compiler = protox::Compiler::new(["proto"])?;
    // Source info carries the comments, which become the generated code's doc comments.
    compiler.include_source_info(true);
    compiler.open_files(["epcache/mri/v1/mri.proto"])?;
    let fds = compiler.file_descriptor_set();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    // compile_fds ignores file_descriptor_set_path, so the descriptor set that gRPC reflection
    // serves is written by hand.
    std::fs::write(out.join("mri_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        // The generated `connect` helpers need tonic's transport; the client crate builds its own
        // channel (TCP or Unix socket), so the proto crate stays free of it.
        .build_transport(false)
        // A request that does not decode is INVALID_ARGUMENT, not tonic-prost's INTERNAL.
        .codec_path("crate::codec::MriCodec")
        .compile_fds(fds)?;
    Ok(())
}
