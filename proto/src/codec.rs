//! The MRI's gRPC codec: prost's, except that a message that does not decode is the caller's
//! mistake, INVALID_ARGUMENT, where tonic-prost answers INTERNAL (a server bug, by gRPC's codes).
//! The generated stubs use it (`codec_path` in `build.rs`); encoding is prost's unchanged.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstEncoder};

/// A [`Codec`] for prost messages whose decode errors are INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub struct MriCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for MriCodec<T, U> {
    fn default() -> Self {
        MriCodec {
            _types: PhantomData,
        }
    }
}

/// Decodes `U`; a malformed message is INVALID_ARGUMENT, naming the message type.
#[derive(Debug, Clone, Default)]
pub struct MriDecoder<U> {
    _type: PhantomData<U>,
}

impl<U: Message + Default> Decoder for MriDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(|e| {
            let name = std::any::type_name::<U>();
            let short = name.rsplit("::").next().unwrap_or(name);
            Status::invalid_argument(format!(
                "the {short} message is not valid protobuf for epcache.mri.v1: {e}"
            ))
        })
    }
}

impl<T, U> Codec for MriCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = MriDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        MriDecoder { _type: PhantomData }
    }
}
